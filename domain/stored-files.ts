import type { FastifyBaseLogger } from 'fastify'
import { afterCommit } from '../db/ambient'
import type { Config } from '../io/config'
import { removeAfterCommit, type StoredNames } from '../io/stored-files'

/**
 * Removes stored files whose rows the running work deleted, once it has
 * committed: at once after a transaction of its own, after the outermost
 * commit inside an ambient one (a batch, a request with an Idempotency-Key),
 * and never when that rolls back, so that a row that comes back keeps its file.
 */
export async function removeWhenCommitted (
  config: Pick<Config, 'uploadDir' | 'avatarDir'>, log: Pick<FastifyBaseLogger, 'warn'>, names: StoredNames, message: string
): Promise<void> {
  await afterCommit(async () => await removeAfterCommit(config, log, names, message))
}
