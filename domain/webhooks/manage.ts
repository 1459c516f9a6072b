import type { Sql } from '../../db/client'
import { encodeCursor } from '../../kinds/changes'
import type { Config } from '../../io/config'
import { errors, invalidRequest } from '../../lib/errors'
import { destinationIssue, outboundRule } from '../../outbound/address'
import { newSecret } from '../../lib/webhooks/sign'
import { lockOwner } from '../../sql/families'
import { countWebhooksLocked, createWebhook, queueWebhook, type WebhookRow } from '../../sql/webhooks'

/** A webhook as the API answers it. */
export function presentWebhook (familyId: number, row: WebhookRow) {
  const { epoch, xid, seq, disabledAt, ...rest } = row
  return { ...rest, disabledAt, enabled: disabledAt === null, cursor: encodeCursor({ familyId, epoch, xid, seq }) }
}

/**
 * Makes a webhook of a family, with a new secret, unless the family has
 * `max` already. A URL the outbound rule refuses, written so or resolved
 * so now, is a 400 (a name is resolved and judged again at each delivery).
 * The maker stays an owner until the webhook is made, so that a demotion
 * meanwhile stops it too.
 */
export async function createFamilyWebhook (
  sql: Sql, config: Config, hook: { familyId: number, userId: number, url: string, events: string[] | null, max: number }
) {
  const issue = await destinationIssue(hook.url, outboundRule(config.webhookAllowPrivate, config.host), '/body/url')
  if (issue !== null) throw invalidRequest([issue])
  const secret = newSecret()
  const row = await sql.begin(async tx => {
    if (await countWebhooksLocked(tx, hook.familyId) >= hook.max) throw new errors.conflict(`A family has at most ${hook.max} webhooks`)
    // Demoted, removed or disabled since the request began: no webhook of theirs.
    if (!(await lockOwner(tx, hook.familyId, hook.userId))) throw new errors.forbidden()
    const made = await createWebhook(tx, { familyId: hook.familyId, url: hook.url, secret, events: hook.events, createdBy: hook.userId })
    // Its queue is made now, so that the first writers do not make it at once.
    if (made !== undefined) await queueWebhook(tx, made.id, null, 'replace')
    return made
  })
  if (row === undefined) throw new errors.notFound('Family')
  return { ...presentWebhook(hook.familyId, row), secret }
}
