import type { Sql } from '../../db/client'
import { errors, withBodyFields, withDetails, withRetryAfter } from '../../lib/errors'
import { passwordKey, verifyPassword } from '../../io/passwords'
import { MAX_PASSWORD_BYTES } from '../../lib/account-schemas'
import { FHIR_JSON, randomToken, tokenHash } from '../../lib/shares/link'
import {
  insertFileLink, openLink, refuseMissingPasscode, refuseWrongPasscode, refuseUnchecked, servePasscodeLink, takeAttempt, useFileLink
} from '../../sql/shares'
import { MANIFEST_PATH } from './links'

/** How long a file's `location` may be used, in seconds: the specification's most. */
export const LOCATION_SECONDS = 3600

/** Where a file's short-lived address answers, below the service's address. */
export const FILES_PATH = `${MANIFEST_PATH}files/`

/** The one answer of every link that cannot be served, whatever the reason: gone, never there, or not a link at all. */
export function linkNotFound (): Error {
  return new errors.notFound('Share link')
}

/** A 401 with `remainingAttempts` at the top of its body, as SMART Health Links write it, and in `details` too. */
function passcodeRefused (message: string, remainingAttempts: number): Error {
  return withBodyFields(withDetails(new errors.passcodeInvalid(message), { remainingAttempts }), { remainingAttempts })
}

export interface ManifestRequest {
  recipient: string
  /** The client's address, as the access log shows it. */
  address: string
  passcode?: string
  embeddedLengthMax?: number
}

export type ManifestFile = { contentType: string, lastUpdated: string, status: 'finalized', fhirVersion: string } & ({ embedded: string } | { location: string })

/**
 * A link's encrypted file for a manifest request, the request logged in the
 * link's access log. A link that has ended or never existed is the same 404.
 * A passcode is checked in bcrypt's fair turns, one check per attempt the
 * link has left, taken before the check: at once, no more than the link's
 * attempts are ever checked. A wrong one is a 401 with `remainingAttempts`;
 * the last kills the link.
 */
async function linkFile (sql: Sql, token: string, request: ManifestRequest): Promise<{ id: number, content: string, createdAt: Date }> {
  const who = { recipient: request.recipient, address: request.address }
  const found = await openLink(sql, tokenHash(token), who)
  if (found === undefined || !found.live) throw linkNotFound()
  if (!found.needsPasscode) return { id: found.id, content: found.content as string, createdAt: found.createdAt }
  if (request.passcode === undefined || request.passcode === '') {
    throw passcodeRefused('This link needs its passcode', await refuseMissingPasscode(sql, found.id, who))
  }
  const taken = await takeAttempt(sql, found.id)
  if (taken !== 'taken') await refuseUnchecked(sql, found.id, taken === 'gone' ? 'refused' : 'busy', who)
  if (taken === 'gone') throw linkNotFound()
  if (taken === 'busy') {
    throw withRetryAfter(new errors.rateLimited('Other passcodes of this link are being checked; retry in 1 second'), 1)
  }
  let right: boolean
  try {
    // bcrypt reads 72 bytes: a longer passcode is none that was set.
    right = Buffer.byteLength(request.passcode) <= MAX_PASSWORD_BYTES &&
      await verifyPassword(request.passcode, found.passcodeHash as string, passwordKey.share(found.id))
  } catch (error) {
    // Its turn was refused (429), or the check failed: the attempt was not used.
    await refuseUnchecked(sql, found.id, 'busy', who, true)
    throw error
  }
  if (!right) throw passcodeRefused('The passcode is wrong', await refuseWrongPasscode(sql, found.id, who))
  const content = await servePasscodeLink(sql, found.id, who)
  if (content === null) throw linkNotFound()
  return { id: found.id, content, createdAt: found.createdAt }
}

/**
 * The manifest of a link: its one file, the summary as a FHIR document,
 * embedded, or at a `location` valid for one download within an hour when
 * it is longer than the client's `embeddedLengthMax`.
 */
export async function manifestOf (sql: Sql, token: string, request: ManifestRequest, base: string): Promise<{ files: ManifestFile[] }> {
  const file = await linkFile(sql, token, request)
  const about = { contentType: FHIR_JSON, lastUpdated: file.createdAt.toISOString(), status: 'finalized' as const, fhirVersion: '4.0.1' }
  if (request.embeddedLengthMax === undefined || file.content.length <= request.embeddedLengthMax) {
    return { files: [{ ...about, embedded: file.content }] }
  }
  const ticket = randomToken()
  await insertFileLink(sql, file.id, tokenHash(ticket), LOCATION_SECONDS)
  return { files: [{ ...about, location: base + FILES_PATH + ticket }] }
}

/** The file at a short-lived address, once; a used, expired or unknown address, or a link that has ended, is the same 404. */
export async function fileAt (sql: Sql, ticket: string): Promise<string> {
  const content = await useFileLink(sql, tokenHash(ticket))
  if (content === undefined) throw linkNotFound()
  return content
}
