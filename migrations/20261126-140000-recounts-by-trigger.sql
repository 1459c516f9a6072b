-- The recounts find their tables by their triggers instead of a list, so a
-- new kind of record is recounted by the triggers its own migration makes:
-- a table whose rows are counted has count_rows triggers (their argument, if
-- any, names its column of stored bytes), and a child's records have the
-- change log's statement triggers, which keep the family's tallies.

create or replace function recount_rows() returns void language plpgsql as $$
declare
  counted record;
begin
  delete from row_counts;
  for counted in
    select distinct c.relname as table_name, nullif(split_part(encode(g.tgargs, 'escape'), '\000', 1), '') as bytes_column
    from pg_trigger g
    join pg_class c on c.oid = g.tgrelid
    join pg_proc p on p.oid = g.tgfoid
    where p.proname = 'count_rows' and c.relnamespace = current_schema()::regnamespace
    order by 1
  loop
    -- An empty table has no row here, so an empty instance stays without rows.
    execute format(
      'insert into row_counts (table_name, delta_rows, delta_bytes) select %L, n, bytes from (select count(*) as n, %s as bytes from %I) counted where n <> 0 or bytes <> 0',
      counted.table_name,
      case when counted.bytes_column is null then '0::bigint' else format('coalesce(sum(%I), 0)::bigint', counted.bytes_column) end,
      counted.table_name
    );
  end loop;
end $$;

create or replace function recount_tallies() returns void language plpgsql as $$
declare
  kept record;
begin
  delete from tallies;
  insert into tallies (family_id, child_id, kind, delta, changes)
  select family_id, child_id, 'changes', 0, count(*) from changes group by family_id, child_id;
  for kept in
    select distinct c.relname as table_name
    from pg_trigger g
    join pg_class c on c.oid = g.tgrelid
    join pg_proc p on p.oid = g.tgfoid
    where p.proname = 'track_statement' and c.relnamespace = current_schema()::regnamespace
    order by 1
  loop
    execute format(
      'insert into tallies (family_id, child_id, kind, delta) select c.family_id, r.child_id, %L, count(*) from %I r join children c on c.id = r.child_id group by c.family_id, r.child_id',
      kept.table_name,
      kept.table_name
    );
  end loop;
  insert into tallies (family_id, child_id, kind, delta)
  select family_id, null, 'children', count(*) from children group by family_id;
end $$;
