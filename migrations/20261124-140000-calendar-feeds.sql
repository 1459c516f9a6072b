-- Calendar feeds: capability links to a family's visits as iCalendar, for
-- calendar applications that cannot send headers. Only the hash of a feed's
-- token is stored.
create table calendar_feeds (
  id serial primary key,
  user_id integer not null references users (id) on delete cascade,
  family_id integer not null references families (id) on delete cascade,
  token_hash text not null unique,
  created_at timestamptz not null default now()
);
create index calendar_feeds_user_idx on calendar_feeds (user_id, id);

-- A feed dies for good when its user leaves the family or is disabled: it
-- does not come back if the user rejoins or is enabled again. A feed is read
-- only while both still hold, so these only tidy up.
create function drop_member_feeds() returns trigger language plpgsql as $$
begin
  delete from calendar_feeds where user_id = old.user_id and family_id = old.family_id;
  return null;
end $$;

create function drop_disabled_feeds() returns trigger language plpgsql as $$
begin
  delete from calendar_feeds where user_id = new.id;
  return null;
end $$;

create trigger drop_member_feeds after delete on family_members
  for each row execute function drop_member_feeds();
create trigger drop_disabled_feeds after update of disabled on users
  for each row when (new.disabled and not old.disabled) execute function drop_disabled_feeds();
