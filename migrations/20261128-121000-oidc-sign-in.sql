-- Sign-in with the home's identity provider (OpenID Connect). An account
-- made by signing in with the provider has no password.
alter table users alter column password_hash drop not null;

-- Who a provider's subject is here: found by issuer and subject on every
-- sign-in after the first.
create table user_identities (
  issuer text not null,
  subject text not null,
  user_id integer not null references users (id) on delete cascade,
  created_at timestamptz not null default now(),
  primary key (issuer, subject)
);
create index user_identities_user_idx on user_identities (user_id);

-- A sign-in under way, kept where every instance finds it, for ten minutes
-- and once: what its callback checks (the PKCE verifier and the nonce), the
-- front end's path to return to, and the hashes of its state and of the
-- cookie of the browser that started it.
create table oidc_flows (
  state_hash text primary key,
  browser_hash text not null,
  code_verifier text not null,
  nonce text not null,
  redirect text not null,
  expires_at timestamptz not null
);

-- The one-time code the front end exchanges for a token pair, within a
-- minute and once. Only its hash.
create table oidc_codes (
  code_hash text primary key,
  user_id integer not null references users (id) on delete cascade,
  expires_at timestamptz not null
);
