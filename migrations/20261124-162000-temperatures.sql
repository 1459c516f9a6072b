-- Temperature readings taken during an illness: when, how much, how. A
-- reading keeps its child beside its illness, so that the family scope, the
-- change log and the exports find it as every record; the link carries the
-- child too, so a reading always belongs to its illness's child, and goes
-- with the illness.
create table temperatures (
  id serial primary key,
  child_id integer not null references children (id) on delete cascade,
  illness_id integer not null,
  taken_at timestamptz not null,
  temperature_c numeric not null check (temperature_c between 34 and 43 and temperature_c = round(temperature_c, 2)),
  method text check (method in ('oral', 'rectal', 'axillary', 'ear', 'forehead')),
  notes text check (char_length(notes) <= 10000),
  version integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  foreign key (illness_id, child_id) references illnesses (id, child_id) on delete cascade
);
create index temperatures_illness_taken_idx on temperatures (illness_id, taken_at, id);
create index temperatures_child_taken_idx on temperatures (child_id, taken_at, id);

-- The highest reading of an illness, kept on the illness by the triggers
-- below: a reading that changes it changes the illness (its version, its
-- change), so every read of the illness sees it. Null without readings.
alter table illnesses
  add column max_temperature_c numeric check (max_temperature_c between 34 and 43 and max_temperature_c = round(max_temperature_c, 2));

alter table changes drop constraint changes_kind_check;
alter table changes add constraint changes_kind_check
  check (kind in ('family', 'member', 'child', 'measurement', 'visit', 'medicalEvent', 'illness', 'attachment', 'temperature'));

-- Recomputes the highest reading of the illnesses a statement's readings
-- belong to; an illness whose highest reading stays the same is not touched.
-- `app.tracking = off` pauses it for a restore, which loads the illnesses as
-- they were.
create function refresh_illness_temperature() returns trigger language plpgsql as $$
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  if tg_op = 'INSERT' then
    update illnesses i set max_temperature_c = m.highest, updated_at = now()
    from (select distinct a.illness_id from added a) n,
         lateral (select max(t.temperature_c) as highest from temperatures t where t.illness_id = n.illness_id) m
    where i.id = n.illness_id and i.max_temperature_c is distinct from m.highest;
  elsif tg_op = 'DELETE' then
    update illnesses i set max_temperature_c = m.highest, updated_at = now()
    from (select distinct r.illness_id from removed r) n,
         lateral (select max(t.temperature_c) as highest from temperatures t where t.illness_id = n.illness_id) m
    where i.id = n.illness_id and i.max_temperature_c is distinct from m.highest;
  else
    update illnesses i set max_temperature_c = m.highest, updated_at = now()
    from (select a.illness_id from added a union select r.illness_id from removed r) n,
         lateral (select max(t.temperature_c) as highest from temperatures t where t.illness_id = n.illness_id) m
    where i.id = n.illness_id and i.max_temperature_c is distinct from m.highest;
  end if;
  return null;
end $$;

create trigger bump_version before update on temperatures for each row execute function bump_version();
create trigger track_change after insert or update or delete on temperatures for each row execute function track_change('temperature');
create trigger refresh_added after insert on temperatures referencing new table as added for each statement execute function refresh_illness_temperature();
create trigger refresh_removed after delete on temperatures referencing old table as removed for each statement execute function refresh_illness_temperature();
create trigger refresh_changed after update on temperatures referencing old table as removed new table as added for each statement execute function refresh_illness_temperature();
create trigger count_added after insert on temperatures referencing new table as added for each statement execute function count_rows();
create trigger count_removed after delete on temperatures referencing old table as removed for each statement execute function count_rows();

create or replace function recount_rows() returns void language plpgsql as $$
begin
  delete from row_counts;
  -- An empty table has no row here, so an empty instance stays without rows.
  insert into row_counts (table_name, delta_rows, delta_bytes)
  select * from (
    select 'users', count(*), 0::bigint from users
    union all select 'families', count(*), 0 from families
    union all select 'children', count(*), coalesce(sum(avatar_size_bytes), 0) from children
    union all select 'visits', count(*), 0 from visits
    union all select 'measurements', count(*), 0 from measurements
    union all select 'medical_events', count(*), 0 from medical_events
    union all select 'illnesses', count(*), 0 from illnesses
    union all select 'attachments', count(*), coalesce(sum(size_bytes), 0) from attachments
    union all select 'temperatures', count(*), 0 from temperatures
  ) counted (table_name, n, bytes)
  where n <> 0 or bytes <> 0;
end $$;
