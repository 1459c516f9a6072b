import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import type { AttachmentOf } from '../lib/fhir'
import { uploadUrl } from '../lib/files/names'
import { conditions } from './records'
import { readPage, type Page, type PageRequest } from './list'
import { ATTACHMENT_LINKS, ATTACHMENT_LINK_FIELDS } from '../lib/attachment-links'

type Fragment = PendingQuery<Row[]>

export interface Attachment extends AttachmentOf<Date> {
  version: number
}

export interface AttachmentLinks {
  visitId?: number
  measurementId?: number
  illnessId?: number
}

export interface NewAttachment extends AttachmentLinks {
  fileName: string
  storedName: string
  contentType: string
  sizeBytes: number
}

export const attachmentSorts = { createdAt: 'created_at', fileName: 'file_name', sizeBytes: 'size_bytes' }

/** An attachment as the API answers it. */
export const attachmentColumns = (db: Db): Fragment => db`
  id, child_id as "childId", visit_id as "visitId", measurement_id as "measurementId", illness_id as "illnessId",
  file_name as "fileName", content_type as "contentType", size_bytes as "sizeBytes",
  ${uploadUrl('')}::text || stored_name as url, version, created_at as "createdAt"
`

function linkFilters (db: Db, links: AttachmentLinks): Fragment[] {
  return ATTACHMENT_LINK_FIELDS
    .filter(field => links[field] !== undefined)
    .map(field => db`and ${db(ATTACHMENT_LINKS[field].column)} = ${links[field] as number}`)
}

export async function listAttachments (
  db: Db, childId: number, links: AttachmentLinks, order: Fragment, page: PageRequest
): Promise<Page<Attachment>> {
  const filters = linkFilters(db, links)
  const where = db`where child_id = ${childId} ${conditions(db, filters)}`
  // A child's whole list has its total kept; a filtered one counts it.
  const count = filters.length === 0
    ? db`child_rows(${childId}, 'attachments')`
    : db`(select count(*) from attachments ${where})`
  return await readPage<Attachment>(db, { ...page, select: attachmentColumns(db), from: db`from attachments ${where}`, order, count })
}

export async function findAttachment (db: Db, id: number): Promise<Attachment | undefined> {
  const [row] = await db<Attachment[]>`select ${attachmentColumns(db)} from attachments where id = ${id}`
  return row
}

export async function insertAttachment (db: Db, childId: number, values: NewAttachment): Promise<Attachment> {
  const [row] = await db<Attachment[]>`
    insert into attachments (child_id, visit_id, measurement_id, illness_id, file_name, stored_name, content_type, size_bytes)
    values (
      ${childId}, ${values.visitId ?? null}, ${values.measurementId ?? null}, ${values.illnessId ?? null},
      ${values.fileName}, ${values.storedName}, ${values.contentType}, ${values.sizeBytes}
    )
    returning ${attachmentColumns(db)}
  `
  return row
}

/**
 * Deletes an attachment and answers its stored name, for the file to be
 * removed after the commit; with `expectedVersion`, only while it still has it.
 */
export async function deleteAttachment (db: Db, id: number, expectedVersion: number | null = null): Promise<string | undefined> {
  const [row] = await db<{ storedName: string }[]>`
    delete from attachments
    where id = ${id} ${expectedVersion === null ? db`` : db`and version = ${expectedVersion}`}
    returning stored_name as "storedName"
  `
  return row?.storedName
}

/** The link fields that do not name a record of this child. */
export async function foreignLinks (db: Db, childId: number, links: AttachmentLinks): Promise<Array<keyof AttachmentLinks>> {
  const wrong: Array<keyof AttachmentLinks> = []
  for (const field of ATTACHMENT_LINK_FIELDS) {
    const id = links[field]
    if (id === undefined) continue
    const [row] = await db`select 1 from ${db(ATTACHMENT_LINKS[field].kind)} where id = ${id} and child_id = ${childId}`
    if (row === undefined) wrong.push(field)
  }
  return wrong
}

/** Which of these stored names still belong to an attachment. */
/** The name an attachment was uploaded with, by its stored name. */
export async function uploadedName (db: Db, storedName: string): Promise<string | undefined> {
  const [row] = await db<Array<{ fileName: string }>>`select file_name as "fileName" from attachments where stored_name = ${storedName}`
  return row?.fileName
}

export async function storedNamesInUse (db: Db, names: string[]): Promise<Set<string>> {
  const rows = await db<{ name: string }[]>`select stored_name as name from attachments where stored_name in ${db(names)}`
  return new Set(rows.map(row => row.name))
}
