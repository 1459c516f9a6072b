import type { FastifyBaseLogger, FastifyReply } from 'fastify'
import type { Sql } from '../db/client'
import { isAfter, presentChange, type Position, type StoredChange } from '../kinds/changes'
import { errors } from '../lib/errors'
import type { FamilyRole } from '../lib/roles'
import { changesAfter, changesHeldBack, familyClock, familyPositions } from '../sql/changes'
import { isMember } from '../sql/families'
import { sessionsStillActive } from '../sql/tickets'
import {
  BATCH, event, HELD_BACK_MS, MAX_UNREAD, newListener, RETRY_MS, STREAMS_PER_USER, STREAMS_RETRY_AFTER, unread,
  type EventStream, type Family, type Holder, type Listener
} from './event-streams'

/**
 * The event streams open on this instance, by family, session and user: a
 * family's changes are read once for all its streams, one read at a time.
 * Each stream keeps the last change it was sent, so none is sent twice or
 * skipped. What wakes a family (a notification, a write of this instance, a
 * poll of the clocks) is told from outside.
 */
export class EventHub {
  private readonly families = new Map<number, Family>()
  private readonly sessions = new Map<number, Set<Listener>>()
  private readonly perUser = new Map<number, number>()
  private closing = false

  constructor (
    private readonly sql: Sql,
    private readonly log: FastifyBaseLogger,
    /** A client that reads nothing this long while changes wait is cut. */
    private readonly idleTimeout: number
  ) {}

  /** The streams open now. */
  count (): number {
    return [...this.families.values()].reduce((sum, family) => sum + family.listeners.size, 0)
  }

  /** The families streamed now. */
  streamed (): number[] {
    return [...this.families.keys()]
  }

  /** The sessions streaming now. */
  streamingSessions (): number[] {
    return [...this.sessions.keys()]
  }

  private register (listener: Listener): void {
    let family = this.families.get(listener.familyId)
    if (family === undefined) {
      family = { listeners: new Set(), running: false, again: false }
      this.families.set(listener.familyId, family)
    }
    family.listeners.add(listener)
    let own = this.sessions.get(listener.sessionId)
    if (own === undefined) {
      own = new Set()
      this.sessions.set(listener.sessionId, own)
    }
    own.add(listener)
    this.perUser.set(listener.userId, (this.perUser.get(listener.userId) ?? 0) + 1)
  }

  private unregister (listener: Listener): void {
    const family = this.families.get(listener.familyId)
    family?.listeners.delete(listener)
    if (family !== undefined && family.listeners.size === 0 && !family.running) this.families.delete(listener.familyId)
    const own = this.sessions.get(listener.sessionId)
    own?.delete(listener)
    if (own?.size === 0) this.sessions.delete(listener.sessionId)
    const count = (this.perUser.get(listener.userId) ?? 1) - 1
    if (count > 0) this.perUser.set(listener.userId, count)
    else this.perUser.delete(listener.userId)
  }

  /** Ends a stream: its response ends after what it holds, or at once when `cut`. */
  private finish (listener: Listener, reason: string, cut = false): void {
    if (listener.ended) return
    listener.ended = true
    this.unregister(listener)
    listener.resume?.()
    if (listener.started) listener.log.info({ familyId: listener.familyId, reason }, 'event stream ended')
    if (cut) listener.raw.destroy()
    else if (!listener.out.destroyed) listener.out.end()
  }

  private write (listener: Listener, text: string): void {
    if (listener.ended || listener.out.destroyed) return
    listener.out.write(text)
  }

  /**
   * Cuts a stream that still holds more than MAX_UNREAD when more is to be
   * written. Asked only after the event loop had its turn, so that what a
   * burst wrote at once has had its chance to reach the socket.
   */
  private cutIfUnread (listener: Listener): boolean {
    if (listener.ended || unread(listener) <= MAX_UNREAD) return listener.ended
    this.finish(listener, 'the client does not read', true)
    return true
  }

  /** Sends one change, unless the stream has it; the user's own removal is the last thing it gets. */
  private send (listener: Listener, row: StoredChange): void {
    if (listener.ended || !isAfter(row, listener.last)) return
    const own = row.kind === 'member' && row.recordId === listener.userId
    const role = row.record?.role
    if (own && row.op !== 'deleted' && typeof role === 'string') listener.role = role as FamilyRole
    listener.last = { xid: row.xid, seq: row.seq }
    this.write(listener, event(presentChange(row, listener.epoch, listener.role)))
    if (own && row.op === 'deleted') this.finish(listener, 'the member was removed')
  }

  /** Waits until the client has read what the stream holds; a client that reads nothing for the idle timeout is cut. */
  private drained (listener: Listener, reason: string): Promise<void> {
    return new Promise(resolve => {
      const done = (): void => {
        clearTimeout(timer)
        listener.out.off('drain', done)
        listener.resume = null
        resolve()
      }
      const timer = setTimeout(() => this.finish(listener, reason, true), this.idleTimeout)
      listener.out.once('drain', done)
      listener.resume = done
    })
  }

  /**
   * Sends a stream what it missed, at the pace its client reads, before the
   * family's reads deliver to it: a new stream, or one that fell more than
   * MAX_UNREAD behind a burst. A read that fails ends the stream: its client
   * resumes from the last change it got.
   */
  private async catchUp (listener: Listener, reason = 'the client read nothing while changes waited'): Promise<void> {
    try {
      for (;;) {
        if (listener.out.writableNeedDrain) await this.drained(listener, reason)
        if (listener.ended) return
        const rows = await changesAfter(this.sql, listener.familyId, listener.last, BATCH)
        if (this.cutIfUnread(listener)) return
        for (const row of rows) {
          this.send(listener, row)
          if (listener.ended) return
          if (listener.out.writableNeedDrain) await this.drained(listener, reason)
          if (listener.ended) return
        }
        if (rows.length < BATCH) break
      }
      listener.live = true
      this.wake(listener.familyId)
    } catch (error) {
      listener.log.warn({ err: error, familyId: listener.familyId }, 'event stream: could not read the changes it missed')
      this.finish(listener, 'the database did not answer')
    }
  }

