import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type, type TObject, type TProperties, type TSchema } from '@sinclair/typebox'
import type { PendingQuery, Row } from 'postgres'
import { errors, withDetails } from '../lib/errors'
import { Id, IsoDate, Pagination, StrictObject, errorResponses } from '../lib/schemas'
import type { Db, Tx } from '../plugins/db'
import { orderBy, type SortFields } from '../sql/list'
import {
  deleteRecord, findRecord, insertRecord, listRecords, replaceRecord, visitOfChild, type RecordTableSpec
} from '../sql/records'

type Values = Record<string, unknown>
type Fragment = PendingQuery<Row[]>

export interface Issue {
  path: string
  message: string
}

/** What makes one kind of a child's records: its names, schemas, columns, filters and rules. */
export interface RecordSpec extends RecordTableSpec {
  /** The URL segment, e.g. `medical-events`. */
  path: string
  singular: string
  plural: string
  /** The response schema, named by `$id`. */
  schema: TObject
  /** Body fields of POST and PUT, without `childId`. */
  fields: TProperties
  /** Body fields of POST only. */
  createFields?: TProperties
  /** Date fields that must lie between the child's birth and tomorrow. */
  dates: string[]
  sorts: SortFields
  defaultSort: string
  /** Extra query filters and their SQL. */
  filters?: TProperties
  filterSql?: (db: Db, query: Values) => Fragment[]
  /** Rules between fields of the body, as validation issues. */
  check?: (body: Values) => Issue[]
  toResponse?: (row: Values) => Values
  /** The answer to a create, when it holds more than the record. */
  createSchema?: TSchema
  /** Creates the record and whatever comes with it, inside the transaction. */
  create?: (tx: Tx, childId: number, body: Values) => Promise<Values>
}

function invalid (issues: Issue[]): Error {
  return withDetails(new errors.validation('The request is not valid'), { issues })
}

/** Tomorrow in UTC: record dates may be a day ahead, for time zones east of the server. */
export function latestAllowedDate (): string {
  return new Date(Date.now() + 86400000).toISOString().slice(0, 10)
}

/** The rules between records: dates within the child's life, links to a visit of the same child. */
async function checkRules (db: Db, spec: RecordSpec, request: FastifyRequest, body: Values, childId: number): Promise<void> {
  const issues: Issue[] = [...(spec.check?.(body) ?? [])]
  const birth = request.scope.childBirth
  const latest = latestAllowedDate()
  for (const field of spec.dates) {
    const value = body[field]
    if (typeof value !== 'string') continue
    if (birth !== null && value < birth) issues.push({ path: `/body/${field}`, message: `must not be before the child's date of birth (${birth})` })
    if (value > latest) issues.push({ path: `/body/${field}`, message: 'must not be in the future' })
  }
  if (typeof body.visitId === 'number' && !(await visitOfChild(db, body.visitId, childId))) {
    issues.push({ path: '/body/visitId', message: 'must be a visit of the same child' })
  }
  if (issues.length > 0) throw invalid(issues)
}

