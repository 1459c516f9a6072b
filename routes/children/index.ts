import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errors, withDetails } from '../../lib/errors'
import { errorResponses } from '../../lib/schemas'
import { removeStoredFiles } from '../../lib/stored-files'
import { childSorts, deleteChild, earliestRecordDate, findChild, insertChild, listChildren, replaceChild } from '../../sql/children'
import { orderBy } from '../../sql/list'
import { latestAllowedDate } from '../records'
import { ChildListQuery, ChildParams, CreateChildBody, ReplaceChildBody } from './schemas'

function badBirth (message: string): Error {
  return withDetails(new errors.validation('The request is not valid'), { issues: [{ path: '/body/dateOfBirth', message }] })
}

const children: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config, sql } = fastify
  const tags = ['children']
  const security = [{ bearer: [] }]
  const child = fastify.familyScope({ target: { child: 'params.id' } })

  fastify.get('/api/children', {
    preHandler: fastify.familyScope({ target: { family: 'query.familyId' }, whenAbsent: 'skip' }),
    schema: {
      operationId: 'listChildren',
      tags,
      summary: 'The children of the caller\'s families, or of one of them',
      security,
      querystring: ChildListQuery,
      response: { 200: Type.Ref('ChildList'), ...errorResponses(400, 401, 403, 404) }
    }
  }, async request => {
    const { limit = 50, offset = 0, familyId, sort = 'name' } = request.query
    const order = orderBy(sql, sort, childSorts)
    const { rows, total } = await listChildren(sql, request.user.id, familyId === undefined ? null : request.scope.familyId, order, limit, offset)
    return { data: rows, meta: { total, limit, offset } }
  })

  fastify.post('/api/children', {
    preHandler: fastify.familyScope({ target: { family: 'body.familyId' }, whenAbsent: 'only-family' }),
    schema: {
      operationId: 'createChild',
      tags,
      summary: 'Add a child to a family',
      security,
      body: CreateChildBody,
      response: { 201: Type.Ref('Child'), ...errorResponses(400, 401, 403, 404) }
    }
  }, async (request, reply) => {
    const { name, dateOfBirth, sex } = request.body
    if (dateOfBirth > latestAllowedDate()) throw badBirth('must not be in the future')
    const created = await sql.begin(tx => insertChild(tx, request.scope.familyId, { name, dateOfBirth, sex }))
    return reply.code(201).header('location', `/api/children/${created.id}`).send(created)
  })

  fastify.get('/api/children/:id', {
    preHandler: child,
    schema: {
      operationId: 'getChild',
      tags,
      summary: 'One child',
      security,
      params: ChildParams,
      response: { 200: Type.Ref('Child'), ...errorResponses(400, 401, 403, 404) }
    }
  }, async request => {
    const found = await findChild(sql, request.params.id)
    if (found === undefined) throw new errors.notFound('Child')
    return found
  })

  fastify.put('/api/children/:id', {
    preHandler: child,
    schema: {
      operationId: 'replaceChild',
      tags,
      summary: 'Replace a child\'s name, date of birth and sex',
      description: 'The date of birth may not be after the date of any of the child\'s records.',
      security,
      params: ChildParams,
      body: ReplaceChildBody,
      response: { 200: Type.Ref('Child'), ...errorResponses(400, 401, 403, 404) }
    }
  }, async request => {
    const { dateOfBirth } = request.body
    if (dateOfBirth > latestAllowedDate()) throw badBirth('must not be in the future')
    return sql.begin(async tx => {
      await tx`select id from children where id = ${request.params.id} for update`
      const earliest = await earliestRecordDate(tx, request.params.id)
      if (earliest !== null && dateOfBirth > earliest) throw badBirth(`must not be after the child's earliest record (${earliest})`)
      return replaceChild(tx, request.params.id, request.body)
    })
  })

  fastify.delete('/api/children/:id', {
    preHandler: child,
    schema: {
      operationId: 'deleteChild',
      tags,
      summary: 'Delete a child with all its records, attachments and avatar',
      security,
      params: ChildParams,
      response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses(400, 401, 403, 404) }
    }
  }, async (request, reply) => {
    const files = await sql.begin(tx => deleteChild(tx, request.params.id))
    const left = await removeStoredFiles(config, files)
    if (left.length > 0) request.log.warn({ files: left }, 'stored files of a deleted child could not be removed')
    return reply.code(204).send(null)
  })
}

export default children
