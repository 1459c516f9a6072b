import fp from 'fastify-plugin'
import type { FastifyReply } from 'fastify'
import { PassThrough } from 'node:stream'
import { isAfter, presentChange, START, type StoredChange } from '../lib/changes'
import type { FamilyRole } from '../lib/roles'
import { errors } from '../lib/errors'
import { CLOSE_WAIT_MS, settledWithin } from '../lib/waiting'
import { changesAfter, changesHeldBack, familyClock, familyPositions } from '../sql/changes'
import { isMember } from '../sql/families'
import { sessionsStillActive } from '../sql/tickets'
import { Announcer } from './change-announcer'
import {
  BATCH, event, HELD_BACK_MS, MAX_UNREAD, POLL_EVERY_MS, RETRY_MS, STREAMS_PER_USER, STREAMS_RETRY_AFTER, unread,
  type EventStream, type Family, type Holder, type Listener
} from './event-streams'

export { STREAMS_PER_USER } from './event-streams'

/**
 * Live updates: a family's changes, as they commit on any instance, to the
 * event streams open on this one. PostgreSQL tells every instance which family
 * changed (LISTEN family_changes) and which session ended (LISTEN
 * sessions_ended), on one connection of its own outside the pool; a family's
 * changes are then read once for all its streams, one read at a time. Each
 * stream keeps the last change it was sent, so none is sent twice or skipped,
 * also across the reconnections of the listening connection.
 */
