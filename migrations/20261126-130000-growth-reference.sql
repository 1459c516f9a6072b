-- The growth chart a child's growth is scored on when a request names none:
-- WHO (the default), CDC 2000, or auto (WHO under 24 months, CDC from 24).
alter table children
  add column growth_reference text not null default 'who' check (growth_reference in ('who', 'cdc', 'auto'));
