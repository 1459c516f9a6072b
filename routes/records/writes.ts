import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Tx } from '../../db/client'
import { errors, invalidRequest } from '../../lib/errors'
import { preconditionFailed } from '../../plugins/access'
import { beginChange } from '../../sql/changes'
import { deleteRecord, insertRecord, linkedBefore, lockParent, lockRecord, recordVersion, replaceRecord } from '../../sql/records'
import type { RegisteredKind } from '../../kinds'
import type { ParentSpec } from '../../kinds/kind'
import { latestAllowedDate } from '../../kinds/rules'
import { checkRules, linkingTables } from './rules'

type Values = Record<string, unknown>

/**
 * The writes of one kind of record whose access the family scope decided
 * before the handler: a create in a transaction of its own (one that writes
 * more than its record, or under a parent record), and the replace, the
 * change and the delete of one record.
 */
export function writesOf (spec: RegisteredKind) {
  const linking = linkingTables(spec)

  /** A record and the record it carries, if any (a visit's measurement), with its change and its rules. */
  async function createApart (request: FastifyRequest, values: Values): Promise<Values> {
    const childId = request.scope.childId as number
    return await request.db.begin(async tx => {
      await beginChange(tx, request.scope.familyId, request.user.id)
      await checkRules(tx, spec, request, values, childId)
      const carried = spec.createsWith
      if (carried === undefined) return await insertRecord(tx, spec, childId, values)
      const { [carried.field]: carriedValues, ...fields } = values
      const created = await insertRecord(tx, spec, childId, fields)
      if (carriedValues == null) return created
      return { ...created, [carried.field]: await insertRecord(tx, carried.kind, childId, { ...carriedValues as Values, ...carried.link(created) }) }
    })
  }

  /** A record under its parent record (a temperature of an illness), the parent locked first. */
  async function createUnder (parent: ParentSpec, request: FastifyRequest): Promise<Values> {
    const values = request.body as Values
    const parentId = (request.params as Values)[parent.param] as number
    const childId = request.scope.childId as number
    await checkRules(request.db, spec, request, values, childId)
    return await request.db.begin(async tx => {
      await beginChange(tx, request.scope.familyId, request.user.id)
      await lockParent(tx, { table: parent.kind.table, column: parent.column }, { parentId })
      return await insertRecord(tx, spec, childId, values, { [parent.column]: parentId })
    })
  }

  /**
   * A write of one record, in a transaction: the family's clock first, then
   * the record's parent, then the row, the order every write takes them in.
   */
  async function writing<T> (request: FastifyRequest, work: (tx: Tx, id: number) => Promise<T>): Promise<T> {
    const id = (request.params as { id: number }).id
    return await request.db.begin(async tx => {
      await beginChange(tx, request.scope.familyId, request.user.id)
      await parentFirst(tx, id)
      return await work(tx, id)
    }) as T
  }

  async function replace (request: FastifyRequest): Promise<Values> {
    const values = request.body as Values
    return await writing(request, async (tx, id) => {
      await checkRules(tx, spec, request, values, request.scope.childId as number)
      await checkLinked(tx, id, values)
      const row = await replaceRecord(tx, spec, id, values, request.scope.expectedVersion)
      if (row === undefined) await changedMeanwhile(tx, id)
      return row as Values
    })
  }

  async function update (request: FastifyRequest): Promise<Values> {
    const changes = request.body as Values
    return await writing(request, async (tx, id) => {
      const current = await lockRecord(tx, spec, id)
      if (current === undefined) throw new errors.notFound(spec.singular)
      const expected = request.scope.expectedVersion
      if (expected !== null && current.version !== expected) throw preconditionFailed(current.version as number)
      const merged: Values = {}
      for (const field of spec.writable) merged[field] = Object.hasOwn(changes, field) ? changes[field] : current[field]
      await checkRules(tx, spec, request, merged, request.scope.childId as number)
      await checkLinked(tx, id, merged)
      if (Object.keys(changes).length === 0) return current
      return await replaceRecord(tx, spec, id, merged) as Values
    })
  }

  async function remove (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    await writing(request, async (tx, id) => {
      if (!(await deleteRecord(tx, spec.table, id, request.scope.expectedVersion))) await changedMeanwhile(tx, id)
    })
    return reply.code(204).send(null)
  }

  /**
   * A record's parent is locked before the record: the parent's derived
   * values move with its records (an illness's highest reading, a course's
   * next dose), and every writer takes the two rows in this order.
   */
  async function parentFirst (tx: Tx, id: number): Promise<void> {
    if (spec.parent !== undefined) await lockParent(tx, { table: spec.parent.kind.table, column: spec.parent.column }, { table: spec.table, id })
  }

  /**
   * The records linked to this one (a visit's) must not come before its
   * new date: they keep their dates and their link, so the date is refused.
   */
  async function checkLinked (tx: Tx, id: number, values: Values): Promise<void> {
    const field = spec.dates[0]
    const date = field === undefined ? undefined : values[field]
    if (linking.length === 0 || typeof date !== 'string') return
    const before = await linkedBefore(tx, id, date, latestAllowedDate(), linking)
    if (before === undefined) return
    throw invalidRequest([{ path: `/body/${field}`, message: `must not be after the date of a record linked to it (${before.kind} ${before.id} on ${before.date})` }])
  }

  /** A guarded write found nothing: the record changed (412) or went (404) since the scope saw it. */
  async function changedMeanwhile (tx: Tx, id: number): Promise<never> {
    const version = await recordVersion(tx, spec.table, id)
    if (version === undefined) throw new errors.notFound(spec.singular)
    throw preconditionFailed(version)
  }

  return { createApart, createUnder, replace, update, remove }
}
