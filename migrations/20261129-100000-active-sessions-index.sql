-- The admin statistics count the active sessions of sign-ins, not personal
-- access tokens: the index of active sessions leaves the tokens out, so that
-- the count is read from the index alone instead of every session's row.
drop index sessions_active_idx;
create index sessions_active_idx on sessions (expires_at) where revoked_at is null and token_hash is null;