  /** Reads the family's new changes once for all its caught-up streams. */
  private async deliver (familyId: number, family: Family): Promise<void> {
    const clock = await familyClock(this.sql, familyId)
    if (clock === undefined) {
      for (const listener of [...family.listeners]) this.finish(listener, 'the family was deleted')
      return
    }
    for (const listener of [...family.listeners]) {
      if (listener.epoch !== '' && listener.epoch !== clock.epoch) this.finish(listener, 'the family\'s data was restored')
    }
    const live = [...family.listeners].filter(listener => listener.live)
    if (live.length === 0) return
    let after = live.map(listener => listener.last).reduce((least, position) => isAfter(least, position) ? position : least)
    while (live.some(listener => listener.live && !listener.ended)) {
      const rows = await changesAfter(this.sql, familyId, after, BATCH)
      // A stream more than MAX_UNREAD behind leaves the burst and goes on at
      // its client's pace; a client that reads nothing then is cut.
      for (const listener of live) {
        if (listener.live && !listener.ended && unread(listener) > MAX_UNREAD) {
          listener.live = false
          void this.catchUp(listener, 'the client does not read')
        }
      }
      const open = live.filter(listener => listener.live && !listener.ended)
      for (const row of rows) {
        for (const listener of open) this.send(listener, row)
      }
      if (rows.length < BATCH) break
      after = rows[rows.length - 1]
    }
    // Changes that committed after an older transaction began wait for it to end: look again soon.
    if (await changesHeldBack(this.sql, familyId)) setTimeout(() => this.wake(familyId), HELD_BACK_MS).unref()
  }

  /** The family changed: reads its changes, or once more after the read under way. */
  wake (familyId: number): void {
    const family = this.families.get(familyId)
    if (family === undefined || this.closing) return
    if (family.running) {
      family.again = true
      return
    }
    family.running = true
    void (async () => {
      try {
        do {
          family.again = false
          await this.deliver(familyId, family)
        } while (family.again && !this.closing)
      } catch (error) {
        this.log.warn({ err: error, familyId }, 'event streams: could not read the family\'s changes; trying again')
        setTimeout(() => this.wake(familyId), RETRY_MS).unref()
      } finally {
        family.running = false
        if (family.listeners.size === 0 && this.families.get(familyId) === family) this.families.delete(familyId)
      }
    })()
  }

  /** Every streamed family, as after notifications that may have been missed. */
  wakeAll (): void {
    for (const familyId of this.families.keys()) this.wake(familyId)
  }

  /** A live stream of the family is behind this position of its changes, or its epoch moved. */
  isBehind (familyId: number, found: (Position & { epoch: string }) | undefined): boolean {
    const family = this.families.get(familyId)
    if (family === undefined) return false
    return [...family.listeners].some(listener => listener.live && (found === undefined || found.epoch !== listener.epoch || isAfter(found, listener.last)))
  }

  /** Ends the streams of a session that ended. */
  endSession (sessionId: number): void {
    for (const listener of [...this.sessions.get(sessionId) ?? []]) this.finish(listener, 'the session ended')
  }

  /** Writes a comment to every stream that reads, so that proxies and clients know it is alive. */
  keepAlive (): void {
    for (const family of this.families.values()) {
      for (const listener of [...family.listeners]) {
        if (!this.cutIfUnread(listener)) this.write(listener, ': keep-alive\n\n')
      }
    }
  }

  /** Opens a stream of the holder's family once its session, its family and its membership are checked. */
  async open (reply: FastifyReply, holder: Holder): Promise<EventStream> {
    if (this.closing) throw new errors.serviceUnavailable('The service is shutting down; try again shortly')
    if ((this.perUser.get(holder.userId) ?? 0) >= STREAMS_PER_USER) {
      reply.header('retry-after', String(STREAMS_RETRY_AFTER))
      throw new errors.rateLimited(`At most ${STREAMS_PER_USER} event streams may be open at once; retry in ${STREAMS_RETRY_AFTER} seconds`)
    }
    const listener = newListener(reply, holder)
    this.register(listener)
    reply.raw.once('close', () => this.finish(listener, 'the client went away'))
    try {
      const clock = await familyClock(this.sql, holder.familyId)
      const [position] = await familyPositions(this.sql, [holder.familyId])
      if (clock === undefined || position === undefined) throw new errors.notFound('Family')
      if ((await sessionsStillActive(this.sql, [holder.sessionId])).length === 0) throw new errors.unauthorized('The session has ended')
      if (!(await isMember(this.sql, holder.familyId, holder.userId))) throw new errors.forbidden()
      listener.epoch = clock.epoch
      return {
        clock,
        position: { xid: position.xid, seq: position.seq },
        body: listener.out,
        start: after => {
          listener.last = after
          listener.started = true
          this.write(listener, ': open\n\n')
          void this.catchUp(listener)
        },
        cancel: () => {
          this.finish(listener, 'refused')
        }
      }
    } catch (error) {
      this.finish(listener, 'refused')
      throw error
    }
  }

  /** The service is shutting down: no stream opens and no family is read any more. */
  stop (): void {
    this.closing = true
  }

  /** Ends every stream, once stopped. */
  close (): void {
    this.closing = true
    for (const family of [...this.families.values()]) {
      for (const listener of [...family.listeners]) this.finish(listener, 'the service is shutting down')
    }
  }
}
