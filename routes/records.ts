import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { PendingQuery, Row } from 'postgres'
import type { Tx } from '../db/client'
import { errors, invalidRequest } from '../lib/errors'
import {
  CLOCK_ETAG, ConditionalRead, ConditionalWrite, ITEM_ETAG, Id, IsoDate, NotModified, PATCH_RULE, Pagination, StrictObject, WithETag, errorResponses, patchFields
} from '../lib/schemas'
import { preconditionFailed, type OneStatementCreate } from '../plugins/access'
import { beginChange } from '../sql/changes'
import { orderBy } from '../sql/list'
import {
  deleteRecord, findRecord, insertFrom, insertRecord, linkedBefore, listBody, lockParent, lockRecord, recordVersion, replaceRecord
} from '../sql/records'
import { historyRoute } from './history'
import { KINDS, type RegisteredKind } from '../kinds'
import type { RecordTable } from '../kinds/changes'
import { nounOf, type ParentSpec } from '../kinds/kind'
import { latestAllowedDate, ownDate, ruleIssues } from '../kinds/rules'
import { checkRules, linkingTables } from './record-rules'

export { latestAllowedDate, NO_VISIT, ruleIssues, type Issue } from '../kinds/rules'

type Values = Record<string, unknown>
type Fragment = PendingQuery<Row[]>

/** What makes one kind of a child's records served: its module in kinds/. */
export type RecordSpec = RegisteredKind

/** The kind's name with its article: `a visit`, `an illness`. */
function aNoun (spec: RecordSpec): string {
  const word = nounOf(spec)
  return `${/^[aeiou]/.test(word) ? 'an' : 'a'} ${word}`
}

const JSON_TYPE = 'application/json; charset=utf-8'

const ONE_STATEMENT = 'The token is checked first (401); the session, the family scope and the rules are checked in the statement that writes, after the body is validated: a malformed body is a 400 also for a revoked session, whose well-formed write is a 401 with nothing written.'

/**
 * The routes of one kind of record, in both shapes of the API: under the child
 * (`/api/children/:childId/{kind}`) and flat (`/api/{kind}`, `/api/{kind}/:id`);
 * a kind with a parent is listed and created under the parent instead
 * (`/api/{parent}/:{param}/{kind}`). Access is decided by the family scope
 * before any handler runs.
 */
