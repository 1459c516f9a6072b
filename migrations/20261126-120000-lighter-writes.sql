-- What each write pays for its change, made smaller.
--
-- A change no longer checks its family by a foreign key: the check locked
-- the family's row in share mode for every write, so that the concurrent
-- writers of a family shared one lock, and cost a lookup. Changes are
-- written only for a family that exists (the triggers join it), and a
-- deleted family's changes go with it by the trigger that drops its tallies.
alter table changes drop constraint changes_family_id_fkey;

-- The feed's order is the primary key; the index by child is read by nothing.
drop index changes_child_idx;
alter table changes drop constraint changes_pkey;
drop index changes_order_idx;
alter table changes add constraint changes_pkey primary key (family_id, xid, seq);

-- One tally row a statement: `delta` counts the rows of `kind` (a table, or
-- 'children' of a family), and `changes` the changes the statement recorded.
-- Rows of kind 'changes' count changes only.
alter table tallies add column changes bigint not null default 0;
update tallies set changes = delta, delta = 0 where kind = 'changes';

create or replace function fold_tallies(f integer, c integer, k text) returns void language plpgsql as $$
declare
  total bigint;
  total_changes bigint;
  folded integer;
begin
  with gone as (
    delete from tallies where id in (
      select id from tallies
      where family_id = f and child_id is not distinct from c and kind = k
      for update skip locked
    )
    returning delta, changes
  )
  select sum(delta), sum(changes), count(*) into total, total_changes, folded from gone;
  if folded > 0 then
    insert into tallies (family_id, child_id, kind, delta, changes) values (f, c, k, total, total_changes);
  end if;
end $$;

drop function add_tally(integer, integer, text, bigint);
-- Adds a row of deltas; one call in 16 folds its key.
create function add_tally(f integer, c integer, k text, d bigint, n bigint) returns void language plpgsql as $$
begin
  insert into tallies (family_id, child_id, kind, delta, changes) values (f, c, k, d, n);
  if random() < 1.0 / 16 then
    perform fold_tallies(f, c, k);
  end if;
end $$;

create or replace function child_changes(c integer) returns bigint language sql stable as $$
  select coalesce(sum(changes), 0)::bigint from tallies where child_id = c
$$;
create or replace function family_changes(f integer) returns bigint language sql stable as $$
  select coalesce(sum(changes), 0)::bigint from tallies where family_id = f
$$;
drop index tallies_child_idx;
create index tallies_child_idx on tallies (child_id, kind) include (delta, changes) where child_id is not null;

create or replace function drop_family_tallies() returns trigger language plpgsql as $$
begin
  delete from tallies where family_id in (select id from removed);
  delete from changes where family_id in (select id from removed);
  return null;
end $$;

create or replace function record_change(
  f integer, c integer, k text, r integer, o text, v integer, rec jsonb, touches_family boolean
) returns void language plpgsql as $$
declare
  family_version integer;
begin
  if f is null then
    return;
  end if;
  -- Changes of the family itself and of its members (who may read it) are
  -- announced by the database. A NOTIFY serializes the commits that send one,
  -- so the frequent changes of records are announced by the service that
  -- wrote them, once committed, for many at a time; every instance also
  -- looks at the families it streams, for the writes of others.
  if k in ('family', 'member') or touches_family then
    perform pg_notify('family_changes', f::text);
  end if;
  -- Only a change of what the family shows moves its version, under its clock's lock.
  if touches_family or (k = 'family' and o = 'updated') then
    update family_clocks set version = version + 1 where family_id = f returning version into family_version;
  else
    select version into family_version from family_clocks where family_id = f;
  end if;
  -- A family being deleted takes its changes with it.
  if family_version is null or not exists (select 1 from families where id = f) then
    return;
  end if;
  if k = 'family' then
    v := family_version;
    rec := case when rec is null then null else family_snapshot(f, family_version) end;
  end if;
  insert into changes (family_id, xid, kind, record_id, child_id, op, version, user_id, record)
  values (f, change_xid(k, r), k, r, c, o, v, change_actor(), rec);
  perform add_tally(f, c, 'changes', 0, 1);
  if touches_family then
    insert into changes (family_id, xid, kind, record_id, child_id, op, version, user_id, record)
    values (f, change_xid('family', f), 'family', f, null, 'updated', family_version, change_actor(), family_snapshot(f, family_version));
    perform add_tally(f, null, 'changes', 0, 1);
  end if;
end $$;

