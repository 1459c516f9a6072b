-- Gestational age at birth, in completed weeks and days (22+0 to 44+6), for
-- children born preterm, whose growth is scored at their corrected age.
-- Both are unknown by default; days are only given with weeks.
alter table children
  add column gestational_age_weeks smallint check (gestational_age_weeks between 22 and 44),
  add column gestational_age_days smallint check (gestational_age_days between 0 and 6),
  add constraint children_gestational_days_with_weeks check (gestational_age_days is null or gestational_age_weeks is not null);
