import type { FastifyBaseLogger, FastifyReply } from 'fastify'
import type { ServerResponse } from 'node:http'
import { PassThrough, type Readable } from 'node:stream'
import { START, type Position, type presentChange } from '../kinds/changes'
import type { FamilyRole } from '../lib/roles'
import type { Clock } from '../sql/changes'

// What the event streams are made of: their limits, the shapes of a stream
// and of its listener, and an event as it is written.

/** Open streams of one user on one instance; the next one is a 429. */
export const STREAMS_PER_USER = 5
/** When a user who has all their streams open may try again, in seconds. */
export const STREAMS_RETRY_AFTER = 10
/** What a stream may hold unread before it is ended: its client does not read. */
export const MAX_UNREAD = 1024 * 1024
/** Changes read at once. */
export const BATCH = 100
/** How soon a family's changes are read again after the database failed to answer. */
export const RETRY_MS = 1000
/** Writes committed within this time are announced to every instance in one NOTIFY. */
export const ANNOUNCE_EVERY_MS = 10
/** How often the families streamed here are read, for writes nobody announced. */
export const POLL_EVERY_MS = 2000
/** How soon a family is read again while an older transaction holds its committed changes back. */
export const HELD_BACK_MS = 100

/** Who listens, to which family. */
export interface Holder {
  familyId: number
  userId: number
  sessionId: number
  role: FamilyRole
}

export interface EventStream {
  /** The family's epoch and version once the stream was registered. */
  clock: Clock
  /** The last of the family's changes that could be read in order then. */
  position: Position
  /** The response body: `text/event-stream`. */
  body: Readable
  /** Sends every change after `after`, then each new one as it can be read in order. */
  start: (after: Position) => void
  /** Gives the stream up before it was answered. */
  cancel: () => void
}

export interface ChangeEvents {
  /**
   * Registers a stream for the reply's request, then checks the family, the
   * session and the membership again: whatever ends after this point ends the
   * stream. 429 beyond STREAMS_PER_USER, 404, 401 or 403 when one of them is gone.
   */
  open: (reply: FastifyReply, holder: Holder) => Promise<EventStream>
  /** Streams open on this instance. */
  count: () => number
  /** A write of the family committed on this instance: every instance is told, for many writes at a time. */
  announce: (familyId: number) => void
}

declare module 'fastify' {
  interface FastifyInstance {
    changeEvents: ChangeEvents
  }
}

export interface Listener extends Holder {
  out: PassThrough
  raw: ServerResponse
  log: FastifyBaseLogger
  epoch: string
  /** The last change sent. */
  last: Position
  /** Caught up: the family's reads deliver to it. */
  live: boolean
  ended: boolean
  /** Answered: its end is worth a log line. */
  started: boolean
  /** Wakes a catch-up waiting for the client to read. */
  resume: (() => void) | null
}

/** The streams of one family, and its one read of changes at a time. */
export interface Family {
  listeners: Set<Listener>
  running: boolean
  again: boolean
}

/** A stream of the holder's family, not yet started: it waits for its first position. */
export function newListener (reply: FastifyReply, holder: Holder): Listener {
  return {
    ...holder,
    out: new PassThrough(),
    raw: reply.raw,
    log: reply.request.log,
    epoch: '',
    last: START,
    live: false,
    ended: false,
    started: false,
    resume: null
  }
}

export function unread (listener: Listener): number {
  return listener.out.writableLength + listener.out.readableLength + listener.raw.writableLength
}

export function event (change: ReturnType<typeof presentChange>): string {
  return `event: change\nid: ${change.cursor}\ndata: ${JSON.stringify(change)}\n\n`
}
