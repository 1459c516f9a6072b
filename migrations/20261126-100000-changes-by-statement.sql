-- The changes of records (visits, measurements, medical events, illnesses,
-- attachments, temperature readings) are recorded once a statement, for all
-- its rows: a CSV import or an archive's batch of thousands of rows writes
-- their changes and their tallies in two statements instead of two for each
-- row. Families, members and children keep their row triggers, as what they
-- change moves the family's version one by one.
--
-- A statement's rows take their numbers in the order of their ids, which is
-- the order they were written in. A record created has no earlier change, so
-- its change takes the transaction's own id; an update or a deletion takes
-- the later of its own and its record's previous change's, as change_xid
-- does for one row.
create function track_statement() returns trigger language plpgsql as $$
declare
  the_kind text := tg_argv[0];
  counted record;
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  -- A family being deleted takes its changes with it: rows whose family is
  -- gone record nothing. Each loop writes the statement's changes and adds
  -- their number to the tallies of each child they belong to.
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
    end loop;
  end if;
  return null;
end $$;

-- Names that sort before refresh_*, so a temperature reading's change comes
-- before the change of its illness's highest temperature, as it did.
do $$
declare
  tracked record;
begin
  for tracked in select * from (values
    ('visits', 'visit'), ('measurements', 'measurement'), ('medical_events', 'medicalEvent'),
    ('illnesses', 'illness'), ('attachments', 'attachment'), ('temperatures', 'temperature')
  ) t (table_name, kind)
  loop
    execute format('drop trigger track_change on %I', tracked.table_name);
    execute format('create trigger record_added after insert on %I referencing new table as added for each statement execute function track_statement(%L)', tracked.table_name, tracked.kind);
    execute format('create trigger record_changed after update on %I referencing old table as removed new table as added for each statement execute function track_statement(%L)', tracked.table_name, tracked.kind);
    execute format('create trigger record_removed after delete on %I referencing old table as removed for each statement execute function track_statement(%L)', tracked.table_name, tracked.kind);
  end loop;
end $$;