create or replace function track_statement() returns trigger language plpgsql as $$
declare
  the_kind text := tg_argv[0];
  counted record;
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  -- A family being deleted takes its changes with it: rows whose family is
  -- gone record nothing. Each loop writes the statement's changes and adds,
  -- for each child they belong to, their number and the difference in the
  -- child's rows of the table, in one row of deltas.
  if tg_op = 'INSERT' then
    for counted in
      with written as (
        insert into changes (family_id, xid, kind, record_id, child_id, op, version, user_id, record)
        select c.family_id, pg_current_xact_id(), the_kind, a.id, a.child_id, 'created', a.version, change_actor(), to_jsonb(a)
        from added a
        join children c on c.id = a.child_id
        join families f on f.id = c.family_id
        order by a.id
        returning family_id, child_id
      )
      select family_id, child_id, count(*) as n from written group by family_id, child_id
    loop
      perform add_tally(counted.family_id, counted.child_id, tg_table_name, counted.n, counted.n);
    end loop;
  elsif tg_op = 'UPDATE' then
    for counted in
      with written as (
        insert into changes (family_id, xid, kind, record_id, child_id, op, version, user_id, record)
        select c.family_id, greatest(pg_current_xact_id(), p.xid), the_kind, a.id, a.child_id, 'updated', a.version, change_actor(), to_jsonb(a)
        from added a
        join children c on c.id = a.child_id
        join families f on f.id = c.family_id
        left join lateral (
          select x.xid from changes x where x.kind = the_kind and x.record_id = a.id order by x.seq desc limit 1
        ) p on true
        order by a.id
        returning family_id, child_id
      )
      select family_id, child_id, count(*) as n from written group by family_id, child_id
    loop
      perform add_tally(counted.family_id, counted.child_id, tg_table_name, 0, counted.n);
    end loop;
  else
    for counted in
      with written as (
        insert into changes (family_id, xid, kind, record_id, child_id, op, version, user_id, record)
        select c.family_id, greatest(pg_current_xact_id(), p.xid), the_kind, r.id, r.child_id, 'deleted', r.version, change_actor(), null
        from removed r
        join children c on c.id = r.child_id
        join families f on f.id = c.family_id
        left join lateral (
          select x.xid from changes x where x.kind = the_kind and x.record_id = r.id order by x.seq desc limit 1
        ) p on true
        order by r.id
        returning family_id, child_id
      )
      select family_id, child_id, count(*) as n from written group by family_id, child_id
    loop
      perform add_tally(counted.family_id, counted.child_id, tg_table_name, -counted.n, counted.n);
    end loop;
  end if;
  return null;
end $$;

create or replace function count_children() returns trigger language plpgsql as $$
declare
  counted record;
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  if tg_op = 'INSERT' then
    for counted in
      select a.family_id, count(*) as n from added a join families f on f.id = a.family_id group by a.family_id
    loop
      perform add_tally(counted.family_id, null, 'children', counted.n, 0);
    end loop;
  else
    for counted in
      select r.family_id, count(*) as n from removed r join families f on f.id = r.family_id group by r.family_id
    loop
      perform add_tally(counted.family_id, null, 'children', -counted.n, 0);
    end loop;
    -- A deleted child's rows are gone, so are their counts; its changes
    -- still count in its family's, in one row.
    with gone as (
      delete from tallies where child_id in (select id from removed) returning family_id, child_id, changes
    )
    insert into tallies (family_id, child_id, kind, delta, changes)
    select family_id, child_id, 'changes', 0, sum(changes) from gone group by family_id, child_id;
  end if;
  return null;
end $$;

create or replace function recount_tallies() returns void language plpgsql as $$
begin
  delete from tallies;
  insert into tallies (family_id, child_id, kind, delta, changes)
  select family_id, child_id, 'changes', 0, count(*) from changes group by family_id, child_id;
  insert into tallies (family_id, child_id, kind, delta)
  select c.family_id, r.child_id, r.kind, r.n
  from (
    select child_id, 'visits' as kind, count(*) as n from visits group by child_id
    union all select child_id, 'measurements', count(*) from measurements group by child_id
    union all select child_id, 'medical_events', count(*) from medical_events group by child_id
    union all select child_id, 'illnesses', count(*) from illnesses group by child_id
    union all select child_id, 'attachments', count(*) from attachments group by child_id
    union all select child_id, 'temperatures', count(*) from temperatures group by child_id
  ) r
  join children c on c.id = r.child_id;
  insert into tallies (family_id, child_id, kind, delta)
  select family_id, null, 'children', count(*) from children group by family_id;
end $$;

-- A table without a column of stored bytes counts its rows by static SQL,
-- planned once, instead of a statement built for each write.
create or replace function count_rows() returns trigger language plpgsql as $$
declare
  bytes text := case when tg_nargs > 0 then format('coalesce(sum(%I), 0)', tg_argv[0]) else '0' end;
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  if tg_nargs = 0 then
    if tg_op = 'INSERT' then
      insert into row_counts (table_name, delta_rows) select tg_table_name, count(*) from added having count(*) > 0;
    elsif tg_op = 'DELETE' then
      insert into row_counts (table_name, delta_rows) select tg_table_name, -count(*) from removed having count(*) > 0;
    end if;
    return null;
  end if;
  if tg_op = 'INSERT' then
    execute format('insert into row_counts (table_name, delta_rows, delta_bytes) select %L, count(*), %s from added having count(*) > 0', tg_table_name, bytes);
  elsif tg_op = 'DELETE' then
    execute format('insert into row_counts (table_name, delta_rows, delta_bytes) select %L, -count(*), -%s from removed having count(*) > 0', tg_table_name, bytes);
  else
    execute format('insert into row_counts (table_name, delta_rows, delta_bytes) select %L, 0, d from (select (select %s from added) - (select %s from removed) as d) x where d <> 0', tg_table_name, bytes, bytes);
  end if;
  return null;
end $$;
