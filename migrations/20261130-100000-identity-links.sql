-- A provider's identity is linked to an existing account by that account
-- (signed in, proving its password) or by an administrator, never by an
-- e-mail address. Each link has an id, so that it can be listed and removed.
alter table user_identities add column id integer generated always as identity;
alter table user_identities add constraint user_identities_id_key unique (id);

-- A link under way: a one-time token (only its hash) that starts a sign-in
-- with the provider, whose identity is then linked to the user. At most one
-- open a user for each maker: the user's own, for ten minutes and only in
-- the browser that asked for it; or an administrator's, for seven days, in
-- the browser the person opens it in.
create table identity_links (
  token_hash text primary key,
  user_id integer not null references users (id) on delete cascade,
  made_by text not null check (made_by in ('user', 'admin')),
  browser_hash text check ((made_by = 'user') = (browser_hash is not null)),
  expires_at timestamptz not null,
  unique (user_id, made_by)
);

-- A sign-in started with a link token: its callback links the identity to
-- the link's user instead of finding an account.
alter table oidc_flows add column link_hash text;
