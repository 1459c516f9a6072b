-- The family a keyed request acted in, as its family scope decided it (null
-- for a route without one): a repeat is answered again only while the caller
-- may still act there, in the role the route needs.
alter table idempotency_keys add column family_id integer;
