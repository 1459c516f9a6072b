/**
 * iCalendar (RFC 5545) text: a family's visits, vaccine due dates and
 * schedule doses as all-day events, for calendar applications that
 * subscribe to a feed.
 */

/** A visit as a feed shows it. */
export interface FeedVisit {
  id: number
  childName: string
  /** YYYY-MM-DD */
  date: string
  type: string
  provider: string | null
  notes: string | null
  version: number
  updatedAt: Date
}

/** A vaccine's next due date, from its latest dose, as a feed shows it. */
export interface FeedDue {
  /** The latest dose's medical event. */
  id: number
  childName: string
  name: string
  /** YYYY-MM-DD */
  dueDate: string
  /** YYYY-MM-DD, the day the latest dose was given */
  date: string
  doseNumber: number | null
  version: number
  updatedAt: Date
}

/** A dose of a child's vaccine schedule not yet recorded, as a feed shows it. */
export interface FeedScheduleDose {
  childId: number
  childName: string
  scheduleId: string
  /** The series' code, e.g. DTaP. */
  vaccine: string
  seriesName: string
  doseNumber: number
  /** YYYY-MM-DD */
  dueFrom: string
  /** YYYY-MM-DD */
  dueBy: string
  /** Grows whenever the child or its records change, which may move the dose. */
  sequence: number
  updatedAt: Date
}

/** One all-day event. */
export interface CalendarEvent {
  uid: string
  sequence: number
  stamp: Date
  /** YYYY-MM-DD */
  date: string
  summary: string
  description: string | null
}

const LINE_OCTETS = 75
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/**
 * A TEXT value (RFC 5545 3.3.11): backslash, semicolon and comma escaped,
 * newlines as \n. Control characters other than tab, CR included, are
 * dropped: the format does not allow them.
 */
export function escapeText (value: string): string {
  return value
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '')
    .replace(/[\\;,\n]/g, char => char === '\n' ? '\\n' : `\\${char}`)
}

/**
 * A content line folded at 75 octets (RFC 5545 3.1): each continuation line
 * starts with one space, and no UTF-8 character is split.
 */
export function foldLine (line: string): string {
  if (Buffer.byteLength(line, 'utf8') <= LINE_OCTETS) return line
  const lines: string[] = []
  let current = ''
  let octets = 0
  for (const char of line) {
    const size = Buffer.byteLength(char, 'utf8')
    if (octets + size > LINE_OCTETS) {
      lines.push(current)
      current = ' '
      octets = 1
    }
    current += char
    octets += size
  }
  lines.push(current)
  return lines.join('\r\n')
}

function parseDate (date: string): [number, number, number] {
  const match = DATE.exec(date)
  if (match === null) throw new Error(`not a date: ${date}`)
  return [Number(match[1]), Number(match[2]), Number(match[3])]
}

const pad = (value: number, width = 2): string => String(value).padStart(width, '0')

/** YYYY-MM-DD as an iCalendar DATE, YYYYMMDD. */
export function icsDate (date: string): string {
  const [year, month, day] = parseDate(date)
  return `${pad(year, 4)}${pad(month)}${pad(day)}`
}

/** The day after a YYYY-MM-DD date, counted in UTC so that no time zone shifts it. */
export function nextDay (date: string): string {
  const [year, month, day] = parseDate(date)
  const next = new Date(0)
  // setUTCFullYear, unlike Date.UTC, takes years below 100 as they are.
  next.setUTCFullYear(year, month - 1, day + 1)
  return `${pad(next.getUTCFullYear(), 4)}-${pad(next.getUTCMonth() + 1)}-${pad(next.getUTCDate())}`
}

/** A moment as an iCalendar DATE-TIME in UTC, YYYYMMDDTHHMMSSZ. */
export function icsTimestamp (at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '')
}

/** A visit as an event: its UID stays the same across edits, its SEQUENCE is its version. */
export function visitEvent (visit: FeedVisit): CalendarEvent {
  const parts: string[] = []
  if (visit.provider !== null) parts.push(`Provider: ${visit.provider}`)
  if (visit.notes !== null) parts.push(`Notes: ${visit.notes}`)
  return {
    uid: `visit-${visit.id}@child-health`,
    sequence: visit.version,
    stamp: visit.updatedAt,
    date: visit.date,
    summary: `${visit.childName}: ${visit.type} visit`,
    description: parts.length === 0 ? null : parts.join('\n')
  }
}

/**
 * A vaccine's due date as an event. Its UID is the latest dose's, apart from
 * any other event's: a new dose takes the old due date off the feed and puts
 * its own on. SEQUENCE is the dose's version.
 */
export function dueEvent (due: FeedDue): CalendarEvent {
  const next = due.doseNumber === null ? '' : ` (dose ${due.doseNumber + 1})`
  const last = due.doseNumber === null ? 'Last dose' : `Dose ${due.doseNumber}`
  return {
    uid: `due-medical-event-${due.id}@child-health`,
    sequence: due.version,
    stamp: due.updatedAt,
    date: due.dueDate,
    summary: `${due.childName}: ${due.name} due${next}`,
    description: `${last} given on ${due.date}`
  }
}

/**
 * A dose of a child's schedule as an event on its dueFrom. Its UID names the
 * schedule, the child, the series and the dose, so it stays the same while
 * the dose moves and leaves the feed once the dose is recorded. SEQUENCE is
 * the number of the child's changes, which grows whenever the dose may move.
 */
export function scheduleEvent (dose: FeedScheduleDose): CalendarEvent {
  return {
    uid: `schedule-${dose.scheduleId}-child-${dose.childId}-${dose.vaccine}-dose-${dose.doseNumber}@child-health`,
    sequence: dose.sequence,
    stamp: dose.updatedAt,
    date: dose.dueFrom,
    summary: `${dose.childName}: ${dose.vaccine} due (dose ${dose.doseNumber})`,
    description: `${dose.seriesName}, dose ${dose.doseNumber} of the schedule: due from ${dose.dueFrom}, on time until ${dose.dueBy}`
  }
}

function eventLines (event: CalendarEvent): string[] {
  return [
    'BEGIN:VEVENT',
    `UID:${escapeText(event.uid)}`,
    `SEQUENCE:${event.sequence}`,
    `DTSTAMP:${icsTimestamp(event.stamp)}`,
    `DTSTART;VALUE=DATE:${icsDate(event.date)}`,
    `DTEND;VALUE=DATE:${icsDate(nextDay(event.date))}`,
    `SUMMARY:${escapeText(event.summary)}`,
    ...(event.description === null ? [] : [`DESCRIPTION:${escapeText(event.description)}`]),
    'TRANSP:TRANSPARENT',
    'END:VEVENT'
  ]
}

/** A whole calendar: CRLF line endings, every line folded. */
export function writeCalendar (name: string, events: CalendarEvent[]): string {
  const lines = [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//child-health//calendar feed//EN',
    'CALSCALE:GREGORIAN',
    'METHOD:PUBLISH',
    `X-WR-CALNAME:${escapeText(name)}`,
    ...events.flatMap(eventLines),
    'END:VCALENDAR'
  ]
  return lines.map(foldLine).join('\r\n') + '\r\n'
}
