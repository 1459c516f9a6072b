import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { errors } from '../../lib/errors'
import { findRecord } from '../../sql/records'
import { historyRoute } from '../history'
import { KINDS, type RegisteredKind } from '../../kinds'
import { declarationsOf, scopesOf } from './declarations'
import { createInStatement, inStatement, listInStatement, valuesOf } from './one-statement'
import { pageOf } from './page'
import { writesOf } from './writes'

export { latestAllowedDate, NO_VISIT, ruleIssues, type Issue } from '../../kinds/rules'

type Values = Record<string, unknown>

/** What makes one kind of a child's records served: its module in kinds/. */
export type RecordSpec = RegisteredKind

/**
 * The routes of one kind of record, in both shapes of the API: under the child
 * (`/api/children/:childId/{kind}`) and flat (`/api/{kind}`, `/api/{kind}/:id`);
 * a kind with a parent is listed and created under the parent instead
 * (`/api/{parent}/:{param}/{kind}`). A list and a plain create are decided
 * and done in one statement (one-statement.ts); every other route's access is
 * decided by the family scope before its handler runs.
 */
export function recordRoutes (spec: RecordSpec) {
  const schemas = declarationsOf(spec)
  const scopes = scopesOf(spec)
  const respond = (row: Values): Values => spec.toResponse?.(row) ?? row
  const created = (reply: FastifyReply, row: Values) => reply.code(201).header('location', `/api/${spec.path}/${row.id as number}`).send(respond(row))

  return async function plugin (fastify: FastifyInstance): Promise<void> {
    const page = pageOf(fastify.sql, spec)
    const writes = writesOf(spec)
    const record = fastify.familyScope(scopes.record)

    /** A create under the child: in one statement, or apart once the family scope has decided. */
    function create (scope: ReturnType<typeof scopes.create>) {
      const creates = createInStatement(fastify, spec, scope)
      const handler = async (request: FastifyRequest, reply: FastifyReply) => {
        const values = valuesOf(request)
        const row = creates.oneStatement(request, values) ? await creates.create(request, values) : await writes.createApart(request, values)
        return created(reply, row)
      }
      return { config: inStatement(scope), preHandler: creates.preHandler, handler }
    }

    const parent = spec.parent
    if (parent === undefined) {
      const [childList, flatList] = [scopes.list('params.childId'), scopes.list('query.childId')]
      fastify.get(`/api/children/:childId/${spec.path}`, { config: inStatement(childList), schema: schemas.listChild }, listInStatement(fastify, childList, page))
      fastify.post(`/api/children/:childId/${spec.path}`, { ...create(scopes.create('params.childId')), schema: schemas.createChild })
      fastify.get(`/api/${spec.path}`, { config: inStatement(flatList), schema: schemas.list }, listInStatement(fastify, flatList, page))
      fastify.post(`/api/${spec.path}`, { ...create(scopes.create('body.childId')), schema: schemas.create })
    } else {
      // The list and the create under the parent record, in the family scope of the parent's child.
      const url = `/api/${parent.kind.path}/:${parent.param}/${parent.segment ?? spec.path}`
      const parentList = scopes.listParent(parent)
      fastify.get(url, { config: inStatement(parentList), schema: schemas.listParent }, listInStatement(fastify, parentList, page))
      fastify.post(url, { preHandler: fastify.familyScope(scopes.createParent(parent)), schema: schemas.createParent }, async (request, reply) => created(reply, await writes.createUnder(parent, request)))
    }

    fastify.get(`/api/${spec.path}/:id`, { preHandler: record, schema: schemas.get }, async request => {
      const found = await findRecord(request.db, spec, (request.params as { id: number }).id)
      if (found === undefined) throw new errors.notFound(spec.singular)
      return respond(found)
    })
    fastify.put(`/api/${spec.path}/:id`, { preHandler: record, schema: schemas.replace }, async request => respond(await writes.replace(request)))
    fastify.patch(`/api/${spec.path}/:id`, { preHandler: record, schema: schemas.update }, async request => respond(await writes.update(request)))
    fastify.delete(`/api/${spec.path}/:id`, { preHandler: record, schema: schemas.remove }, writes.remove)

    historyRoute(fastify, { kind: spec.kind, path: `/api/${spec.path}/:id/history`, name: spec.singular, tag: spec.path, operationId: `get${spec.singular}History` })
  }
}

/** The routes of every kind of a child's records, in the registry's order. */
export default async function records (fastify: FastifyInstance): Promise<void> {
  for (const kind of KINDS) await fastify.register(recordRoutes(kind))
}
