-- A webhook's deliveries run in its maker's queue of the job queue, no
-- longer in one queue a webhook: one owner's webhooks, across all their
-- families, take one worker at a time, and so one webhook's deliveries
-- still run one at a time, in order. Each job carries the flags
-- `webhooks_deliver`, its task (a worker skips the tasks at capacity), and
-- `webhook:<id>`, so that the webhook's waiting jobs can be found. A
-- webhook whose maker's account was deleted gets no job: it is stopped.
create or replace function queue_webhooks() returns trigger language plpgsql as $$
declare
  hook record;
begin
  if current_setting('app.tracking', true) = 'off' then
    return null;
  end if;
  for hook in
    select w.id, w.created_by from webhooks w
    where w.family_id in (select distinct family_id from added) and w.disabled_at is null and w.created_by is not null
  loop
    if to_regnamespace('graphile_worker') is null then
      return null;
    end if;
    perform graphile_worker.add_job(
      'webhooks_deliver', json_build_object('webhookId', hook.id),
      queue_name => 'webhooks-by:' || hook.created_by, flags => array['webhooks_deliver', 'webhook:' || hook.id]
    );
  end loop;
  return null;
end $$;

-- The jobs waiting in the queues of before are dropped: the service queues a
-- run of every webhook in its maker's queue when it starts, and a run
-- delivers every change after the last one acknowledged.
do $$
begin
  if to_regnamespace('graphile_worker') is not null then
    perform graphile_worker.complete_jobs(array(
      select id from graphile_worker.jobs
      where task_identifier = 'webhooks_deliver' and queue_name like 'webhook:%' and locked_at is null
    ));
  end if;
end $$;
