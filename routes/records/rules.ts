import type { FastifyRequest } from 'fastify'
import type { Db } from '../../db/client'
import { invalidRequest } from '../../lib/errors'
import { childFacts } from '../../sql/children'
import { visitDateOf, type VisitLinkTable } from '../../sql/records'
import { KINDS, type RegisteredKind } from '../../kinds'
import { nounOf } from '../../kinds/kind'
import { NO_VISIT, ruleIssues, type LinkedVisit } from '../../kinds/rules'

type Values = Record<string, unknown>

/** The visit a body links to, share-locked for the rest of the transaction. */
async function linkedVisit (db: Db, body: Values, childId: number): Promise<LinkedVisit> {
  if (typeof body.visitId !== 'number') return NO_VISIT
  const date = await visitDateOf(db, body.visitId, childId)
  return { ofChild: date !== undefined, date: date ?? null }
}

/** The rules between records: dates within the child's life, links to a visit of the same child on or before the record's date. */
export async function checkRules (db: Db, spec: RegisteredKind, request: FastifyRequest, body: Values, childId: number): Promise<void> {
  const visit = await linkedVisit(db, body, childId)
  const child = spec.childRules?.applies(body) === true ? await childFacts(db, childId) : undefined
  const issues = ruleIssues(spec, body, request.scope.childBirth, visit, child ?? { scheduleId: null })
  if (issues.length > 0) throw invalidRequest(issues)
}

/** The kinds whose records link to records of `spec` by its `linkedAs` field, with the column of their own date. */
export function linkingTables (spec: RegisteredKind): VisitLinkTable[] {
  const field = spec.linkedAs
  if (field === undefined) return []
  return KINDS.filter(kind => kind.writable.includes(field) && kind.dates.length > 0).map(kind => {
    const by = kind.visitBy ?? { field: kind.dates[0] }
    return { kind: nounOf(kind), table: kind.table, dateColumn: kind.columns[by.field], ongoing: by.ongoing === true }
  })
}
