import { Type } from '@sinclair/typebox'
import { Id, Pagination, StrictObject, Timestamp } from '../../lib/schemas'

export const CalendarFeed = Type.Object({
  id: Id,
  familyId: Id,
  familyName: Type.String(),
  createdAt: Timestamp
}, { $id: 'CalendarFeed', title: 'CalendarFeed', description: 'A calendar feed of the user\'s; its link is shown only when it is created' })

export const CreatedCalendarFeed = Type.Object({
  id: Id,
  url: Type.String({ description: 'root-relative, /api/calendar/<token>.ics; shown only here', examples: ['/api/calendar/MsA5Xpans6u02Y5TshCZ70z5VdIcnXIGDWoYGKs6NEc.ics'] }),
  createdAt: Timestamp
}, { $id: 'CreatedCalendarFeed', title: 'CreatedCalendarFeed' })

export const CreateFeedBody = StrictObject({ familyId: Id })

export const FeedParams = StrictObject({ id: Id })

export const FeedFileParams = Type.Object({
  file: Type.String({ description: 'the token and .ics, as in the url answered when the feed was created' })
})

export const ListQuery = Type.Object(Pagination)

export const CalendarResponse = {
  description: 'An iCalendar (RFC 5545) document: one all-day VEVENT per visit, UID stable across edits, SEQUENCE the visit\'s version',
  headers: {
    'cache-control': Type.String({ description: 'private, no-store' }),
    'referrer-policy': Type.String({ description: 'no-referrer' })
  },
  content: {
    'text/calendar': { schema: Type.String({ description: 'BEGIN:VCALENDAR ... END:VCALENDAR, CRLF line endings, lines folded at 75 octets' }) }
  }
}
