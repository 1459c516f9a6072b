-- A webhook sends the family's changes (notes, members' e-mail addresses)
-- to a URL its maker chose, so it delivers only while its maker is an owner
-- of the family with an enabled account. It stops at once, for good, in the
-- transaction that ends that: the maker removed from the family or leaving
-- it, demoted below owner, disabled or deleted, whichever path does it (a
-- route, an administrator, the command line). The stop is recorded as the
-- webhook's disabled_at and reason; the delivery checks the maker as well.
create index webhooks_created_by_idx on webhooks (created_by);

create function stop_webhooks_of(maker integer, family integer, reason text) returns void language sql as $$
  update webhooks set disabled_at = now(), disabled_reason = reason, next_attempt_at = null
  where created_by = maker and (family is null or family_id = family) and disabled_at is null
$$;

-- A member that leaves is the user who writes (see change_actor).
create function stop_webhooks_of_member() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    perform stop_webhooks_of(old.user_id, old.family_id, case
      when old.user_id = change_actor() then 'Its maker left the family'
      else 'Its maker was removed from the family'
    end);
  else
    perform stop_webhooks_of(new.user_id, new.family_id, 'Its maker is no longer an owner of the family');
  end if;
  return null;
end $$;

create function stop_webhooks_of_account() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    perform stop_webhooks_of(old.id, null, 'Its maker''s account was deleted');
    return old;
  end if;
  perform stop_webhooks_of(new.id, null, 'Its maker''s account was disabled');
  return null;
end $$;

create trigger stop_webhooks_of_member after delete on family_members
  for each row execute function stop_webhooks_of_member();
create trigger stop_webhooks_of_demoted after update of role on family_members
  for each row when (new.role <> 'owner') execute function stop_webhooks_of_member();
create trigger stop_webhooks_of_disabled after update of disabled on users
  for each row when (new.disabled and not old.disabled) execute function stop_webhooks_of_account();
-- Before the row goes: its memberships' cascade would name another reason.
create trigger stop_webhooks_of_deleted before delete on users
  for each row execute function stop_webhooks_of_account();

-- Webhooks whose maker is already no owner stop now.
update webhooks w set
  disabled_at = now(), next_attempt_at = null,
  disabled_reason = case when w.created_by is null then 'Its maker''s account was deleted' else 'Its maker is no longer an owner of the family' end
where w.disabled_at is null and not exists (
  select 1 from family_members m join users u on u.id = m.user_id
  where m.family_id = w.family_id and m.user_id = w.created_by and m.role = 'owner' and not u.disabled
);
