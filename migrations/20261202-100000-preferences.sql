-- What every text made for a user is written in: the units, the language
-- and the time zone. The JSON of the API stays in SI units whatever they say.
alter table users
  add column units text not null default 'metric' check (units in ('metric', 'imperial')),
  add column language text not null default 'en' check (language in ('en', 'de', 'fr', 'es')),
  add column time_zone text not null default 'UTC' check (char_length(time_zone) between 1 and 64);
