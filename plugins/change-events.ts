import fp from 'fastify-plugin'
import { CLOSE_WAIT_MS, settledWithin } from '../lib/waiting'
import { Announcer } from './change-announcer'
import { EventHub } from './event-hub'
import { EventListening } from './event-listening'
import { POLL_EVERY_MS } from './event-streams'
import { scopeOf } from './scope'

export { STREAMS_PER_USER } from './event-streams'

/**
 * Live updates: a family's changes, as they commit on any instance, to the
 * event streams open on this one (plugins/event-hub.ts), woken by the
 * database's notifications and a poll of the clocks
 * (plugins/event-listening.ts), and by this instance's own writes, announced
 * to the others once committed (plugins/change-announcer.ts).
 */
export default fp(async function changeEvents (fastify) {
  const { config, sql } = fastify
  const hub = new EventHub(sql, fastify.log, config.downloadIdleTimeout)
  const listening = new EventListening(sql, hub, fastify.log)
  const announcer = new Announcer(sql, fastify.log)
  let closing = false
  await listening.start()

  function announce (familyId: number): void {
    if (!closing) announcer.add(familyId)
  }

  const keepAlive = setInterval(() => hub.keepAlive(), config.eventKeepAlive)
  keepAlive.unref()
  const polling = setInterval(() => { void listening.pollClocks() }, POLL_EVERY_MS)
  polling.unref()

  // A write of a family's data answered with success is announced once
  // committed: at once, or after the commit of the transaction it ran in (a
  // batch's), and not at all when that rolls back.
  fastify.addHook('onResponse', (request, reply, done) => {
    const familyId = scopeOf(request)?.familyId
    if (request.method !== 'GET' && request.method !== 'HEAD' && reply.statusCode < 400 && typeof familyId === 'number') {
      void request.afterCommit(() => announce(familyId))
    }
    done()
  })

  fastify.decorate('changeEvents', {
    open: async (reply, holder) => await hub.open(reply, holder),
    count: () => hub.count(),
    announce
  })

  // Open streams would hold the server open: they end before it closes.
  fastify.addHook('preClose', async () => {
    closing = true
    hub.stop()
    clearInterval(keepAlive)
    clearInterval(polling)
    await settledWithin(announcer.flush(), CLOSE_WAIT_MS)
    hub.close()
  })
  fastify.addHook('onClose', async () => {
    await settledWithin(listening.stop(), 1000)
  })
}, { name: 'change-events', dependencies: ['db', 'config', 'access', 'handover'] })
