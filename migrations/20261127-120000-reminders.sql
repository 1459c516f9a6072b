-- Reminders: each user's settings (quiet hours in a time zone), the channels
-- reminders go to, and every reminder made for a channel. The job queue that
-- sends them (graphile-worker) keeps its own schema, graphile_worker, which
-- it installs itself at start; these tables hold all the state a backup
-- needs, and a reminder still to send gets its job again from the scan.
create table notification_settings (
  user_id integer primary key references users (id) on delete cascade,
  quiet_from time,
  quiet_to time,
  time_zone text,
  updated_at timestamptz not null default now(),
  check ((quiet_from is null) = (quiet_to is null) and (quiet_from is null) = (time_zone is null)),
  check (quiet_from is distinct from quiet_to or quiet_from is null)
);

-- A channel is verified by a test message before it is stored. target holds
-- what the API shows ({ address }, { url } or { subscription }); target_key
-- is what makes two channels the same, so that an unchanged channel keeps
-- its row, its history and its reminders when the settings are replaced.
create table notification_channels (
  id serial primary key,
  user_id integer not null references users (id) on delete cascade,
  position integer not null,
  type text not null check (type in ('email', 'ntfy', 'webpush')),
  target jsonb not null,
  target_key text not null,
  verified_at timestamptz not null,
  last_delivery_at timestamptz,
  last_failure_at timestamptz,
  last_failure_reason text,
  last_failure_gave_up boolean not null default false,
  created_at timestamptz not null default now(),
  unique (user_id, target_key)
);

-- One row per user, channel and item: the unique key is what makes a
-- reminder leave once, after a restart and with several instances alike.
create table reminder_deliveries (
  id serial primary key,
  user_id integer not null references users (id) on delete cascade,
  channel_id integer not null references notification_channels (id) on delete cascade,
  item_key text not null,
  family_id integer not null references families (id) on delete cascade,
  child_id integer not null references children (id) on delete cascade,
  title text not null,
  body text not null,
  status text not null default 'pending' check (status in ('pending', 'sending', 'sent', 'given_up', 'cancelled')),
  attempts integer not null default 0,
  claimed_at timestamptz,
  sent_at timestamptz,
  last_error text,
  created_at timestamptz not null default now(),
  unique (user_id, channel_id, item_key)
);
create index reminder_deliveries_channel_idx on reminder_deliveries (channel_id);
create index reminder_deliveries_family_idx on reminder_deliveries (family_id);
create index reminder_deliveries_child_idx on reminder_deliveries (child_id);
create index reminder_deliveries_open_idx on reminder_deliveries (id) where status in ('pending', 'sending');

-- The end of the quiet hours a moment falls in, or null when it falls in
-- none: quiet hours are a span of local time in a time zone, from `from` up
-- to `to`, across midnight when `to` comes first.
create function quiet_hours_end(quiet_from time, quiet_to time, time_zone text, at timestamptz)
returns timestamptz language sql stable as $$
  select case
    when quiet_from is null then null
    when (quiet_from < quiet_to and local::time >= quiet_from and local::time < quiet_to)
      or (quiet_from > quiet_to and (local::time >= quiet_from or local::time < quiet_to))
    then ((local::date + case when local::time < quiet_to then 0 else 1 end) + quiet_to) at time zone time_zone
  end
  from (select at at time zone time_zone as local) moment
$$;
