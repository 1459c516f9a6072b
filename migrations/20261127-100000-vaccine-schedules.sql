-- Vaccine schedules: a child may follow one of the schedules the service
-- ships as data (schedules/*.json, by id; null: none), and a vaccine record
-- may name the series of that schedule it is a dose of (e.g. DTaP). The ids
-- and codes are checked against the shipped schedules by the service; the
-- database holds their form, and that only a vaccine names a series.
alter table children
  add column schedule_id text check (schedule_id ~ '^[a-z0-9-]{1,40}$');

alter table medical_events
  add column vaccine text check (vaccine ~ '^[A-Za-z0-9-]{1,20}$'),
  add constraint medical_events_series_only_vaccine check (type = 'vaccine' or vaccine is null);
