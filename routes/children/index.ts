import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Tx } from '../../db/client'
import { Type } from '@sinclair/typebox'
import { errors, found, withDetails } from '../../lib/errors'
import { clockTag, noneMatch } from '../../lib/etag'
import { CLOCK_ETAG, ConditionalWrite, ITEM_ETAG, PATCH_RULE, conditionalRead, errorResponses, noContent, operations } from '../../lib/schemas'
import { removeWhenCommitted } from '../../domain/stored-files'
import { callerOf, notModified, preconditionFailed } from '../../plugins/access'
import { beginChange, beginFamilyChange, membershipClock } from '../../sql/changes'
import { childSorts, deleteChild, earliestRecordDate, findChild, insertChild, listChildren, lockChild, replaceChild } from '../../sql/children'
import { orderBy } from '../../sql/list'
import { historyRoute } from '../history'
import { latestAllowedDate } from '../records'
import { gestationIssue, type Gestation } from '../../domain/children'
import { ChildListQuery, ChildParams, CreateChildBody, PatchChildBody, ReplaceChildBody } from './schemas'
import { pageOf } from '../list'
import { childFieldsOf } from '../../lib/child-fields'

function badBirth (message: string): Error {
  return withDetails(new errors.validation('The request is not valid'), { issues: [{ path: '/body/dateOfBirth', message }] })
}

const GESTATION_RULE = 'Gestational age at birth is `gestationalAgeAtBirthWeeks` (22 to 44) and optionally `gestationalAgeAtBirthDays` (0 to 6), from 22 weeks 0 days to 44 weeks 6 days; days without weeks are a 400.'

const SCHEDULE_RULE = 'scheduleId names one of the vaccine schedules of GET /api/schedules, or null for none; an unknown id is a 400. Changing it keeps the child\'s vaccine records as they are: a record whose vaccine is not a series of the new schedule stays, counts for nothing in the due list, and must be given a series of the new schedule (or none) when it is next written.'

function checkGestation (child: Gestation): void {
  const issue = gestationIssue(child)
  if (issue !== null) throw withDetails(new errors.validation('The request is not valid'), { issues: [issue] })
}

