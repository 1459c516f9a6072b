-- Share links: SMART Health Links to a snapshot of a child's record, for a
-- doctor. The record is encrypted with the link's key when the link is made,
-- and only the encrypted file (a compact JWE) is kept: the key is in the link
-- alone, never here. Only the hash of the manifest's token is kept.
-- Shares are not health records of the child: no version, no change.
create table shares (
  id serial primary key,
  child_id integer not null references children (id) on delete cascade,
  created_by integer references users (id) on delete set null,
  label text not null,
  sections text[] not null,
  token_hash text not null unique,
  passcode_hash text,
  -- Passcode checks the link may still start: 10 less the wrong passcodes
  -- given and the checks in flight, so that checks at once cannot pass 10.
  attempts_left integer not null default 10 check (attempts_left between 0 and 10),
  wrong_passcodes integer not null default 0 check (wrong_passcodes between 0 and 10),
  expires_at timestamptz not null,
  revoked_at timestamptz,
  -- When the tenth wrong passcode was given: the link is dead from then on.
  locked_at timestamptz,
  -- The encrypted file; null once the link has ended, whatever ended it.
  content text,
  content_length integer not null,
  created_at timestamptz not null default now()
);
create index shares_child_idx on shares (child_id, created_at, id);
create index shares_live_idx on shares (expires_at) where content is not null;

-- Every manifest request of a link, served or refused: for want of the
-- passcode, for a wrong one, while its last checks were in flight (busy),
-- or because the link had ended.
create table share_accesses (
  id bigserial primary key,
  share_id integer not null references shares (id) on delete cascade,
  at timestamptz not null default now(),
  recipient text not null,
  address text,
  outcome text not null check (outcome in ('served', 'passcode-missing', 'passcode-wrong', 'busy', 'refused'))
);
create index share_accesses_share_idx on share_accesses (share_id, at desc, id desc);

-- The short-lived addresses of a manifest's files (`location`), each for one
-- download within an hour; only the hash of each is kept.
create table share_file_links (
  token_hash text primary key,
  share_id integer not null references shares (id) on delete cascade,
  expires_at timestamptz not null
);
create index share_file_links_expires_idx on share_file_links (expires_at);
