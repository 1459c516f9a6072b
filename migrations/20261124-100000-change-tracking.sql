-- Change tracking. Every write to a family's data is recorded as a change in
-- the writing transaction, by the triggers below, so a recorded change was
-- committed and a committed write always has its change. Versions, ETags,
-- history, the changes feed and the event streams are all read from here.

-- Each child and record counts its changes. A family's version lives in its
-- clock below: it moves when its name, its members or its children change.
alter table family_members add column version integer not null default 1;
alter table children add column version integer not null default 1;
alter table visits add column version integer not null default 1;
alter table measurements add column version integer not null default 1;
alter table medical_events add column version integer not null default 1;
alter table illnesses add column version integer not null default 1;
alter table attachments add column version integer not null default 1;

-- One row a family. Its lock, taken by every change and held until commit,
-- makes the family's changes take their sequence numbers in commit order, so
-- a reader of the feed never skips one that commits late. The epoch changes
-- when the family's data is replaced by a restore: cursors of the old data
-- then stop working.
create table family_clocks (
  family_id integer primary key references families (id) on delete cascade,
  seq bigint not null default 0,
  version integer not null default 1,
  epoch text not null default substr(md5(random()::text || clock_timestamp()::text), 1, 10)
);

create table changes (
  family_id integer not null references families (id) on delete cascade,
  seq bigint not null,
  kind text not null check (kind in ('family', 'member', 'child', 'measurement', 'visit', 'medicalEvent', 'illness', 'attachment')),
  record_id integer not null,
  child_id integer,
  op text not null check (op in ('created', 'updated', 'deleted')),
  version integer not null,
  user_id integer,
  at timestamptz not null default now(),
  -- The row as it was after the change, null for a deletion.
  record jsonb,
  primary key (family_id, seq)
);
create index changes_record_idx on changes (kind, record_id, seq);
create index changes_child_idx on changes (child_id, seq) where child_id is not null;

-- Single-use tickets for event streams opened by browsers, which cannot send headers.
create table event_tickets (
  token_hash text primary key,
  user_id integer not null references users (id) on delete cascade,
  session_id integer not null references sessions (id) on delete cascade,
  family_id integer not null references families (id) on delete cascade,
  expires_at timestamptz not null,
  used_at timestamptz
);
create index event_tickets_expires_idx on event_tickets (expires_at);

-- The user a transaction writes for, set by the service; null for the
-- command line and administrators' actions.
create function change_actor() returns integer language sql stable as $$
  select nullif(current_setting('app.user_id', true), '')::integer
$$;

-- A write of the service declares its user and takes the family's clock
-- before any row, so that writers of one family always lock in one order.
create function begin_change(f integer, actor integer) returns void language plpgsql as $$
begin
  perform set_config('app.user_id', coalesce(actor::text, ''), true);
  if f is not null then
    perform 1 from family_clocks where family_id = f for update;
  end if;
end $$;

-- A family as its changes record it: its row, version and head counts.
create function family_snapshot(f integer, v integer) returns jsonb language sql stable as $$
  select to_jsonb(x) || jsonb_build_object(
    'version', v,
    'member_count', (select count(*) from family_members m where m.family_id = f),
    'child_count', (select count(*) from children c where c.family_id = f)
  )
  from families x where x.id = f
$$;

-- Records one change, and a change of the family too when this one alters
-- what the family shows (its members, their roles, its number of children).
create function record_change(
  f integer, c integer, k text, r integer, o text, v integer, rec jsonb, touches_family boolean
) returns void language plpgsql as $$
declare
  next_seq bigint;
  family_version integer;
begin
  if f is null then
    return;
  end if;
  -- Changes of the family itself and of its members (who may read it) are
  -- announced by the database. A NOTIFY serializes the commits that send one,
  -- so the frequent changes of records are announced by the service that
  -- wrote them, once committed, for many at a time; every instance also
  -- looks at the clocks of the families it streams, for the writes of others.
  if k in ('family', 'member') or touches_family then
    perform pg_notify('family_changes', f::text);
  end if;
  update family_clocks
  set seq = seq + case when touches_family then 2 else 1 end,
      version = version + case when touches_family or (k = 'family' and o = 'updated') then 1 else 0 end
  where family_id = f
  returning seq, version into next_seq, family_version;
  -- A family being deleted takes its changes with it.
  if next_seq is null or not exists (select 1 from families where id = f) then
    return;
  end if;
  if k = 'family' then
    v := family_version;
    rec := case when rec is null then null else family_snapshot(f, family_version) end;
  end if;
  insert into changes (family_id, seq, kind, record_id, child_id, op, version, user_id, record)
  values (f, next_seq - case when touches_family then 1 else 0 end, k, r, c, o, v, change_actor(), rec);
  if touches_family then
    insert into changes (family_id, seq, kind, record_id, child_id, op, version, user_id, record)
    values (f, next_seq, 'family', f, null, 'updated', family_version, change_actor(), family_snapshot(f, family_version));
  end if;
end $$;

