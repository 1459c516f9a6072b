import type { FastifyBaseLogger } from 'fastify'
import type { Sql } from '../db/client'
import { familyPositions } from '../sql/changes'
import { sessionsStillActive } from '../sql/tickets'
import type { EventHub } from './event-hub'

/**
 * The database's side of the event streams: PostgreSQL tells every instance
 * which family changed (LISTEN family_changes) and which session ended
 * (LISTEN sessions_ended), on one connection of its own outside the pool.
 * After each reconnection of that connection, what was notified meanwhile is
 * caught up. Writes that send no notification (the command line, another
 * process) are found by polling the clocks of the families streamed.
 */
export class EventListening {
  private unlisten: Array<() => Promise<unknown>> = []

  constructor (private readonly sql: Sql, private readonly hub: EventHub, private readonly log: FastifyBaseLogger) {}

  /** Listens; a database that does not answer yet is listened to once it does. */
  async start (): Promise<void> {
    const listening = Promise.all([
      this.sql.listen('family_changes', payload => this.onFamilyChange(payload), () => this.hub.wakeAll()),
      this.sql.listen('sessions_ended', payload => this.hub.endSession(Number(payload)), () => { void this.recheckSessions() })
    ])
    try {
      this.unlisten = (await listening).map(request => request.unlisten)
    } catch (error) {
      // The listening connection keeps trying on its own, and catches up once it listens.
      this.log.warn({ err: error }, 'event streams: not listening to the database yet')
    }
  }

  async stop (): Promise<void> {
    await Promise.allSettled(this.unlisten.map(stop => stop()))
  }

  private onFamilyChange (payload: string): void {
    for (const part of payload.split(',')) {
      const familyId = Number(part)
      if (Number.isSafeInteger(familyId) && familyId > 0) this.hub.wake(familyId)
    }
  }

  /** Ends the streams of sessions that ended while no notification could arrive. */
  private async recheckSessions (): Promise<void> {
    const ids = this.hub.streamingSessions()
    if (ids.length === 0) return
    try {
      const active = new Set((await sessionsStillActive(this.sql, ids)).map(session => session.id))
      for (const id of ids) {
        if (!active.has(id)) this.hub.endSession(id)
      }
    } catch (error) {
      this.log.warn({ err: error }, 'event streams: could not check their sessions')
    }
  }

  /** Wakes each streamed family whose changes moved without a word: writes of the command line, of another process. */
  async pollClocks (): Promise<void> {
    const streamed = this.hub.streamed()
    if (streamed.length === 0) return
    try {
      const positions = new Map((await familyPositions(this.sql, streamed)).map(found => [found.familyId, found]))
      for (const familyId of streamed) {
        if (this.hub.isBehind(familyId, positions.get(familyId))) this.hub.wake(familyId)
      }
    } catch (error) {
      this.log.debug({ err: error }, 'event streams: the families could not be read; trying again')
    }
  }
}
