import { ifPresent } from './fields'
import { resourceId } from './ids'
import type { Links } from './links'
import type { Attachment } from './records'
import type { DocumentReference, Reference } from './resources'

/**
 * An attachment as a DocumentReference. `related` points to the resources of
 * the measurement or illness it belongs to. The file is its `url`,
 * root-relative as the API gives it, or, when the attachment comes with its
 * bytes (`data`), the bytes themselves and no address.
 */
export function attachmentDocument (attachment: Attachment, links: Links, related: Reference[]): DocumentReference {
  const encounter = links.encounterOf(attachment.visitId)
  const context = {
    ...ifPresent('encounter', encounter === undefined ? null : [encounter]),
    ...ifPresent('related', related.length === 0 ? null : related)
  }
  return {
    resourceType: 'DocumentReference',
    id: resourceId('attachment', attachment.id),
    meta: { lastUpdated: attachment.createdAt },
    status: 'current',
    subject: links.subject,
    date: attachment.createdAt,
    content: [{
      attachment: {
        contentType: attachment.contentType,
        ...(attachment.data === undefined ? { url: attachment.url } : { data: attachment.data }),
        title: attachment.fileName,
        size: attachment.sizeBytes,
        creation: attachment.createdAt
      }
    }],
    ...ifPresent('context', Object.keys(context).length === 0 ? null : context)
  }
}
