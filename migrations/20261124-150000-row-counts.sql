-- Counts of the tables that grow, kept as they change, so that the
-- administrators' statistics never read every row. Each writing statement
-- adds one row of deltas (no row is shared, so writers never wait on each
-- other); a reader sums them, and folds them into one row a table from time
-- to time.
create table row_counts (
  id bigserial primary key,
  table_name text not null,
  delta_rows bigint not null,
  delta_bytes bigint not null default 0
);

-- The argument names the column of stored bytes, if the table has one.
-- `app.tracking = off` pauses it for a restore, which loads the counts of its backup.
create function count_rows() returns trigger language plpgsql as $$
declare
  bytes text := case when tg_nargs > 0 then format('coalesce(sum(%I), 0)', tg_argv[0]) else '0' end;
begin
  if current_setting('app.tracking', true) = 'off' then
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

-- Counts every table afresh, to repair the kept counts.
create function recount_rows() returns void language plpgsql as $$
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
  ) counted (table_name, n, bytes)
  where n <> 0 or bytes <> 0;
end $$;

create trigger count_added after insert on users referencing new table as added for each statement execute function count_rows();
create trigger count_removed after delete on users referencing old table as removed for each statement execute function count_rows();
create trigger count_added after insert on families referencing new table as added for each statement execute function count_rows();
create trigger count_removed after delete on families referencing old table as removed for each statement execute function count_rows();
create trigger count_added after insert on children referencing new table as added for each statement execute function count_rows('avatar_size_bytes');
create trigger count_removed after delete on children referencing old table as removed for each statement execute function count_rows('avatar_size_bytes');
create trigger count_changed after update on children referencing old table as removed new table as added for each statement execute function count_rows('avatar_size_bytes');
create trigger count_added after insert on visits referencing new table as added for each statement execute function count_rows();
create trigger count_removed after delete on visits referencing old table as removed for each statement execute function count_rows();
create trigger count_added after insert on measurements referencing new table as added for each statement execute function count_rows();
create trigger count_removed after delete on measurements referencing old table as removed for each statement execute function count_rows();
create trigger count_added after insert on medical_events referencing new table as added for each statement execute function count_rows();
create trigger count_removed after delete on medical_events referencing old table as removed for each statement execute function count_rows();
create trigger count_added after insert on illnesses referencing new table as added for each statement execute function count_rows();
create trigger count_removed after delete on illnesses referencing old table as removed for each statement execute function count_rows();
create trigger count_added after insert on attachments referencing new table as added for each statement execute function count_rows('size_bytes');
create trigger count_removed after delete on attachments referencing old table as removed for each statement execute function count_rows('size_bytes');

-- The triggers hold their tables' locks until this commits, so the counts
-- taken here miss no write.
select recount_rows();

-- Active sessions are counted through an index of the ones not revoked.
create index sessions_active_idx on sessions (expires_at) where revoked_at is null;

-- The administrators are counted through an index of their own.
create index users_admins_idx on users (id) where role = 'admin';

-- The administrators' lists of users and families are read in the order of
-- an index, a page at a time, however many there are.
create index users_name_idx on users (lower(name), id);
create index families_name_idx on families (lower(name), id);
create index families_created_at_idx on families (created_at, id);
