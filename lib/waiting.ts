/**
 * How long a closing hook waits for work of the background (a sweep, a
 * download) before the pool closes under it. Fastify fails a hook that takes
 * its plugin timeout (10 s) and the close with it, so the waits of all hooks
 * together stay well below that.
 */
export const CLOSE_WAIT_MS = 2000

/**
 * Waits for a promise at most `ms` milliseconds and answers whether it
 * settled in time. Its outcome is left to whoever made it: work that outlives
 * the wait goes on, and reports itself where it was started.
 */
export async function settledWithin (promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<false>(resolve => { timer = setTimeout(() => resolve(false), ms) })
  try {
    return await Promise.race([promise.then(() => true, () => true), late])
  } finally {
    clearTimeout(timer)
  }
}
