import { randomUUID } from 'node:crypto'
import type { Sql } from '../../db/client'
import { errors } from '../../lib/errors'
import type { SummarySection } from '../../lib/fhir'
import { hashPassword, passwordKey } from '../../io/passwords'
import { encryptFile, FHIR_JSON, newKey, qrDataUrl, randomToken, shlink, tokenHash, viewerLink } from '../../lib/shares/link'
import { SNAPSHOT } from '../../sql/export'
import { insertShare, lockActiveShareCount } from '../../sql/shares'
import { findUser } from '../../sql/users'
import type { GrowthCharts } from '../export/child-records'
import { readSummaryRecords, summaryBundle, withFileData } from './summary'

/** Active links a child may have at once. */
export const ACTIVE_SHARES_PER_CHILD = 20

/** The most bytes of attachment files one link carries. */
export const SHARE_FILES_MAX_BYTES = 10 * 1024 * 1024

/** Where the manifest of a link answers, below the service's address. */
export const MANIFEST_PATH = '/api/shl/'

export interface NewLink {
  childId: number
  userId: number
  label: string
  expiresAt: Date
  passcode: string | null
  sections: readonly SummarySection[]
}

export interface LinkSettings {
  charts: GrowthCharts
  uploadDir: string
  bcryptCost: number
  /** PUBLIC_URL, or null: the QR code then holds the bare link. */
  publicUrl: string | null
  /** The service's address the manifest URL starts with: PUBLIC_URL, or the request's. */
  base: string
}

export interface MadeLink {
  id: number
  link: string
  qr: string
}

/**
 * Makes a share link of a child: its summary is read in one snapshot, built
 * as a FHIR document, and encrypted once with a fresh key. The database
 * keeps the encrypted file, the hash of the manifest's token and the hash
 * of the passcode; the key and the token are only in the link answered.
 */
export async function makeLink (sql: Sql, input: NewLink, settings: LinkSettings): Promise<MadeLink> {
  if (await sql.begin(tx => lockActiveShareCount(tx, input.childId)) >= ACTIVE_SHARES_PER_CHILD) throw tooMany()
  const { records, author } = await sql.begin(SNAPSHOT, async tx => ({
    records: await readSummaryRecords(tx, input.childId, input.sections, settings.charts),
    author: (await findUser(tx, input.userId))?.name ?? null
  }))
  records.attachments = await withFileData(records.attachments, settings.uploadDir, SHARE_FILES_MAX_BYTES)
  const bundle = summaryBundle(records, { id: randomUUID(), title: input.label, author, sections: input.sections })
  const key = newKey()
  const content = await encryptFile(Buffer.from(JSON.stringify(bundle)), key, FHIR_JSON)
  const passcodeHash = input.passcode === null ? null : await hashPassword(input.passcode, settings.bcryptCost, passwordKey.user(input.userId))
  const token = randomToken()
  const id = await sql.begin(async tx => {
    if (await lockActiveShareCount(tx, input.childId) >= ACTIVE_SHARES_PER_CHILD) throw tooMany()
    return await insertShare(tx, {
      childId: input.childId,
      createdBy: input.userId,
      label: input.label,
      sections: input.sections,
      tokenHash: tokenHash(token),
      passcodeHash,
      expiresAt: input.expiresAt,
      content
    })
  })
  const link = shlink({ url: settings.base + MANIFEST_PATH + token, key, expiresAt: input.expiresAt, passcode: passcodeHash !== null, label: input.label })
  return { id, link, qr: await qrDataUrl(viewerLink(link, settings.publicUrl)) }
}

function tooMany (): Error {
  return new errors.conflict(`A child may have at most ${ACTIVE_SHARES_PER_CHILD} active share links: revoke one first`)
}
