-- A dose's early flag depends only on the doses of its course given before
-- it within the course's window: the longer of its minimum interval and, with
-- a daily limit, 24 hours. So a dose added, moved or removed at a moment t can
-- change only the flags of the doses given from t to t + the window, and only
-- those are worked out again; each stretch in one ordered pass over its doses
-- and the window before it, instead of a look-up of the doses before each
-- dose. A change of the course's rule still works out every flag.

-- The moment the next dose is allowed after a course's doses given before a
-- moment, as before, in PL/pgSQL: its plan is kept for the session, where the
-- SQL function's was made again at each call, once or twice a dose written.
create or replace function medicine_allowed_before(course integer, interval_hours numeric, max_per_24h integer, at timestamptz, dose integer)
returns timestamptz language plpgsql stable as $$
begin
  return medicine_allowed_after(array(
    select d.given_at from medicine_doses d
    where d.course_id = course and (d.given_at, d.id) < (at, dose) and d.id <> dose
    order by d.given_at desc, d.id desc
    limit greatest(coalesce(max_per_24h, 1), 1)
  ), interval_hours, max_per_24h);
end $$;

-- The stretch before a dose that its early flag reads.
create function medicine_window(interval_hours numeric, max_per_24h integer) returns interval
language sql immutable as $$
  select greatest(interval_hours * interval '1 hour', case when max_per_24h is null then null else interval '24 hours' end)
$$;

-- Works out again, for the given courses, the early flag of every dose given
-- from a moment (`moments`, one for each course of `courses`; -infinity for
-- all) to that moment + the course's window, and the moment the next dose is
-- allowed, and writes those that changed: a dose or a course whose value stays
-- the same is not touched. The moments' stretches, each with the window before
-- it, are merged where they meet, and each merged stretch is read once, in
-- order: a dose is early when given before the dose before it + the interval,
-- or, with a daily limit of n, before the n-th dose before it + 24 hours. The
-- courses' rows are locked first, in the order of their ids, so that two
-- writers of one course's doses see each other's.
drop function refresh_medicine_courses(integer[], timestamptz[]);
create function refresh_medicine_courses(courses integer[], moments timestamptz[]) returns void language plpgsql as $$
begin
  perform 1 from medicine_courses where id = any(courses) order by id for no key update;
  with spans as (
    select s.course_id, s.at, s.at - medicine_window(c.min_interval_hours, c.max_doses_per24h) as lo,
           case when s.at = '-infinity' then 'infinity' else s.at + medicine_window(c.min_interval_hours, c.max_doses_per24h) end as hi
    from (select distinct course_id, at from unnest(courses, moments) as m (course_id, at)) s
    join medicine_courses c on c.id = s.course_id
  ),
  marked as (
    select s.*, case when s.lo <= max(s.hi) over (partition by s.course_id order by s.lo rows between unbounded preceding and 1 preceding) then 0 else 1 end as opens
    from spans s
  ),
  stretches as (
    select m.course_id, m.stretch, min(m.at) as first, min(m.lo) as lo, max(m.hi) as hi
    from (select marked.*, sum(opens) over (partition by course_id order by lo rows unbounded preceding) as stretch from marked) m
    group by m.course_id, m.stretch
  ),
  flags as (
    select x.id, x.given_at >= s.first as kept, coalesce(x.given_at < greatest(
      lag(x.given_at) over stretch + c.min_interval_hours * interval '1 hour',
      lag(x.given_at, c.max_doses_per24h) over stretch + interval '24 hours'
    ), false) as early
    from stretches s
    join medicine_courses c on c.id = s.course_id
    join medicine_doses x on x.course_id = s.course_id and x.given_at between s.lo and s.hi
    window stretch as (partition by s.course_id, s.stretch order by x.given_at, x.id)
  )
  update medicine_doses d set early = f.early, updated_at = now()
  from flags f
  where d.id = f.id and f.kept and d.early is distinct from f.early;
  update medicine_courses c set next_dose_allowed_at = w.next, updated_at = now()
  from (
    select c.id, medicine_allowed_before(c.id, c.min_interval_hours, c.max_doses_per24h, 'infinity', 2147483647) as next
    from medicine_courses c where c.id = any(courses)
  ) w
  where c.id = w.id and c.next_dose_allowed_at is distinct from w.next;
end $$;

-- After a statement's doses: the courses they belong to, at every moment a
-- dose of the statement was added at, moved from or to, or removed from. An
-- update that moves no dose (a changed amount, or the early flags written
-- here) changes nothing else.
create or replace function refresh_medicine_doses() returns trigger language plpgsql as $$
declare
  courses integer[];
  moments timestamptz[];
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  if tg_op = 'INSERT' then
    select array_agg(course_id), array_agg(given_at) into courses, moments from added;
  elsif tg_op = 'DELETE' then
    select array_agg(course_id), array_agg(given_at) into courses, moments from removed;
  else
    select array_agg(m.course_id), array_agg(m.given_at) into courses, moments
    from (
      select a.course_id, unnest(array[a.given_at, r.given_at]) as given_at
      from added a join removed r on r.id = a.id
      where a.given_at is distinct from r.given_at
    ) m;
  end if;
  if courses is not null then
    perform refresh_medicine_courses(courses, moments);
  end if;
  return null;
end $$;
