import { Type } from '@sinclair/typebox'
import { CHANGE_KINDS } from '../../kinds/changes'
import { HttpUrl, OUTBOUND_RULE } from '../../lib/outbound-url'
import { Id, ListOf, Nullable, Pagination, StrictObject, Timestamp } from '../../lib/schemas'

/** How many webhooks a family may have. */
export const MAX_WEBHOOKS = 10

const Events = Type.Array(Type.String({ enum: [...CHANGE_KINDS] }), {
  minItems: 1,
  uniqueItems: true,
  description: 'The kinds of change sent, as the changes feed names them; null or left out: every kind'
})

export const WebhookBody = StrictObject({
  url: HttpUrl('Where each change is POSTed (http or https); a user name and password in it are sent as Basic authentication. ' + OUTBOUND_RULE),
  events: Type.Optional(Nullable(Events))
})

const WebhookFields = {
  id: Id,
  url: Type.String(),
  events: Nullable(Events),
  createdBy: Nullable(Type.Object({ id: Id, name: Type.String() }, {
    description: 'Who made it: it delivers only while this user is an owner of the family with an enabled account. Null once that account is deleted'
  })),
  createdAt: Timestamp,
  enabled: Type.Boolean({
    description: 'false once disabled: after failing for WEBHOOK_GIVE_UP_MS (24 hours by default), or at once when its maker is no longer an owner of the family; ' +
      'enable it again with POST …/enable, which needs its maker to be an owner'
  }),
  cursor: Type.String({ description: 'The changes feed\'s cursor of the last change delivered or passed over (when made: the family\'s last change). The feed\'s changes after it (since=) are still to deliver' }),
  lastDeliveryAt: { ...Nullable(Timestamp), description: 'When a receiver last answered 2xx' },
  failures: Type.Integer({ minimum: 0, description: 'Failed attempts in a row since the last delivery' }),
  failingSince: { ...Nullable(Timestamp), description: 'When the first of those failures happened; null while deliveries succeed' },
  lastError: Nullable(Type.String({ description: 'Why the last failed attempt failed' })),
  slowAnswers: Type.Integer({
    minimum: 0,
    description: 'Answers in a row that were 2xx but slower than WEBHOOK_SLOW_MS (5 s by default): more than 0 while the webhook is slowed. ' +
      'Each waits before the next attempt as a failure would, longer each time; a fast answer ends it. A slow answer delivers its change and never disables the webhook'
  }),
  nextAttemptAt: { ...Nullable(Timestamp), description: 'While failing or slowed: when the next attempt may be made; null once an answer came 2xx and fast' },
  disabledAt: Nullable(Timestamp),
  disabledReason: Nullable(Type.String({
    description: 'Why the webhook was disabled: its deliveries failed for too long, or its maker left the family, was removed from it, ' +
      'is no longer an owner of it, or the maker\'s account was disabled or deleted'
  }))
}

export const Webhook = Type.Object(WebhookFields, { $id: 'Webhook', title: 'Webhook' })

export const CreatedWebhook = Type.Object({
  ...WebhookFields,
  secret: Type.String({ description: 'whsec_ and base64 of 32 random bytes, as Standard Webhooks writes secrets: the key of every signature. Shown only here' })
}, { $id: 'CreatedWebhook', title: 'CreatedWebhook' })

export const WebhookDelivery = Type.Object({
  id: Id,
  at: { ...Timestamp, description: 'When the attempt began' },
  cursor: Type.String({ description: 'The cursor of the change sent: its webhook-id' }),
  statusCode: Nullable(Type.Integer({ description: 'The receiver\'s answer; null when none came' })),
  error: Nullable(Type.String({ description: 'Why the attempt failed, the receiver\'s status or "could not be reached" whatever kept the answer away; null when it was delivered' })),
  durationMs: Type.Integer({ minimum: 0 }),
  response: Nullable(Type.String({ description: 'Always null: the service keeps no part of a receiver\'s answer, its status aside' }))
}, { $id: 'WebhookDelivery', title: 'WebhookDelivery' })

export const WebhookList = ListOf('Webhook')
export const WebhookDeliveryList = ListOf('WebhookDelivery')

export const EnableBody = StrictObject({}, { description: 'empty; may be left out' })

export const ListQuery = Type.Object(Pagination)
export const FamilyParams = StrictObject({ id: Id })
export const WebhookParams = StrictObject({ id: Id, wid: Id })