export default fp(async function changeEvents (fastify) {
  const { config, sql } = fastify
  const families = new Map<number, Family>()
  const sessions = new Map<number, Set<Listener>>()
  const perUser = new Map<number, number>()
  let closing = false

  function register (listener: Listener): void {
    let family = families.get(listener.familyId)
    if (family === undefined) {
      family = { listeners: new Set(), running: false, again: false }
      families.set(listener.familyId, family)
    }
    family.listeners.add(listener)
    let own = sessions.get(listener.sessionId)
    if (own === undefined) {
      own = new Set()
      sessions.set(listener.sessionId, own)
    }
    own.add(listener)
    perUser.set(listener.userId, (perUser.get(listener.userId) ?? 0) + 1)
  }

  function unregister (listener: Listener): void {
    const family = families.get(listener.familyId)
    family?.listeners.delete(listener)
    if (family !== undefined && family.listeners.size === 0 && !family.running) families.delete(listener.familyId)
    const own = sessions.get(listener.sessionId)
    own?.delete(listener)
    if (own?.size === 0) sessions.delete(listener.sessionId)
    const count = (perUser.get(listener.userId) ?? 1) - 1
    if (count > 0) perUser.set(listener.userId, count)
    else perUser.delete(listener.userId)
  }

  /** Ends a stream: its response ends after what it holds, or at once when `cut`. */
  function finish (listener: Listener, reason: string, cut = false): void {
    if (listener.ended) return
    listener.ended = true
    unregister(listener)
    listener.resume?.()
    if (listener.started) listener.log.info({ familyId: listener.familyId, reason }, 'event stream ended')
    if (cut) listener.raw.destroy()
    else if (!listener.out.destroyed) listener.out.end()
  }

  function write (listener: Listener, text: string): void {
    if (listener.ended || listener.out.destroyed) return
    listener.out.write(text)
  }

  /**
   * Cuts a stream that still holds more than MAX_UNREAD when more is to be
   * written. Asked only after the event loop had its turn, so that what a
   * burst wrote at once has had its chance to reach the socket.
   */
  function cutIfUnread (listener: Listener): boolean {
    if (listener.ended || unread(listener) <= MAX_UNREAD) return listener.ended
    finish(listener, 'the client does not read', true)
    return true
  }

  /** Sends one change, unless the stream has it; the user's own removal is the last thing it gets. */
  function send (listener: Listener, row: StoredChange): void {
    if (listener.ended || !isAfter(row, listener.last)) return
    const own = row.kind === 'member' && row.recordId === listener.userId
    const role = row.record?.role
    if (own && row.op !== 'deleted' && typeof role === 'string') listener.role = role as FamilyRole
    listener.last = { xid: row.xid, seq: row.seq }
    write(listener, event(presentChange(row, listener.epoch, listener.role)))
    if (own && row.op === 'deleted') finish(listener, 'the member was removed')
  }

  /** Waits until the client has read what the stream holds; a client that reads nothing for DOWNLOAD_IDLE_TIMEOUT is cut. */
  function drained (listener: Listener): Promise<void> {
    return new Promise(resolve => {
      const done = (): void => {
        clearTimeout(timer)
        listener.out.off('drain', done)
        listener.resume = null
        resolve()
      }
      const timer = setTimeout(() => finish(listener, 'the client read nothing while changes waited', true), config.downloadIdleTimeout)
      listener.out.once('drain', done)
      listener.resume = done
    })
  }

  /**
   * Sends a new stream what it missed, at the pace its client reads, before
   * the family's reads deliver to it. A read that fails ends the stream: its
   * client resumes from the last change it got.
   */
  async function catchUp (listener: Listener): Promise<void> {
    try {
      for (;;) {
        const rows = await changesAfter(sql, listener.familyId, listener.last, BATCH)
        if (cutIfUnread(listener)) return
        for (const row of rows) {
          send(listener, row)
          if (listener.ended) return
          if (listener.out.writableNeedDrain) await drained(listener)
          if (listener.ended) return
        }
        if (rows.length < BATCH) break
      }
      listener.live = true
      wake(listener.familyId)
    } catch (error) {
      listener.log.warn({ err: error, familyId: listener.familyId }, 'event stream: could not read the changes it missed')
      finish(listener, 'the database did not answer')
    }
  }

  /** Reads the family's new changes once for all its caught-up streams. */
  async function deliver (familyId: number, family: Family): Promise<void> {
    const clock = await familyClock(sql, familyId)
    if (clock === undefined) {
      for (const listener of [...family.listeners]) finish(listener, 'the family was deleted')
      return
    }
    for (const listener of [...family.listeners]) {
      if (listener.epoch !== '' && listener.epoch !== clock.epoch) finish(listener, 'the family\'s data was restored')
    }
    const live = [...family.listeners].filter(listener => listener.live)
    if (live.length === 0) return
    let after = live.map(listener => listener.last).reduce((least, position) => isAfter(least, position) ? position : least)
    while (live.some(listener => !listener.ended)) {
      const rows = await changesAfter(sql, familyId, after, BATCH)
      const open = live.filter(listener => !cutIfUnread(listener))
      for (const row of rows) {
        for (const listener of open) send(listener, row)
      }
      if (rows.length < BATCH) break
      after = rows[rows.length - 1]
    }
    // Changes that committed after an older transaction began wait for it to end: look again soon.
    if (await changesHeldBack(sql, familyId)) setTimeout(() => wake(familyId), HELD_BACK_MS).unref()
  }

  /** The family changed: reads its changes, or once more after the read under way. */
  function wake (familyId: number): void {
    const family = families.get(familyId)
    if (family === undefined || closing) return
    if (family.running) {
      family.again = true
      return
    }
    family.running = true
    void (async () => {
      try {
        do {
          family.again = false
          await deliver(familyId, family)
        } while (family.again && !closing)
      } catch (error) {
        fastify.log.warn({ err: error, familyId }, 'event streams: could not read the family\'s changes; trying again')
        setTimeout(() => wake(familyId), RETRY_MS).unref()
      } finally {
        family.running = false
        if (family.listeners.size === 0 && families.get(familyId) === family) families.delete(familyId)
      }
    })()
  }

  /** Ends the streams of sessions that ended while no notification could arrive. */
  async function recheckSessions (): Promise<void> {
    const ids = [...sessions.keys()]
    if (ids.length === 0) return
    try {
      const active = new Set((await sessionsStillActive(sql, ids)).map(session => session.id))
      for (const id of ids) {
        if (active.has(id)) continue
        for (const listener of [...sessions.get(id) ?? []]) finish(listener, 'the session ended')
      }
    } catch (error) {
      fastify.log.warn({ err: error }, 'event streams: could not check their sessions')
    }
  }

  function onFamilyChange (payload: string): void {
    for (const part of payload.split(',')) {
      const familyId = Number(part)
      if (Number.isSafeInteger(familyId) && familyId > 0) wake(familyId)
    }
  }

  const announcer = new Announcer(sql, fastify.log)

  function announce (familyId: number): void {
    if (!closing) announcer.add(familyId)
  }

  /** Wakes each streamed family whose changes moved without a word: writes of the command line, of another process. */
  async function pollClocks (): Promise<void> {
    const streamed = [...families.keys()]
    if (streamed.length === 0) return
    try {
      const positions = new Map((await familyPositions(sql, streamed)).map(found => [found.familyId, found]))
      for (const familyId of streamed) {
        const family = families.get(familyId)
        const found = positions.get(familyId)
        if (family === undefined) continue
        const behind = [...family.listeners].some(listener => listener.live && (found === undefined || found.epoch !== listener.epoch || isAfter(found, listener.last)))
        if (behind) wake(familyId)
      }
    } catch (error) {
      fastify.log.debug({ err: error }, 'event streams: the families could not be read; trying again')
    }
  }

  function onSessionEnd (payload: string): void {
    for (const listener of [...sessions.get(Number(payload)) ?? []]) finish(listener, 'the session ended')
  }

  // Called again after each reconnection of the listening connection: what
  // was notified meanwhile is caught up.
  const listening = Promise.all([
    sql.listen('family_changes', onFamilyChange, () => { for (const familyId of families.keys()) wake(familyId) }),
    sql.listen('sessions_ended', onSessionEnd, () => { void recheckSessions() })
  ])
  let unlisten: Array<() => Promise<unknown>> = []
  try {
    unlisten = (await listening).map(request => request.unlisten)
  } catch (error) {
    // The listening connection keeps trying on its own, and catches up once it listens.
    fastify.log.warn({ err: error }, 'event streams: not listening to the database yet')
  }

  const keepAlive = setInterval(() => {
    for (const family of families.values()) {
      for (const listener of [...family.listeners]) {
        if (!cutIfUnread(listener)) write(listener, ': keep-alive\n\n')
      }
    }
  }, config.eventKeepAlive)
  keepAlive.unref()
  const polling = setInterval(() => { void pollClocks() }, POLL_EVERY_MS)
  polling.unref()

  // A write of a family's data answered with success has committed: it is announced.
  fastify.addHook('onResponse', (request, reply, done) => {
    const familyId = request.scope?.familyId
    if (request.method !== 'GET' && request.method !== 'HEAD' && reply.statusCode < 400 && typeof familyId === 'number') announce(familyId)
    done()
  })

  async function open (reply: FastifyReply, holder: Holder): Promise<EventStream> {
    if (closing) throw new errors.serviceUnavailable('The service is shutting down; try again shortly')
    if ((perUser.get(holder.userId) ?? 0) >= STREAMS_PER_USER) {
      reply.header('retry-after', String(STREAMS_RETRY_AFTER))
      throw new errors.rateLimited(`At most ${STREAMS_PER_USER} event streams may be open at once; retry in ${STREAMS_RETRY_AFTER} seconds`)
    }
    const listener: Listener = {
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
    register(listener)
    reply.raw.once('close', () => finish(listener, 'the client went away'))
    try {
      const clock = await familyClock(sql, holder.familyId)
      const [position] = await familyPositions(sql, [holder.familyId])
      if (clock === undefined || position === undefined) throw new errors.notFound('Family')
      if ((await sessionsStillActive(sql, [holder.sessionId])).length === 0) throw new errors.unauthorized('The session has ended')
      if (!(await isMember(sql, holder.familyId, holder.userId))) throw new errors.forbidden()
      listener.epoch = clock.epoch
      return {
        clock,
        position: { xid: position.xid, seq: position.seq },
        body: listener.out,
        start (after) {
          listener.last = after
          listener.started = true
          write(listener, ': open\n\n')
          void catchUp(listener)
        },
        cancel () {
          finish(listener, 'refused')
        }
      }
    } catch (error) {
      finish(listener, 'refused')
      throw error
    }
  }

  fastify.decorate('changeEvents', {
    open,
    count: () => [...families.values()].reduce((sum, family) => sum + family.listeners.size, 0),
    announce
  })

  // Open streams would hold the server open: they end before it closes.
  fastify.addHook('preClose', async () => {
    closing = true
    clearInterval(keepAlive)
    clearInterval(polling)
    await settledWithin(announcer.flush(), CLOSE_WAIT_MS)
    for (const family of [...families.values()]) {
      for (const listener of [...family.listeners]) finish(listener, 'the service is shutting down')
    }
  })
  fastify.addHook('onClose', async () => {
    await settledWithin(Promise.allSettled(unlisten.map(stop => stop())), 1000)
  })
}, { name: 'change-events', dependencies: ['db', 'config', 'access'] })
