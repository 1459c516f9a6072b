-- When a user's e-mail address last changed, so that an invite bound to an
-- address goes only to an account that registered with it or held it when
-- the invite was made, never to one that took it up afterwards. Null for an
-- address held since the account was made. A change of case alone keeps the
-- address, as addresses are compared lower-cased.
alter table users add column email_changed_at timestamptz;

create function note_email_change() returns trigger language plpgsql as $$
begin
  if lower(new.email) <> lower(old.email) then
    new.email_changed_at := now();
  end if;
  return new;
end $$;

create trigger note_email_change before update of email on users for each row execute function note_email_change();
