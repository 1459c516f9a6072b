-- The service keeps no part of the answers of the places it sends to: a
-- webhook attempt's answer and the text after a failing status of ntfy or a
-- push service, kept before, go; the statuses stay.
update webhook_deliveries set response_excerpt = null where response_excerpt is not null;
update notification_channels
  set last_failure_reason = regexp_replace(last_failure_reason, '^((ntfy|The push service) answered [0-9]{3}( \(the subscription is gone\))?): .*$', '\1')
  where last_failure_reason ~ '^(ntfy|The push service) answered [0-9]{3}( \(the subscription is gone\))?: ';
update reminder_deliveries
  set last_error = regexp_replace(last_error, '^((ntfy|The push service) answered [0-9]{3}( \(the subscription is gone\))?): .*$', '\1')
  where last_error ~ '^(ntfy|The push service) answered [0-9]{3}( \(the subscription is gone\))?: ';