export function recordRoutes (spec: RecordSpec) {
  const tags = [spec.path]
  const security = [{ bearer: [] }]
  const ref = Type.Ref(spec.schema.$id as string)
  const sortNames = Object.keys(spec.sorts).join(', ')
  const listQuery = {
    ...Pagination,
    sort: Type.Optional(Type.String({ description: `comma-separated fields among ${sortNames}, each optionally prefixed with - (default ${spec.defaultSort}); ties are broken by id` })),
    from: Type.Optional(IsoDate),
    to: Type.Optional(IsoDate),
    ...Object.fromEntries(Object.entries(spec.filters ?? {}).map(([name, filter]) => [name, Type.Optional(Type.String({ enum: [...filter.values] }))]))
  }
  const datedBy = spec.dates[0] ?? spec.timestamps?.[0]
  const mainDate = datedBy === undefined ? undefined : spec.columns[datedBy]
  const mainIsTimestamp = spec.dates.length === 0
  const body = StrictObject(spec.fields)
  const patchBody = StrictObject(patchFields(spec.fields))
  const createBody = StrictObject({ ...spec.fields, ...spec.createFields })
  const flatCreateBody = StrictObject({ childId: Id, ...spec.fields, ...spec.createFields })
  const respond = (row: Values): Values => spec.toResponse?.(row) ?? row
  const linking = linkingTables(spec)

  return async function plugin (fastify: FastifyInstance): Promise<void> {
    const { sql } = fastify
    const answer = { answer: (request: FastifyRequest) => listPage(request) }
    const child = (at: `params.${string}` | `query.${string}`) => fastify.familyScope({ target: { child: at }, name: 'Child', etag: 'child', cache: true, oneStatement: answer })
    const createIn = (at: `params.${string}` | `body.${string}`) => fastify.familyScope({ target: { child: at }, name: 'Child', oneStatement: insert })
    const record = fastify.familyScope({ target: { record: spec.table, at: 'params.id' }, name: spec.singular, etag: 'version', ifMatch: true, cache: true })

    /** A list's page as JSON, written by the database. */
    function listPage (request: FastifyRequest): Fragment {
      const query = request.query as Values
      const { limit, offset } = query as { limit: number, offset: number }
      const filters: Fragment[] = []
      if (mainDate !== undefined && mainIsTimestamp) {
        // Dates of a timestamp are UTC dates, whatever time zone the database runs in.
        if (query.from !== undefined) filters.push(sql`and ${sql(mainDate)} >= (${query.from as string}::date)::timestamp at time zone 'UTC'`)
        if (query.to !== undefined) filters.push(sql`and ${sql(mainDate)} < (${query.to as string}::date + 1)::timestamp at time zone 'UTC'`)
      } else if (mainDate !== undefined) {
        if (query.from !== undefined) filters.push(sql`and ${sql(mainDate)} >= ${query.from as string}`)
        if (query.to !== undefined) filters.push(sql`and ${sql(mainDate)} <= ${query.to as string}`)
      }
      for (const [name, filter] of Object.entries(spec.filters ?? {})) {
        const value = query[name] as string | undefined
        if (value === undefined) continue
        const isNull = filter.isNull?.[value]
        if (isNull === undefined) filters.push(sql`and ${sql(filter.column)} = ${value}`)
        else filters.push(isNull ? sql`and ${sql(filter.column)} is null` : sql`and ${sql(filter.column)} is not null`)
      }
      const order = orderBy(sql, (query.sort as string | undefined) ?? spec.defaultSort, spec.sorts)
      const params = request.params as Values
      const ownerId = (spec.parent !== undefined ? params[spec.parent.param] : params.childId ?? query.childId) as number
      return listBody(sql, spec, ownerId, filters, order, limit, offset, spec.derivedSql)
    }

    /** The values of a create without the child's id. */
    function valuesOf (request: FastifyRequest): Values {
      const values = { ...(request.body as Values) }
      delete values.childId
      return values
    }

    /**
     * A plain create in one round trip: the session, the scope, the rules and
     * the insert with its change in one statement. A create that writes more
     * than its record (a visit with its measurement), or whose rules read the
     * child apart (a vaccine naming its series), is not one statement.
     */
    const insert: OneStatementCreate = {
      values: request => {
        const values = valuesOf(request)
        if (spec.createsWith !== undefined && values[spec.createsWith.field] != null) return null
        // Rules that read the child apart (its schedule) are run by the handler.
        return spec.childRules?.applies(values) === true ? null : values
      },
      insert: (childId, values, actor) => insertFrom(sql, spec, childId, values, actor),
      rules: (values, birth, visit) => ruleIssues(spec, values, birth, visit),
      dates: values => spec.dates.map(field => values[field]).filter((value): value is string => typeof value === 'string'),
      visitBy: values => ownDate(spec, values)?.date ?? null,
      present: spec.present
    }

    /** A record and the record it carries, if any (a visit's measurement). */
    async function insertWith (tx: Tx, childId: number, body: Values): Promise<Values> {
      const carried = spec.createsWith
      if (carried === undefined) return await insertRecord(tx, spec, childId, body)
      const { [carried.field]: values, ...fields } = body
      const created = await insertRecord(tx, spec, childId, fields)
      if (values == null) return created
      return { ...created, [carried.field]: await insertRecord(tx, carried.kind, childId, { ...values as Values, ...carried.link(created) }) }
    }

    /** A list: the scope decided it and read its answer in one statement. */
    async function list (request: FastifyRequest, reply: FastifyReply) {
      return reply.type(JSON_TYPE).send(request.answer)
    }

    async function create (request: FastifyRequest, reply: FastifyReply) {
      let created = request.created
      if (created === null) {
        const values = valuesOf(request)
        const childId = request.scope.childId as number
        created = await sql.begin(async tx => {
          await beginChange(tx, request.scope.familyId, request.user.id)
          await checkRules(tx, spec, request, values, childId)
          return await insertWith(tx, childId, values)
        })
      }
      return reply.code(201).header('location', `/api/${spec.path}/${created.id as number}`).send(respond(created))
    }

    const listResponses = { 200: WithETag(Type.Ref(`${spec.singular}List`), CLOCK_ETAG), 304: NotModified, ...errorResponses(400, 401, 403, 404) }
    const createResponses = { 201: spec.createSchema ?? ref, ...errorResponses(400, 401, 403, 404) }
    const childParams = StrictObject({ childId: Id })
    const idParams = StrictObject({ id: Id })

    if (spec.parent !== undefined) {
      parentRoutes(spec.parent)
    } else {
      childRoutes()
    }

    /** The lists and creates under the child, and flat with childId. */
    function childRoutes (): void {
      const createDescription = [spec.descriptions?.create, ONE_STATEMENT].filter(text => text !== undefined).join(' ')
      fastify.get(`/api/children/:childId/${spec.path}`, {
        preHandler: child('params.childId'),
        schema: { operationId: `listChild${spec.plural}`, tags, summary: `A child's ${spec.path.replace('-', ' ')}`, description: spec.descriptions?.list, security, params: childParams, querystring: Type.Object(listQuery), headers: ConditionalRead, response: listResponses }
      }, list)

      fastify.post(`/api/children/:childId/${spec.path}`, {
        preHandler: createIn('params.childId'),
        schema: { operationId: `createChild${spec.singular}`, tags, summary: `Add ${aNoun(spec)} to a child`, description: createDescription, security, params: childParams, body: createBody, response: createResponses }
      }, create)

      fastify.get(`/api/${spec.path}`, {
        preHandler: child('query.childId'),
        schema: { operationId: `list${spec.plural}`, tags, summary: `A child's ${spec.path.replace('-', ' ')}, by childId`, description: spec.descriptions?.list, security, querystring: Type.Object({ childId: Id, ...listQuery }), headers: ConditionalRead, response: listResponses }
      }, list)

      fastify.post(`/api/${spec.path}`, {
        preHandler: createIn('body.childId'),
        schema: { operationId: `create${spec.singular}`, tags, summary: `Add ${aNoun(spec)} to the child named by childId`, description: createDescription, security, body: flatCreateBody, response: createResponses }
      }, create)
    }

    /** The list and the create under the parent record, in the family scope of the parent's child. */
    function parentRoutes (parent: ParentSpec): void {
      const at = `params.${parent.param}` as const
      const params = StrictObject({ [parent.param]: Id })
      const { singular, path } = parent.kind
      // The parent's table, as the family scope knows it.
      const table = parent.kind.table as RecordTable
      const url = `/api/${path}/:${parent.param}/${parent.segment ?? spec.path}`
      const parentNoun = nounOf(parent.kind)
      fastify.get(url, {
        preHandler: fastify.familyScope({ target: { record: table, at }, name: singular, etag: 'child', cache: true, oneStatement: answer }),
        schema: { operationId: `list${singular}${spec.plural}`, tags, summary: `The ${nounOf(spec)}s of ${/^[aeiou]/.test(parentNoun) ? 'an' : 'a'} ${parentNoun}`, description: spec.descriptions?.list, security, params, querystring: Type.Object(listQuery), headers: ConditionalRead, response: listResponses }
      }, list)

      fastify.post(url, {
        preHandler: fastify.familyScope({ target: { record: table, at }, name: singular }),
        schema: { operationId: `create${singular}${spec.singular}`, tags, summary: `Add ${aNoun(spec)} to ${/^[aeiou]/.test(parentNoun) ? 'an' : 'a'} ${parentNoun}`, description: spec.descriptions?.create, security, params, body: createBody, response: createResponses }
      }, async (request, reply) => {
        const values = request.body as Values
        const parentId = (request.params as Values)[parent.param] as number
        const childId = request.scope.childId as number
        await checkRules(sql, spec, request, values, childId)
        const created = await sql.begin(async tx => {
          await beginChange(tx, request.scope.familyId, request.user.id)
          await lockParent(tx, { table: parent.kind.table, column: parent.column }, { parentId })
          return await insertRecord(tx, spec, childId, values, { [parent.column]: parentId })
        })
        return reply.code(201).header('location', `/api/${spec.path}/${created.id as number}`).send(respond(created))
      })
    }

    fastify.get(`/api/${spec.path}/:id`, {
      preHandler: record,
      schema: { operationId: `get${spec.singular}`, tags, summary: `One ${nounOf(spec)}`, security, params: idParams, headers: ConditionalRead, response: { 200: WithETag(ref, ITEM_ETAG), 304: NotModified, ...errorResponses(400, 401, 403, 404) } }
    }, async request => {
      const found = await findRecord(sql, spec, (request.params as { id: number }).id)
      if (found === undefined) throw new errors.notFound(spec.singular)
      return respond(found)
    })

    fastify.put(`/api/${spec.path}/:id`, {
      preHandler: record,
      schema: { operationId: `replace${spec.singular}`, tags, summary: `Replace ${aNoun(spec)}; omitted optional fields become null`, security, params: idParams, headers: ConditionalWrite, body, response: { 200: ref, ...errorResponses(400, 401, 403, 404, 412) } }
    }, async request => {
      const values = request.body as Values
      const id = (request.params as { id: number }).id
      const replaced = await sql.begin(async tx => {
        await beginChange(tx, request.scope.familyId, request.user.id)
        await parentFirst(tx, id)
        await checkRules(tx, spec, request, values, request.scope.childId as number)
        await checkLinked(tx, id, values)
        const row = await replaceRecord(tx, spec, id, values, request.scope.expectedVersion)
        if (row === undefined) await changedMeanwhile(tx, id)
        return row as Values
      })
      return respond(replaced)
    })

    fastify.patch(`/api/${spec.path}/:id`, {
      preHandler: record,
      schema: { operationId: `update${spec.singular}`, tags, summary: `Change some fields of ${aNoun(spec)}`, description: `${PATCH_RULE} The rules between fields hold for the record as it would become.`, security, params: idParams, headers: ConditionalWrite, body: patchBody, response: { 200: ref, ...errorResponses(400, 401, 403, 404, 412) } }
    }, async request => {
      const changes = request.body as Values
      const id = (request.params as { id: number }).id
      const updated = await sql.begin(async tx => {
        // The family's clock first, then the row: the order every write takes them in.
        await beginChange(tx, request.scope.familyId, request.user.id)
        await parentFirst(tx, id)
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
      return respond(updated)
    })

    fastify.delete(`/api/${spec.path}/:id`, {
      preHandler: record,
      schema: { operationId: `delete${spec.singular}`, tags, summary: `Delete ${aNoun(spec)}`, security, params: idParams, headers: ConditionalWrite, response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses(400, 401, 403, 404, 412) } }
    }, async (request, reply) => {
      const id = (request.params as { id: number }).id
      await sql.begin(async tx => {
        await beginChange(tx, request.scope.familyId, request.user.id)
        await parentFirst(tx, id)
        if (!(await deleteRecord(tx, spec.table, id, request.scope.expectedVersion))) await changedMeanwhile(tx, id)
      })
      return reply.code(204).send(null)
    })

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

    historyRoute(fastify, { kind: spec.kind, path: `/api/${spec.path}/:id/history`, name: spec.singular, tag: spec.path, operationId: `get${spec.singular}History` })
  }
}

/** The routes of every kind of a child's records, in the registry's order. */
export default async function records (fastify: FastifyInstance): Promise<void> {
  for (const kind of KINDS) await fastify.register(recordRoutes(kind))
}