-- The row trigger of every tracked table; its argument names the kind.
-- `app.tracking = off` pauses it for a restore, which records its own changes.
create function track_change() returns trigger language plpgsql as $$
declare
  kind text := tg_argv[0];
  rec jsonb;
  the_family integer;
  the_child integer;
  the_id integer;
  touches boolean := false;
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  rec := case when tg_op = 'DELETE' then to_jsonb(old) else to_jsonb(new) end;
  if kind = 'family' then
    the_family := (rec ->> 'id')::integer;
    the_id := the_family;
  elsif kind = 'member' then
    the_family := (rec ->> 'family_id')::integer;
    the_id := (rec ->> 'user_id')::integer;
    touches := tg_op <> 'UPDATE' or old.role is distinct from new.role;
    if tg_op <> 'DELETE' then
      rec := rec || (select jsonb_build_object('name', u.name, 'email', u.email) from users u where u.id = the_id);
    end if;
  elsif kind = 'child' then
    the_family := (rec ->> 'family_id')::integer;
    the_child := (rec ->> 'id')::integer;
    the_id := the_child;
    touches := tg_op <> 'UPDATE';
  else
    the_child := (rec ->> 'child_id')::integer;
    the_id := (rec ->> 'id')::integer;
    select family_id into the_family from children where id = the_child;
  end if;
  perform record_change(
    the_family, the_child, kind, the_id,
    case tg_op when 'INSERT' then 'created' when 'UPDATE' then 'updated' else 'deleted' end,
    coalesce((rec ->> 'version')::integer, 1),
    case when tg_op = 'DELETE' then null else rec end,
    touches
  );
  return null;
end $$;

create function bump_version() returns trigger language plpgsql as $$
begin
  new.version := old.version + 1;
  return new;
end $$;

-- A restore loads the clocks with the rest.
create function start_family_clock() returns trigger language plpgsql as $$
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  insert into family_clocks (family_id) values (new.id);
  return null;
end $$;

-- A child's records go before the child, attachments first and visits last,
-- so that each is recorded once, as deleted, while its family is known.
create function delete_child_records() returns trigger language plpgsql as $$
begin
  delete from attachments where child_id = old.id;
  delete from measurements where child_id = old.id;
  delete from medical_events where child_id = old.id;
  delete from illnesses where child_id = old.id;
  delete from visits where child_id = old.id;
  return old;
end $$;

-- A member's name and e-mail are part of the member: a change of them is a
-- change of each of the user's memberships.
create function touch_memberships() returns trigger language plpgsql as $$
begin
  if new.name is distinct from old.name or new.email is distinct from old.email then
    update family_members set version = version where user_id = new.id;
  end if;
  return null;
end $$;

-- Event streams of a session end at once when it is revoked or deleted.
create function notify_session_end() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    perform pg_notify('sessions_ended', old.id::text);
  elsif old.revoked_at is null and new.revoked_at is not null then
    perform pg_notify('sessions_ended', new.id::text);
  end if;
  return null;
end $$;

-- What is there already: every family gets its clock, and every row a change
-- `created`, so that a client reading the feed from the start sees it all.
insert into family_clocks (family_id) select id from families;

insert into changes (family_id, seq, kind, record_id, child_id, op, version, user_id, at, record)
select family_id, row_number() over (partition by family_id order by rank, at, record_id), kind, record_id, child_id, 'created', 1, null, at, record
from (
  select f.id as family_id, null::integer as child_id, 'family' as kind, f.id as record_id, f.created_at as at,
         family_snapshot(f.id, 1) as record, 1 as rank
  from families f
  union all
  select m.family_id, null, 'member', m.user_id, m.joined_at, to_jsonb(m) || jsonb_build_object('name', u.name, 'email', u.email), 2
  from family_members m join users u on u.id = m.user_id
  union all
  select c.family_id, c.id, 'child', c.id, c.created_at, to_jsonb(c), 3 from children c
  union all
  select c.family_id, r.child_id, 'visit', r.id, r.created_at, to_jsonb(r), 4 from visits r join children c on c.id = r.child_id
  union all
  select c.family_id, r.child_id, 'measurement', r.id, r.created_at, to_jsonb(r), 5 from measurements r join children c on c.id = r.child_id
  union all
  select c.family_id, r.child_id, 'medicalEvent', r.id, r.created_at, to_jsonb(r), 6 from medical_events r join children c on c.id = r.child_id
  union all
  select c.family_id, r.child_id, 'illness', r.id, r.created_at, to_jsonb(r), 7 from illnesses r join children c on c.id = r.child_id
  union all
  select c.family_id, r.child_id, 'attachment', r.id, r.created_at, to_jsonb(r), 8 from attachments r join children c on c.id = r.child_id
) existing;

update family_clocks k set seq = coalesce((select max(seq) from changes c where c.family_id = k.family_id), 0);

create trigger family_clock after insert on families for each row execute function start_family_clock();
create trigger track_change after insert or update or delete on families for each row execute function track_change('family');

create trigger bump_version before update on family_members for each row execute function bump_version();
create trigger track_change after insert or update or delete on family_members for each row execute function track_change('member');

create trigger bump_version before update on children for each row execute function bump_version();
create trigger delete_records before delete on children for each row execute function delete_child_records();
create trigger track_change after insert or update or delete on children for each row execute function track_change('child');

create trigger bump_version before update on visits for each row execute function bump_version();
create trigger track_change after insert or update or delete on visits for each row execute function track_change('visit');

create trigger bump_version before update on measurements for each row execute function bump_version();
create trigger track_change after insert or update or delete on measurements for each row execute function track_change('measurement');

create trigger bump_version before update on medical_events for each row execute function bump_version();
create trigger track_change after insert or update or delete on medical_events for each row execute function track_change('medicalEvent');

create trigger bump_version before update on illnesses for each row execute function bump_version();
create trigger track_change after insert or update or delete on illnesses for each row execute function track_change('illness');

create trigger bump_version before update on attachments for each row execute function bump_version();
create trigger track_change after insert or update or delete on attachments for each row execute function track_change('attachment');

create trigger touch_memberships after update of name, email on users for each row execute function touch_memberships();
create trigger session_end after update of revoked_at or delete on sessions for each row execute function notify_session_end();
