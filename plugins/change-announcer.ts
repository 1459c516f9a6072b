import type { FastifyBaseLogger } from 'fastify'
import type { Sql } from '../db/client'
import { ANNOUNCE_EVERY_MS } from './event-streams'

/**
 * Tells every instance which families were written here: the writes of
 * ANNOUNCE_EVERY_MS go in one NOTIFY, since a NOTIFY in every writing
 * transaction would serialize their commits.
 */
export class Announcer {
  /** The families written on this instance since the last announcement. */
  private readonly written = new Set<number>()
  private timer: NodeJS.Timeout | null = null

  constructor (private readonly sql: Sql, private readonly log: FastifyBaseLogger) {}

  add (familyId: number): void {
    this.written.add(familyId)
    this.timer ??= setTimeout(() => { void this.send() }, ANNOUNCE_EVERY_MS)
  }

  /** Sends what waits now, if anything. */
  async flush (): Promise<void> {
    if (this.timer === null) return
    clearTimeout(this.timer)
    await this.send()
  }

  private async send (): Promise<void> {
    this.timer = null
    const ids = [...this.written]
    this.written.clear()
    // A payload holds at most 8000 bytes.
    for (let start = 0; start < ids.length; start += 500) {
      try {
        await this.sql`select pg_notify('family_changes', ${ids.slice(start, start + 500).join(',')})`
      } catch (error) {
        this.log.debug({ err: error }, 'event streams: a write could not be announced; the clocks are read soon anyway')
      }
    }
  }
}
