-- Changes are ordered without a lock that writers wait on. Each change
-- carries a transaction id (`xid`) and a number from one sequence (`seq`, in
-- the order they are written). The xid is the writing transaction's own, or,
-- when the item's previous change has a later one (the writer waited for that
-- transaction's row lock and wrote after it), that later one: so the changes
-- of one item keep their order. A family's changes are read in (xid, seq)
-- order, and only those whose xid is older than the oldest transaction still
-- running (pg_snapshot_xmin): every transaction before that point has ended,
-- and a transaction still to commit has an xid at or after it, so nothing can
-- later appear before a cursor, and a change that commits late waits until it
-- can be read in its place.
-- Writers of a family's records no longer take the family's clock; only
-- writes that change the family itself (its name, members, roles, children)
-- do, since the family's version moves by one each time.
--
-- Changes recorded before keep their numbers with xid 0, so they come first,
-- in their order, and their cursors go on working.
alter table changes add column xid xid8 not null default '0';
alter table changes alter column xid set default pg_current_xact_id();
create sequence changes_seq_seq owned by changes.seq;
select setval('changes_seq_seq', greatest((select max(seq) from changes), 1), (select max(seq) from changes) is not null);
alter table changes alter column seq set default nextval('changes_seq_seq');
create index changes_order_idx on changes (family_id, xid, seq);
alter table family_clocks drop column seq;

-- What lists, ETags and the families' clocks count, kept as deltas: each
-- writing statement adds a row (no row is shared, so writers never wait on
-- each other), readers sum the rows of a child or a family, and the rows of
-- a key are folded into one from time to time. `kind` 'changes' counts a
-- child's changes (child_id null: the family's own); every commit adds at
-- least one, so the count names what a reader sees.
create table tallies (
  id bigserial primary key,
  family_id integer not null,
  child_id integer,
  kind text not null,
  delta bigint not null
);
create index tallies_child_idx on tallies (child_id, kind) where child_id is not null;
create index tallies_family_idx on tallies (family_id, kind);

-- Folds the rows of one key into one. Rows another folder holds are left to
-- it: a fold never waits.
create function fold_tallies(f integer, c integer, k text) returns void language plpgsql as $$
declare
  total bigint;
  folded integer;
begin
  with gone as (
    delete from tallies where id in (
      select id from tallies
      where family_id = f and child_id is not distinct from c and kind = k
      for update skip locked
    )
    returning delta
  )
  select sum(delta), count(*) into total, folded from gone;
  if folded > 0 then
    insert into tallies (family_id, child_id, kind, delta) values (f, c, k, total);
  end if;
end $$;

-- Adds a delta; one write in 16 folds its key.
create function add_tally(f integer, c integer, k text, d bigint) returns void language plpgsql as $$
begin
  insert into tallies (family_id, child_id, kind, delta) values (f, c, k, d);
  if random() < 1.0 / 16 then
    perform fold_tallies(f, c, k);
  end if;
end $$;

-- The number of changes of a child, or of a whole family.
create function child_changes(c integer) returns bigint language sql stable as $$
  select coalesce(sum(delta), 0)::bigint from tallies where child_id = c and kind = 'changes'
$$;
create function family_changes(f integer) returns bigint language sql stable as $$
  select coalesce(sum(delta), 0)::bigint from tallies where family_id = f and kind = 'changes'
$$;

-- A deleted family's tallies go with it.
create function drop_family_tallies() returns trigger language plpgsql as $$
begin
  delete from tallies where family_id in (select id from removed);
  return null;
end $$;
create trigger drop_tallies after delete on families referencing old table as removed for each statement execute function drop_family_tallies();

insert into tallies (family_id, child_id, kind, delta)
select family_id, child_id, 'changes', count(*) from changes group by family_id, child_id;

-- A write declares its user; a write of the family itself also takes the
-- family's clock before any row, so that those writers lock in one order.
create or replace function begin_change(f integer, actor integer) returns void language plpgsql as $$
begin
  perform set_config('app.user_id', coalesce(actor::text, ''), true);
end $$;

create function begin_family_change(f integer, actor integer) returns void language plpgsql as $$
begin
  perform set_config('app.user_id', coalesce(actor::text, ''), true);
  if f is not null then
    perform 1 from family_clocks where family_id = f for update;
  end if;
end $$;

-- The xid a change of an item is ordered by: the writing transaction's own,
-- or its item's previous change's when that is later. The writer holds the
-- item's lock, so that previous change has committed and is seen here.
create function change_xid(k text, r integer) returns xid8 language sql volatile as $$
  select greatest(pg_current_xact_id(), (select p.xid from changes p where p.kind = k and p.record_id = r order by p.seq desc limit 1))
$$;

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
  perform add_tally(f, c, 'changes', 1);
  if touches_family then
    insert into changes (family_id, xid, kind, record_id, child_id, op, version, user_id, record)
    values (f, change_xid('family', f), 'family', f, null, 'updated', family_version, change_actor(), family_snapshot(f, family_version));
    perform add_tally(f, null, 'changes', 1);
  end if;
end $$;
