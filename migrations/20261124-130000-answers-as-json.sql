-- A timestamp as the API answers it, for answers the database writes as JSON
-- itself: UTC, with milliseconds, and a Z (as JavaScript's toISOString).
create function api_timestamp(t timestamptz) returns text language sql immutable parallel safe as $$
  select to_char(t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