/**
 * The routes of one kind of record, in both shapes of the API: under the child
 * (`/api/children/:childId/{kind}`) and flat (`/api/{kind}`, `/api/{kind}/:id`).
 * Access is decided by the family scope before any handler runs.
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
    ...spec.filters
  }
  const mainDate = spec.columns[spec.dates[0]]
  const body = StrictObject(spec.fields)
  const createBody = StrictObject({ ...spec.fields, ...spec.createFields })
  const flatCreateBody = StrictObject({ childId: Id, ...spec.fields, ...spec.createFields })
  const respond = (row: Values): Values => spec.toResponse?.(row) ?? row

  return async function plugin (fastify: FastifyInstance): Promise<void> {
    const { sql } = fastify
    const child = (at: `params.${string}` | `query.${string}` | `body.${string}`) => fastify.familyScope({ target: { child: at }, name: 'Child' })
    const record = fastify.familyScope({ target: { record: spec.table, at: 'params.id' }, name: spec.singular })

    async function list (request: FastifyRequest) {
      const query = request.query as Values
      const { limit = 50, offset = 0 } = query as { limit?: number, offset?: number }
      const filters: Fragment[] = []
      if (query.from !== undefined) filters.push(sql`and ${sql(mainDate)} >= ${query.from as string}`)
      if (query.to !== undefined) filters.push(sql`and ${sql(mainDate)} <= ${query.to as string}`)
      filters.push(...(spec.filterSql?.(sql, query) ?? []))
      const order = orderBy(sql, (query.sort as string | undefined) ?? spec.defaultSort, spec.sorts)
      const { rows, total } = await listRecords(sql, spec, request.scope.childId as number, filters, order, limit, offset)
      return { data: rows.map(respond), meta: { total, limit, offset } }
    }

    async function create (request: FastifyRequest, reply: FastifyReply) {
      const values = { ...(request.body as Values) }
      delete values.childId
      const childId = request.scope.childId as number
      await checkRules(sql, spec, request, values, childId)
      // A write of one statement is atomic by itself; one of several runs in a transaction.
      const created = spec.create !== undefined
        ? await sql.begin(tx => (spec.create as NonNullable<RecordSpec['create']>)(tx, childId, values))
        : await insertRecord(sql, spec, childId, values)
      return reply.code(201).header('location', `/api/${spec.path}/${created.id as number}`).send(respond(created))
    }

    const listResponses = { 200: Type.Ref(`${spec.singular}List`), ...errorResponses(400, 401, 403, 404) }
    const createResponses = { 201: spec.createSchema ?? ref, ...errorResponses(400, 401, 403, 404) }
    const childParams = StrictObject({ childId: Id })
    const idParams = StrictObject({ id: Id })

    fastify.get(`/api/children/:childId/${spec.path}`, {
      preHandler: child('params.childId'),
      schema: { operationId: `listChild${spec.plural}`, tags, summary: `A child's ${spec.path.replace('-', ' ')}`, security, params: childParams, querystring: Type.Object(listQuery), response: listResponses }
    }, list)

    fastify.post(`/api/children/:childId/${spec.path}`, {
      preHandler: child('params.childId'),
      schema: { operationId: `createChild${spec.singular}`, tags, summary: `Add a ${spec.singular.toLowerCase()} to a child`, security, params: childParams, body: createBody, response: createResponses }
    }, create)

    fastify.get(`/api/${spec.path}`, {
      preHandler: child('query.childId'),
      schema: { operationId: `list${spec.plural}`, tags, summary: `A child's ${spec.path.replace('-', ' ')}, by childId`, security, querystring: Type.Object({ childId: Id, ...listQuery }), response: listResponses }
    }, list)

    fastify.post(`/api/${spec.path}`, {
      preHandler: child('body.childId'),
      schema: { operationId: `create${spec.singular}`, tags, summary: `Add a ${spec.singular.toLowerCase()} to the child named by childId`, security, body: flatCreateBody, response: createResponses }
    }, create)

    fastify.get(`/api/${spec.path}/:id`, {
      preHandler: record,
      schema: { operationId: `get${spec.singular}`, tags, summary: `One ${spec.singular.toLowerCase()}`, security, params: idParams, response: { 200: ref, ...errorResponses(400, 401, 403, 404) } }
    }, async request => {
      const found = await findRecord(sql, spec, (request.params as { id: number }).id)
      if (found === undefined) throw new errors.notFound(spec.singular)
      return respond(found)
    })

    fastify.put(`/api/${spec.path}/:id`, {
      preHandler: record,
      schema: { operationId: `replace${spec.singular}`, tags, summary: `Replace a ${spec.singular.toLowerCase()}; omitted optional fields become null`, security, params: idParams, body, response: { 200: ref, ...errorResponses(400, 401, 403, 404) } }
    }, async request => {
      const values = request.body as Values
      await checkRules(sql, spec, request, values, request.scope.childId as number)
      const replaced = await replaceRecord(sql, spec, (request.params as { id: number }).id, values)
      return respond(replaced)
    })

    fastify.delete(`/api/${spec.path}/:id`, {
      preHandler: record,
      schema: { operationId: `delete${spec.singular}`, tags, summary: `Delete a ${spec.singular.toLowerCase()}`, security, params: idParams, response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses(400, 401, 403, 404) } }
    }, async (request, reply) => {
      await deleteRecord(sql, spec, (request.params as { id: number }).id)
      return reply.code(204).send(null)
    })
  }
}
