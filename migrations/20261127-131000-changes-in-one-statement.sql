-- A statement's changes and their tallies are written by one statement.
--
-- The trigger wrote the changes, then called add_tally once for each child
-- they belong to, a loop and a function call each time: for the single-row
-- writes of the API, that cost about as much as writing the change itself.
-- Now one statement writes the changes and, from what it wrote, one row of
-- deltas for each child. One statement in 16 then folds the keys it wrote,
-- as add_tally folded one call in 16.
create or replace function track_statement() returns trigger language plpgsql as $$
declare
  the_kind text := tg_argv[0];
  the_table text := tg_table_name;
  key record;
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  -- A family being deleted takes its changes with it: rows whose family is
  -- gone record nothing.
  if tg_op = 'INSERT' then
    with written as (
      insert into changes (family_id, xid, kind, record_id, child_id, op, version, user_id, record)
      select c.family_id, pg_current_xact_id(), the_kind, a.id, a.child_id, 'created', a.version, change_actor(), to_jsonb(a)
      from added a
      join children c on c.id = a.child_id
      join families f on f.id = c.family_id
      order by a.id
      returning family_id, child_id
    )
    insert into tallies (family_id, child_id, kind, delta, changes)
    select family_id, child_id, the_table, count(*), count(*) from written group by family_id, child_id;
    if random() < 1.0 / 16 then
      for key in select distinct c.family_id, a.child_id from added a join children c on c.id = a.child_id loop
        perform fold_tallies(key.family_id, key.child_id, the_table);
      end loop;
    end if;
  elsif tg_op = 'UPDATE' then
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
    insert into tallies (family_id, child_id, kind, delta, changes)
    select family_id, child_id, the_table, 0, count(*) from written group by family_id, child_id;
    if random() < 1.0 / 16 then
      for key in select distinct c.family_id, a.child_id from added a join children c on c.id = a.child_id loop
        perform fold_tallies(key.family_id, key.child_id, the_table);
      end loop;
    end if;
  else
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
    insert into tallies (family_id, child_id, kind, delta, changes)
    select family_id, child_id, the_table, -count(*), count(*) from written group by family_id, child_id;
    if random() < 1.0 / 16 then
      for key in select distinct c.family_id, r.child_id from removed r join children c on c.id = r.child_id loop
        perform fold_tallies(key.family_id, key.child_id, the_table);
      end loop;
    end if;
  end if;
  return null;
end $$;
