import fp from 'fastify-plugin'
import { CLOSE_WAIT_MS, settledWithin } from '../lib/waiting'
import { sweepShares } from '../sql/shares'

/** How often ended share links are tidied up, in milliseconds. */
export const SHARE_SWEEP_EVERY_MS = 10 * 60_000

/** Days an ended link stays listed, with its access log, before it goes. */
export const ENDED_SHARES_KEPT_DAYS = 90

/**
 * Share links that have ended lose their encrypted summary, and go with
 * their access log 90 days after they ended; used-up addresses of files go
 * too. Every instance sweeps at start and every ten minutes: each sweep is
 * a few statements that any instance may run at any time. An expired link
 * is never served, swept or not.
 */
export default fp(async function shareSweep (fastify) {
  let timer: NodeJS.Timeout | undefined
  let sweeping: Promise<void> = Promise.resolve()

  function sweep (): void {
    sweeping = sweepShares(fastify.sql, ENDED_SHARES_KEPT_DAYS).then(
      ({ emptied, removed }) => {
        if (emptied + removed > 0) fastify.log.info({ emptied, removed }, 'share links that ended were tidied up')
      },
      error => { fastify.log.warn({ err: error }, 'the sweep of share links failed') }
    )
  }

  fastify.addHook('onReady', async () => {
    sweep()
    timer = setInterval(sweep, SHARE_SWEEP_EVERY_MS)
    timer.unref()
  })
  fastify.addHook('preClose', async () => {
    clearInterval(timer)
    await settledWithin(sweeping, CLOSE_WAIT_MS)
  })
}, { name: 'share-sweep', dependencies: ['db'] })
