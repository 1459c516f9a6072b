-- Personal access tokens: long-lived bearer tokens for scripts and home
-- automation. A token is a session of its own, so that every check of a
-- session (revoked, expired, its user disabled), which each request reads in
-- the statement that decides it, holds for the token too. Only the token's
-- hash is kept. A token without an expiry expires at 'infinity'.
alter table sessions
  add column token_hash text unique,
  add column token_name varchar(100),
  add column token_scope text check (token_scope in ('read', 'write')),
  -- A token bound to a family sees that family alone, and goes with it.
  add column token_family_id integer references families (id) on delete cascade,
  add constraint sessions_token_check check (
    (token_hash is null) = (token_name is null) and (token_hash is null) = (token_scope is null)
    and (token_family_id is null or token_hash is not null)
  );
create index sessions_token_user_idx on sessions (user_id, id) where token_hash is not null;
