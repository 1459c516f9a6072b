-- Vaccine doses: the dose's number in its series, the vaccine's lot, where on
-- the body it was given, and when the next dose is due (which may lie in the
-- future, but not before the dose itself). Only a vaccine has them.
alter table medical_events
  add column dose_number integer check (dose_number between 1 and 20),
  add column lot_number text check (char_length(lot_number) between 1 and 100 and btrim(lot_number) <> ''),
  add column site text check (char_length(site) between 1 and 100 and btrim(site) <> ''),
  add column next_due_date date check (next_due_date >= date),
  add constraint medical_events_dose_only_vaccine check (
    type = 'vaccine' or (dose_number is null and lot_number is null and site is null and next_due_date is null)
  );

-- The due list reads a child's vaccines, newest dose of each name first.
create index medical_events_vaccine_idx on medical_events (child_id, lower(btrim(name)), date desc, id desc) where type = 'vaccine';
