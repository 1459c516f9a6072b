-- A child's allergies and intolerances: when noted, to what, what kind of
-- substance, the reaction and its severity, and whether it lasts. A record
-- like the others: its version, its changes and its row counts by the same
-- triggers. The change log's check of kinds comes from the registry (migrate
-- makes it), so it is not listed here.
create table allergies (
  id serial primary key,
  child_id integer not null references children (id) on delete cascade,
  date date not null,
  substance text not null check (char_length(substance) between 1 and 200),
  category text check (category in ('food', 'medication', 'environment', 'other')),
  reaction text check (char_length(reaction) <= 10000),
  severity text check (severity in ('mild', 'moderate', 'severe')),
  status text not null default 'active' check (status in ('active', 'resolved')),
  notes text check (char_length(notes) <= 10000),
  version integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index allergies_child_date_idx on allergies (child_id, date, id);

-- An allergy written without a status is active, on a replace too.
create function allergy_status() returns trigger language plpgsql as $$
begin
  new.status := coalesce(new.status, 'active');
  return new;
end $$;

create trigger allergy_status before insert or update on allergies for each row execute function allergy_status();
create trigger bump_version before update on allergies for each row execute function bump_version();
create trigger record_added after insert on allergies referencing new table as added for each statement execute function track_statement('allergy');
create trigger record_changed after update on allergies referencing old table as removed new table as added for each statement execute function track_statement('allergy');
create trigger record_removed after delete on allergies referencing old table as removed for each statement execute function track_statement('allergy');
create trigger count_added after insert on allergies referencing new table as added for each statement execute function count_rows();
create trigger count_removed after delete on allergies referencing old table as removed for each statement execute function count_rows();
