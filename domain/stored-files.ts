import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../io/config'
import { removeAfterCommit, type StoredNames } from '../io/stored-files'

/** A request's work: its log, and how it runs something once committed. */
export interface Committing {
  log: Pick<FastifyBaseLogger, 'warn'>
  afterCommit: (effect: () => unknown) => Promise<void>
}

/**
 * Removes stored files whose rows the request deleted, once its work has
 * committed: at once after a transaction of its own, after the commit of the
 * transaction it is held in (a batch's, an Idempotency-Key's), and never
 * when that rolls back, so that a row that comes back keeps its file.
 */
export async function removeWhenCommitted (
  work: Committing, config: Pick<Config, 'uploadDir' | 'avatarDir'>, names: StoredNames, message: string
): Promise<void> {
  await work.afterCommit(async () => await removeAfterCommit(config, work.log, names, message))
}
