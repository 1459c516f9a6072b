-- Medicine courses of a child and the doses given during them. A course says
-- how much, how often at most (minimum interval, most doses in 24 hours) and
-- from when to when; it keeps the moment its next dose is allowed, kept by
-- the triggers below in the writing transaction, so that every read of a
-- course sees it and a change of it is a change of the course (its version,
-- its change), as an illness's highest temperature is. A dose keeps whether
-- it was given early, before the doses given before it allowed it.
create table medicine_courses (
  id serial primary key,
  child_id integer not null references children (id) on delete cascade,
  name text not null check (char_length(name) between 1 and 200),
  dose_amount numeric not null check (dose_amount > 0 and dose_amount <= 100000 and dose_amount = round(dose_amount, 3)),
  dose_unit text not null check (dose_unit in ('mg', 'mcg', 'g', 'ml', 'drop', 'tablet', 'capsule', 'puff', 'sachet', 'suppository', 'IU')),
  min_interval_hours numeric not null check (min_interval_hours > 0 and min_interval_hours <= 168 and min_interval_hours = round(min_interval_hours, 2)),
  max_doses_per24h integer check (max_doses_per24h between 1 and 24),
  start_date date not null,
  end_date date check (end_date >= start_date),
  remind boolean not null default false,
  next_dose_allowed_at timestamptz,
  version integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (id, child_id)
);
create index medicine_courses_child_start_idx on medicine_courses (child_id, start_date, id);
-- What the reminders look for: courses that remind, by the moment their next dose is allowed.
create index medicine_courses_remind_idx on medicine_courses (next_dose_allowed_at) where remind;

create table medicine_doses (
  id serial primary key,
  child_id integer not null references children (id) on delete cascade,
  course_id integer not null,
  given_at timestamptz not null,
  amount numeric check (amount > 0 and amount <= 100000 and amount = round(amount, 3)),
  early boolean not null,
  version integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  foreign key (course_id, child_id) references medicine_courses (id, child_id) on delete cascade
);
create index medicine_doses_course_given_idx on medicine_doses (course_id, given_at, id);
create index medicine_doses_child_given_idx on medicine_doses (child_id, given_at, id);

alter table changes drop constraint changes_kind_check;
alter table changes add constraint changes_kind_check
  check (kind in ('family', 'member', 'child', 'measurement', 'visit', 'medicalEvent', 'illness', 'attachment', 'temperature', 'medicineCourse', 'medicineDose'));

-- The moment the next dose is allowed after the doses given before it,
-- newest first (`recent`: the latest, then the one before, ...): the latest
-- plus the minimum interval and, when the course allows at most n doses in 24
-- hours and n were given, the n-th latest plus 24 hours; the later of the two.
-- Null without doses.
create function medicine_allowed_after(recent timestamptz[], interval_hours numeric, max_per_24h integer) returns timestamptz
language sql immutable as $$
  select greatest(
    recent[1] + interval_hours * interval '1 hour',
    case when max_per_24h is null then null else recent[max_per_24h] + interval '24 hours' end
  )
$$;

-- The same from a course's doses in the table: those given before (at, id),
-- newest first, but the dose itself, whose row may still hold its old time.
create function medicine_allowed_before(course integer, interval_hours numeric, max_per_24h integer, at timestamptz, dose integer)
returns timestamptz language sql stable as $$
  select medicine_allowed_after(array(
    select d.given_at from medicine_doses d
    where d.course_id = course and (d.given_at, d.id) < (at, dose) and d.id <> dose
    order by d.given_at desc, d.id desc
    limit greatest(coalesce(max_per_24h, 1), 1)
  ), interval_hours, max_per_24h)
$$;

-- A dose written by a client is early when given before the doses given
-- before it allowed; a dose given at the same moment as another comes after
-- it when its id is higher. An archive's dose comes with its flag, worked out
-- from the archive. A restore (`app.tracking = off`) loads the rows as they were.
create function medicine_dose_early() returns trigger language plpgsql as $$
declare
  course record;
