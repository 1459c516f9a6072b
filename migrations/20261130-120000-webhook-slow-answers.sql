-- A receiver that answers 2xx, but later than WEBHOOK_SLOW_MS, is backed off
-- as a failing one is: its webhook counts the slow answers in a row (a fast
-- one ends them) and waits before its next attempt (next_attempt_at), longer
-- after each. A slow answer is no failure: the change counts as delivered,
-- and a webhook is never disabled for being slow.
alter table webhooks add column slow_answers integer not null default 0;
