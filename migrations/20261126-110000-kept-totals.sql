-- A list's total is kept, not counted: each statement that adds or removes
-- a child's records adds the difference to the child's tally of that table
-- (kind = the table's name), and each that adds or removes children to the
-- family's tally of children, in the writing transaction, as rows of deltas
-- that no writer waits on. An unfiltered list reads its total from there by
-- index, so a page costs the same at 50,000 rows as at 200; a filtered list
-- still counts what its filter selects.

create or replace function track_statement() returns trigger language plpgsql as $$
declare
  the_kind text := tg_argv[0];
  counted record;
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  -- A family being deleted takes its changes with it: rows whose family is
  -- gone record nothing. Each loop writes the statement's changes and adds
  -- their number to the tallies of each child they belong to; a creation or
  -- a deletion also moves the child's number of rows of the table.
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
      perform add_tally(counted.family_id, counted.child_id, 'changes', counted.n);
      perform add_tally(counted.family_id, counted.child_id, tg_table_name, counted.n);
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
      perform add_tally(counted.family_id, counted.child_id, 'changes', counted.n);
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
      perform add_tally(counted.family_id, counted.child_id, 'changes', counted.n);
      perform add_tally(counted.family_id, counted.child_id, tg_table_name, -counted.n);
    end loop;
  end if;
  return null;
end $$;


-- Children counted by family. Rows of a family being deleted are not counted:
-- the family's tallies go with it.
create function count_children() returns trigger language plpgsql as $$
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
      perform add_tally(counted.family_id, null, 'children', counted.n);
    end loop;
  else
    for counted in
      select r.family_id, count(*) as n from removed r join families f on f.id = r.family_id group by r.family_id
    loop
      perform add_tally(counted.family_id, null, 'children', -counted.n);
    end loop;
    -- A deleted child's rows are gone, so are their counts; its changes still
    -- count in its family's.
    delete from tallies where child_id in (select id from removed) and kind <> 'changes';
  end if;
  return null;
end $$;

create trigger count_children_added after insert on children referencing new table as added for each statement execute function count_children();
create trigger count_children_removed after delete on children referencing old table as removed for each statement execute function count_children();

-- Counts every tally afresh: the changes of each child and family, the rows
-- of each child's tables, the children of each family. For the rows there
-- are now, and to repair the tallies after rows were written with change
-- tracking off.
create function recount_tallies() returns void language plpgsql as $$
begin
  delete from tallies;
  insert into tallies (family_id, child_id, kind, delta)
  select family_id, child_id, 'changes', count(*) from changes group by family_id, child_id;
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

select recount_tallies();

-- The rows of a child's table, or the children of families, as kept.
create function child_rows(c integer, k text) returns bigint language sql stable as $$
  select coalesce(sum(delta), 0)::bigint from tallies where child_id = c and kind = k
$$;
create function family_children(f integer) returns bigint language sql stable as $$
  select coalesce(sum(delta), 0)::bigint from tallies where family_id = f and child_id is null and kind = 'children'
$$;