begin
  if current_setting('app.tracking', true) = 'off' then
    return new;
  end if;
  if tg_op = 'UPDATE' and new.given_at is not distinct from old.given_at then
    return new;
  end if;
  if tg_op = 'INSERT' and new.early is not null then
    return new;
  end if;
  select min_interval_hours, max_doses_per24h into course from medicine_courses where id = new.course_id;
  new.early := coalesce(new.given_at < medicine_allowed_before(new.course_id, course.min_interval_hours, course.max_doses_per24h, new.given_at, new.id), false);
  return new;
end $$;

-- Works out again, for the given courses, the early flag of every dose given
-- from its start (`starts`) on and the moment the next dose is allowed, and writes those
-- that changed: a dose or a course whose value stays the same is not touched.
-- The courses' rows are locked first, in the order of their ids, so that two
-- writers of one course's doses see each other's.
create function refresh_medicine_courses(courses integer[], starts timestamptz[]) returns void language plpgsql as $$
begin
  perform 1 from medicine_courses where id = any(courses) order by id for no key update;
  update medicine_doses d set early = w.early, updated_at = now()
  from (
    select x.id, coalesce(x.given_at < medicine_allowed_before(x.course_id, c.min_interval_hours, c.max_doses_per24h, x.given_at, x.id), false) as early
    from unnest(courses, starts) as s (course_id, start_at)
    join medicine_courses c on c.id = s.course_id
    join medicine_doses x on x.course_id = s.course_id and x.given_at >= s.start_at
  ) w
  where d.id = w.id and d.early is distinct from w.early;
  update medicine_courses c set next_dose_allowed_at = w.next, updated_at = now()
  from (
    select c.id, medicine_allowed_before(c.id, c.min_interval_hours, c.max_doses_per24h, 'infinity', 2147483647) as next
    from medicine_courses c where c.id = any(courses)
  ) w
  where c.id = w.id and c.next_dose_allowed_at is distinct from w.next;
end $$;

-- After a statement's doses: the courses they belong to, from the earliest
-- dose the statement added, moved or removed. An update that moves no dose
-- (a changed amount, or the early flags written here) changes nothing else.
create function refresh_medicine_doses() returns trigger language plpgsql as $$
declare
  courses integer[];
  starts timestamptz[];
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  if tg_op = 'INSERT' then
    select array_agg(course_id), array_agg(earliest) into courses, starts
    from (select course_id, min(given_at) as earliest from added group by course_id) a;
  elsif tg_op = 'DELETE' then
    select array_agg(course_id), array_agg(earliest) into courses, starts
    from (select course_id, min(given_at) as earliest from removed group by course_id) r;
  else
    select array_agg(course_id), array_agg(earliest) into courses, starts
    from (
      select m.course_id, min(m.given_at) as earliest
      from (
        select a.course_id, least(a.given_at, r.given_at) as given_at
        from added a join removed r on r.id = a.id
        where a.given_at is distinct from r.given_at
      ) m
      group by m.course_id
    ) moved;
  end if;
  if courses is not null then
    perform refresh_medicine_courses(courses, starts);
  end if;
  return null;
end $$;

-- A course whose interval or daily limit changes has its next dose worked
-- out in the same write, and its doses' early flags after it.
create function medicine_course_write() returns trigger language plpgsql as $$
begin
  new.remind := coalesce(new.remind, false);
  if current_setting('app.tracking', true) = 'off' or tg_op = 'INSERT' then
    return new;
  end if;
  if new.min_interval_hours is distinct from old.min_interval_hours or new.max_doses_per24h is distinct from old.max_doses_per24h then
    new.next_dose_allowed_at := medicine_allowed_before(new.id, new.min_interval_hours, new.max_doses_per24h, 'infinity', 2147483647);
  end if;
  return new;
end $$;

