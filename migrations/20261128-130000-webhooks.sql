-- Webhooks: each change of a family, as the changes feed shows it, POSTed
-- to a URL of the owner's choice, signed per the Standard Webhooks
-- specification, in the feed's order and at least once.
--
-- A webhook keeps the position of the last change it delivered (acknowledged
-- with a 2xx) in the family's changes, and the epoch of the family's data
-- that position belongs to. The secret signs every delivery, so it is kept
-- as given (it is shown once, when the webhook is made).
create table webhooks (
  id serial primary key,
  family_id integer not null references families (id) on delete cascade,
  url text not null,
  secret text not null,
  -- The kinds of change sent; null sends every kind.
  events text[],
  created_by integer references users (id) on delete set null,
  created_at timestamptz not null default now(),
  epoch text not null,
  after_xid xid8 not null,
  after_seq bigint not null,
  last_delivery_at timestamptz,
  -- The failures in a row since the last delivery, and when the first of them happened.
  failures integer not null default 0,
  failing_since timestamptz,
  last_error text,
  -- While failing: when the next attempt may be made (its job waits until then).
  next_attempt_at timestamptz,
  disabled_at timestamptz,
  disabled_reason text
);
create index webhooks_family_idx on webhooks (family_id);

-- Every attempt of a delivery, the latest ones of each webhook kept.
create table webhook_deliveries (
  id bigserial primary key,
  webhook_id integer not null references webhooks (id) on delete cascade,
  change_cursor text not null,
  attempted_at timestamptz not null default now(),
  status_code integer,
  error text,
  duration_ms integer not null,
  -- The first words of the receiver's answer, at most 200 characters.
  response_excerpt text
);
create index webhook_deliveries_webhook_idx on webhook_deliveries (webhook_id, id);

-- A statement that records changes of a family with webhooks adds, in its
-- own transaction, a job for each of them (graphile-worker's add_job, in the
-- queue's schema that the service installs at start): a job exists exactly
-- when the change committed. The jobs of a webhook share one queue, so that
-- its deliveries run one at a time, in order, whatever the instances. They
-- carry no job key: writers of a family would wait on the key's row for one
-- another's commit. A family without webhooks pays one look-up in an index.
-- Loading a backup records nothing; before the queue's schema is installed
-- (a restore before the service ever started) no job is added, and the
-- service queues every webhook when it starts.
create function queue_webhooks() returns trigger language plpgsql as $$
declare
  hook record;
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  for hook in
    select w.id from webhooks w
    where w.family_id in (select distinct family_id from added) and w.disabled_at is null
  loop
    if to_regnamespace('graphile_worker') is null then
      return null;
    end if;
    perform graphile_worker.add_job('webhooks_deliver', json_build_object('webhookId', hook.id), queue_name => 'webhook:' || hook.id);
  end loop;
  return null;
end $$;
create trigger queue_webhooks after insert on changes referencing new table as added for each statement execute function queue_webhooks();