const children: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  const tags = ['children']
  const operation = operations(tags)
  const child = fastify.familyScope({ target: { child: 'params.id' }, etag: 'version', ifMatch: true, cache: true })

  fastify.get('/api/children', {
    preHandler: fastify.familyScope({ target: { family: 'query.familyId' }, whenAbsent: 'skip', etag: 'family', cache: true }),
    schema: operation('listChildren', 'The children of the caller\'s families, or of one of them', { querystring: ChildListQuery, ...conditionalRead('ChildList', CLOCK_ETAG, 400, 401, 403, 404) })
  }, async (request, reply) => {
    const { familyId, sort = 'name' } = request.query
    if (familyId === undefined) {
      // Every family of the caller: the tag follows all of them and the memberships.
      const etag = clockTag(`${request.url}\n${request.user.id}`, await membershipClock(request.db, callerOf(request.user)))
      reply.header('etag', etag)
      if (noneMatch(request.headers['if-none-match'], etag)) return notModified(reply as FastifyReply)
    }
    const order = orderBy(request.db, sort, childSorts)
    const scope = familyId === undefined ? null : request.scope.familyId
    return await pageOf(request.query, page => listChildren(request.db, callerOf(request.user), scope, order, page))
  })

  fastify.post('/api/children', {
    preHandler: fastify.familyScope({ target: { family: 'body.familyId' }, whenAbsent: 'only-family' }),
    schema: operation('createChild', 'Add a child to a family', { description: `${GESTATION_RULE} ${SCHEDULE_RULE}`, body: CreateChildBody, response: { 201: Type.Ref('Child'), ...errorResponses(400, 401, 403, 404) } })
  }, async (request, reply) => {
    const { familyId: _familyId, ...fields } = request.body
    if (fields.dateOfBirth > latestAllowedDate()) throw badBirth('must not be in the future')
    checkGestation(fields)
    const created = await request.db.begin(async tx => {
      await beginFamilyChange(tx, request.scope.familyId, request.user.id)
      return insertChild(tx, request.scope.familyId, fields)
    })
    return reply.code(201).header('location', `/api/children/${created.id}`).send(created)
  })

  fastify.get('/api/children/:id', {
    preHandler: child,
    schema: operation('getChild', 'One child', { params: ChildParams, ...conditionalRead('Child', ITEM_ETAG, 400, 401, 403, 404) })
  }, async request => found(await findChild(request.db, request.params.id), 'Child'))

  fastify.put('/api/children/:id', {
    preHandler: child,
    schema: operation('replaceChild', 'Replace a child\'s name, date of birth, sex, gestational age at birth, growth chart and vaccine schedule', {
      description: `The date of birth may not be after the date of any of the child's records. ${GESTATION_RULE} An omitted gestational age or scheduleId becomes null, an omitted growthReference \`who\`. ${SCHEDULE_RULE}`,
      params: ChildParams, headers: ConditionalWrite, body: ReplaceChildBody,
      response: { 200: Type.Ref('Child'), ...errorResponses(400, 401, 403, 404, 412) }
    })
  }, async request => {
    const { dateOfBirth } = request.body
    const id = request.params.id
    if (dateOfBirth > latestAllowedDate()) throw badBirth('must not be in the future')
    checkGestation(request.body)
    return request.db.begin(async tx => {
      await lockForWrite(tx, request, id)
      await checkBirth(tx, id, dateOfBirth)
      return await replaceChild(tx, id, request.body) as NonNullable<Awaited<ReturnType<typeof replaceChild>>>
    })
  })

  fastify.patch('/api/children/:id', {
    preHandler: child,
    schema: operation('updateChild', 'Change some of a child\'s name, date of birth, sex, gestational age at birth, growth chart and vaccine schedule', {
      description: `${PATCH_RULE} The date of birth may not be after the date of any of the child's records. ${GESTATION_RULE} The rule holds for the child as the change leaves it: days cannot stay once the weeks are cleared. ${SCHEDULE_RULE}`,
      params: ChildParams, headers: ConditionalWrite, body: PatchChildBody,
      response: { 200: Type.Ref('Child'), ...errorResponses(400, 401, 403, 404, 412) }
    })
  }, async request => {
    const changes = request.body
    const id = request.params.id
    if (changes.dateOfBirth !== undefined && changes.dateOfBirth > latestAllowedDate()) throw badBirth('must not be in the future')
    return request.db.begin(async tx => {
      await lockForWrite(tx, request, id)
      const current = await findChild(tx, id) as NonNullable<Awaited<ReturnType<typeof findChild>>>
      if (Object.keys(changes).length === 0) return current
      if (changes.dateOfBirth !== undefined) await checkBirth(tx, id, changes.dateOfBirth)
      const merged = { ...childFieldsOf(current), ...changes }
      checkGestation(merged)
      return await replaceChild(tx, id, merged) as NonNullable<Awaited<ReturnType<typeof replaceChild>>>
    })
  })

  /** Takes the family's clock and the child's row, in the order every write takes them; 404 or 412 as the row stands. */
  async function lockForWrite (tx: Tx, request: FastifyRequest, id: number): Promise<void> {
    await beginChange(tx, request.scope.familyId, request.user.id)
    const version = await lockChild(tx, id)
    if (version === undefined) throw new errors.notFound('Child')
    const expected = request.scope.expectedVersion
    if (expected !== null && version !== expected) throw preconditionFailed(version)
  }

  /** A date of birth may not be after any of the child's records. */
  async function checkBirth (tx: Tx, id: number, dateOfBirth: string): Promise<void> {
    const earliest = await earliestRecordDate(tx, id)
    if (earliest !== null && dateOfBirth > earliest) throw badBirth(`must not be after the child's earliest record (${earliest})`)
  }

  fastify.delete('/api/children/:id', {
    preHandler: child,
    schema: operation('deleteChild', 'Delete a child with all its records, attachments and avatar', { params: ChildParams, headers: ConditionalWrite, response: noContent('Deleted', 400, 401, 403, 404, 412) })
  }, async (request, reply) => {
    const id = request.params.id
    const files = await request.db.begin(async tx => {
      await beginFamilyChange(tx, request.scope.familyId, request.user.id)
      const version = await lockChild(tx, id)
      if (version === undefined) throw new errors.notFound('Child')
      const expected = request.scope.expectedVersion
      if (expected !== null && version !== expected) throw preconditionFailed(version)
      return deleteChild(tx, id)
    })
    await removeWhenCommitted(request, config, files, 'stored files of a deleted child could not be removed')
    return reply.code(204).send(null)
  })

  historyRoute(fastify, { kind: 'child', path: '/api/children/:id/history', name: 'Child', tag: 'children', operationId: 'getChildHistory' })
}

export default children