create function refresh_medicine_rules() returns trigger language plpgsql as $$
declare
  courses integer[];
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  select array_agg(a.id) into courses
  from added a join removed r on r.id = a.id
  where a.min_interval_hours is distinct from r.min_interval_hours or a.max_doses_per24h is distinct from r.max_doses_per24h;
  if courses is not null then
    perform refresh_medicine_courses(courses, array(select '-infinity'::timestamptz from unnest(courses)));
  end if;
  return null;
end $$;

create trigger bump_version before update on medicine_courses for each row execute function bump_version();
create trigger course_write before insert or update on medicine_courses for each row execute function medicine_course_write();
create trigger record_added after insert on medicine_courses referencing new table as added for each statement execute function track_statement('medicineCourse');
create trigger record_changed after update on medicine_courses referencing old table as removed new table as added for each statement execute function track_statement('medicineCourse');
create trigger record_removed after delete on medicine_courses referencing old table as removed for each statement execute function track_statement('medicineCourse');
create trigger refresh_changed after update on medicine_courses referencing old table as removed new table as added for each statement execute function refresh_medicine_rules();
create trigger count_added after insert on medicine_courses referencing new table as added for each statement execute function count_rows();
create trigger count_removed after delete on medicine_courses referencing old table as removed for each statement execute function count_rows();

create trigger bump_version before update on medicine_doses for each row execute function bump_version();
create trigger dose_early before insert or update on medicine_doses for each row execute function medicine_dose_early();
-- record_* sort before refresh_*: a dose's change comes before the changes it causes.
create trigger record_added after insert on medicine_doses referencing new table as added for each statement execute function track_statement('medicineDose');
create trigger record_changed after update on medicine_doses referencing old table as removed new table as added for each statement execute function track_statement('medicineDose');
create trigger record_removed after delete on medicine_doses referencing old table as removed for each statement execute function track_statement('medicineDose');
create trigger refresh_added after insert on medicine_doses referencing new table as added for each statement execute function refresh_medicine_doses();
create trigger refresh_removed after delete on medicine_doses referencing old table as removed for each statement execute function refresh_medicine_doses();
create trigger refresh_changed after update on medicine_doses referencing old table as removed new table as added for each statement execute function refresh_medicine_doses();
create trigger count_added after insert on medicine_doses referencing new table as added for each statement execute function count_rows();
create trigger count_removed after delete on medicine_doses referencing old table as removed for each statement execute function count_rows();

-- A child's records go before the child, so that each is recorded once, as
-- deleted, while its family is known: every table whose rows the change log
-- follows by statement, found by its triggers, but those that go with a
-- record they belong to (a reading with its illness, a dose with its course),
-- each before the tables it references (attachments before the records they
-- name, visits after the records that name them), else in the order the
-- tables were made, so that no deletion sets a link to null and records a
-- change for it.
create or replace function delete_child_records() returns trigger language plpgsql as $$
declare
  tracked record;
begin
  for tracked in
    with recursive kept as (
      select distinct c.oid, c.relname
      from pg_trigger g
      join pg_class c on c.oid = g.tgrelid
      join pg_proc p on p.oid = g.tgfoid
      where p.proname = 'track_statement' and c.relnamespace = current_schema()::regnamespace
        and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'child_id' and not a.attisdropped)
    ),
    tables as (
      select t.oid, t.relname from kept t
      where not exists (
        select 1 from pg_constraint k
        where k.conrelid = t.oid and k.contype = 'f' and k.confdeltype = 'c' and k.confrelid <> t.oid
          and k.confrelid in (select oid from kept)
      )
    ),
    depth (oid, level) as (
      select oid, 0 from tables
      union all
      select k.conrelid, d.level + 1
      from depth d
      join pg_constraint k on k.confrelid = d.oid and k.contype = 'f' and k.conrelid <> k.confrelid
      join tables t on t.oid = k.conrelid
      where d.level < 20
    )
    select t.relname from tables t join depth d on d.oid = t.oid
    group by t.oid, t.relname
    order by max(d.level) desc, t.oid
  loop
    execute format('delete from %I where child_id = $1', tracked.relname) using old.id;
  end loop;
  return old;
end $$;
