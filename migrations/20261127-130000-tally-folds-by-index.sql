-- A fold of a key's tallies finds its rows by index.
--
-- The triggers name a key's kind by the table's name (tg_table_name), whose
-- type `name` compares with the "C" collation. Passed to fold_tallies, that
-- collation became the function's, so `kind = k` could not use the indexes
-- on (family_id, kind) and (child_id, kind): each fold read every tally row
-- of the family, dead ones included, and a family's writes grew slower with
-- its history until a vacuum. `child_id is not distinct from c` could not use
-- the index by child either. Each branch now names its index's columns.
create or replace function fold_tallies(f integer, c integer, k text) returns void language plpgsql as $$
declare
  kind_of text collate "default" := k;
  total bigint;
  total_changes bigint;
  folded integer;
begin
  if c is null then
    with gone as (
      delete from tallies where id in (
        select id from tallies
        where family_id = f and kind = kind_of and child_id is null
        for update skip locked
      )
      returning delta, changes
    )
    select sum(delta), sum(changes), count(*) into total, total_changes, folded from gone;
  else
    with gone as (
      delete from tallies where id in (
        select id from tallies
        where child_id = c and kind = kind_of
        for update skip locked
      )
      returning delta, changes
    )
    select sum(delta), sum(changes), count(*) into total, total_changes, folded from gone;
  end if;
  if folded > 0 then
    insert into tallies (family_id, child_id, kind, delta, changes) values (f, c, kind_of, total, total_changes);
  end if;
end $$;
