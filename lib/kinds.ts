import { avatarUrl, uploadUrl } from './files/names'
import { linkFields } from './attachment-links'

/**
 * How a stored row of a family, a member, a child or an attachment reads in
 * the API. The kinds of a child's records are described in kinds/, each by
 * its module.
 */

type Row = Record<string, unknown>

/** Timestamps in the change log are text; the API answers them as dates in UTC. */
function timestamps (row: Row, names: string[]): Row {
  for (const name of names) {
    if (typeof row[name] === 'string') row[name] = new Date(row[name] as string)
  }
  return row
}

/** The kinds of the change log that are not a child's records. */
export type OtherKind = 'family' | 'member' | 'child' | 'attachment'

/**
 * A row of a family, a member, a child or an attachment as the change log
 * keeps it (the table's columns) in the shape the kind's GET answers. A
 * family answers its own fields; the reader's role is added by the caller.
 */
export function presentOther (kind: OtherKind, row: Row): Row {
  switch (kind) {
    case 'family':
      return timestamps({
        id: row.id,
        name: row.name,
        memberCount: row.member_count ?? null,
        childCount: row.child_count ?? null,
        version: row.version,
        createdAt: row.created_at
      }, ['createdAt'])
    case 'member':
      return timestamps({ userId: row.user_id, name: row.name, email: row.email, role: row.role, joinedAt: row.joined_at }, ['joinedAt'])
    case 'child':
      return timestamps({
        id: row.id,
        familyId: row.family_id,
        name: row.name,
        dateOfBirth: row.date_of_birth,
        sex: row.sex,
        avatarUrl: row.avatar_name === null || row.avatar_name === undefined ? null : avatarUrl(row.avatar_name as string),
        gestationalAgeAtBirthWeeks: row.gestational_age_weeks ?? null,
        gestationalAgeAtBirthDays: row.gestational_age_days ?? null,
        growthReference: row.growth_reference ?? 'who',
        scheduleId: row.schedule_id ?? null,
        version: row.version,
        createdAt: row.created_at,
        updatedAt: row.updated_at
      }, ['createdAt', 'updatedAt'])
    case 'attachment':
      return timestamps({
        id: row.id,
        childId: row.child_id,
        ...linkFields(row),
        fileName: row.file_name,
        contentType: row.content_type,
        sizeBytes: row.size_bytes,
        url: uploadUrl(row.stored_name as string),
        version: row.version,
        createdAt: row.created_at
      }, ['createdAt'])
  }
}
