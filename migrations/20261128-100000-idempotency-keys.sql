-- Idempotency keys: the first answer of a user's write sent with an
-- Idempotency-Key header, replayed to a repeat of it for 24 hours. The
-- primary key decides which of two requests with one key runs: the one whose
-- insert wins. A row is `running` while its request runs (`claim` names that
-- run; `touched_at` moves while it lasts) and `done` once its answer is kept,
-- encrypted (`answer`: body, ETag, Location and content type).
create table idempotency_keys (
  user_id integer not null references users (id) on delete cascade,
  key text not null check (char_length(key) between 1 and 255),
  method text not null,
  path text not null,
  fingerprint text not null,
  claim uuid not null,
  state text not null check (state in ('running', 'done')),
  status integer check (status between 100 and 599),
  answer bytea,
  created_at timestamptz not null default now(),
  touched_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (user_id, key),
  check ((state = 'done') = (status is not null and answer is not null))
);
create index idempotency_keys_expiry_idx on idempotency_keys (expires_at);
