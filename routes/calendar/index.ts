import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { randomBytes } from 'node:crypto'
import { dueEvent, scheduleEvent, visitEvent, writeCalendar } from '../../lib/calendar'
import type { FeedEvent } from '../../sql/calendar'
import { errors } from '../../lib/errors'
import { callerOf } from '../../plugins/access'
import { errorResponses, noContent, operations } from '../../lib/schemas'
import { deleteOwnFeed, insertFeed, listFeeds, lockFeedCount, readFeed } from '../../sql/calendar'
import { CalendarResponse, CreateFeedBody, FeedFileParams, FeedParams, ListQuery } from './schemas'
import { pageOf } from '../list'

/** How many calendar feeds a user may have. */
export const FEEDS_PER_USER = 20

/** A feed's file name: 32 random bytes in base64url, then .ics. */
const FEED_FILE = /^([A-Za-z0-9_-]{43})\.ics$/

const tags = ['calendar']
const operation = operations(tags)

/**
 * The signed-in user's calendar feeds: capability links to a family's
 * visits and vaccine due dates as iCalendar. Only a hash of each link's token is kept.
 */
const calendarFeeds: FastifyPluginAsyncTypebox = async function (fastify) {
  const { tokens } = fastify

  fastify.post('/api/me/calendar-feeds', {
    preHandler: fastify.familyScope({ target: { family: 'body.familyId' }, role: 'viewer' }),
    schema: operation('createCalendarFeed', 'A calendar feed of a family\'s visits and vaccine due dates', {
      description: 'Any member of the family may make one, viewers too. The url is a capability link, shown only in this answer: ' +
        'whoever holds it reads the feed without a token, until the feed is deleted, the user leaves the family or the account is disabled. ' +
        `A user has at most ${FEEDS_PER_USER} feeds (409 CONFLICT beyond).`,
      body: CreateFeedBody,
      response: { 201: Type.Ref('CreatedCalendarFeed'), ...errorResponses(400, 401, 403, 404, 409) }
    })
  }, async (request, reply) => {
    const userId = request.user.id
    const token = randomBytes(32).toString('base64url')
    const feed = await request.db.begin(async tx => {
      if (await lockFeedCount(tx, userId) >= FEEDS_PER_USER) {
        throw new errors.conflict(`A user may have at most ${FEEDS_PER_USER} calendar feeds: delete one first`)
      }
      return insertFeed(tx, { userId, familyId: request.scope.familyId, tokenHash: tokens.hash(token) })
    })
    return reply.code(201).header('cache-control', 'no-store').send({ id: feed.id, url: `/api/calendar/${token}.ics`, createdAt: feed.createdAt })
  })

  fastify.get('/api/me/calendar-feeds', {
    schema: operation('listCalendarFeeds', 'The user\'s calendar feeds, without their links', { querystring: ListQuery, response: { 200: Type.Ref('CalendarFeedList'), ...errorResponses(400, 401, 403) } })
  }, async request => {
    return await pageOf(request.query, page => listFeeds(request.db, callerOf(request.user), page))
  })

  fastify.delete('/api/me/calendar-feeds/:id', {
    schema: operation('deleteCalendarFeed', 'Delete one of the user\'s calendar feeds', { description: 'Its link stops working at once.', params: FeedParams, response: noContent('Deleted', 400, 401, 403, 404) })
  }, async (request, reply) => {
    if (!(await deleteOwnFeed(request.db, callerOf(request.user), request.params.id))) throw new errors.notFound('Calendar feed')
    return reply.code(204).send(null)
  })
}

/**
 * A feed's link, for calendar applications, which cannot send headers: the
 * token in the path is the credential. Whatever makes a link dead (unknown,
 * deleted, its user gone from the family or disabled, or not a link at all,
 * any path under /api/calendar included), the answer is the same 404.
 */
export const calendarFile: FastifyPluginAsyncTypebox = async function (fastify) {
  const { tokens } = fastify

  fastify.setNotFoundHandler(async () => {
    throw new errors.notFound('Calendar feed')
  })

  fastify.get('/:file', {
    schema: operation('getCalendarFeed', 'A family\'s visits, vaccine due dates and schedule doses as an iCalendar feed', {
      security: [],
      description: 'A capability link: no token is needed. The family\'s visits from 12 months back on, the future ones included, as all-day events: ' +
        'SUMMARY the child\'s name and the visit type, DESCRIPTION the provider and notes, UID stable per visit, SEQUENCE its version. ' +
        'Each vaccine\'s next due date (from the nextDueDate of its latest dose, as GET /api/children/{childId}/due lists them) in the same range, ' +
        'as an all-day event on that day: SUMMARY "<child>: <vaccine> due (dose <n + 1>)" (without the dose when the latest dose has no doseNumber), ' +
        'DESCRIPTION the day of the latest dose, UID due-medical-event-<id of the latest dose>@child-health, SEQUENCE that dose\'s version. ' +
        'For a child that follows a vaccine schedule, each dose of it not yet recorded (as GET /api/children/{childId}/due lists them) whose dueFrom is in the same range (today in UTC), ' +
        'as an all-day event on its dueFrom: SUMMARY "<child>: <series code> due (dose <n>)", DESCRIPTION the series\' name and the days it is due from and on time until, ' +
        'UID schedule-<scheduleId>-child-<childId>-<series code>-dose-<n>@child-health (the same while the dose moves; gone once it is recorded), SEQUENCE the number of the child\'s changes. ' +
        'On one day, visits come first, then due dates, then schedule doses.',
      params: FeedFileParams,
      response: { 200: CalendarResponse, ...errorResponses(404) }
    })
  }, async (request, reply) => {
    const match = FEED_FILE.exec(request.params.file)
    const content = match === null ? undefined : await readFeed(request.db, tokens.hash(match[1]))
    if (content === undefined) throw new errors.notFound('Calendar feed')
    return reply
      .header('cache-control', 'private, no-store')
      .header('referrer-policy', 'no-referrer')
      .type('text/calendar; charset=utf-8')
      .send(writeCalendar(content.familyName, content.events.map(eventOf)))
  })
}

function eventOf (event: FeedEvent) {
  if (event.kind === 'visit') return visitEvent(event.visit)
  return event.kind === 'due' ? dueEvent(event.due) : scheduleEvent(event.dose)
}

export default calendarFeeds
