import Module from 'node:module'
import path from 'node:path'
import { Queue } from './postgres-queue'

/**
 * postgres.js requires its queue (`./queue.js` beside its index) as its index
 * loads. Imported before postgres.js, this module puts the queue of
 * db/postgres-queue.ts in the module cache under that file's name, so that
 * every pool of the process uses it. The bundle puts that queue in the
 * file's place itself and holds nothing of this module (scripts/bundle.js).
 */
const index = require.resolve('postgres')
const file = path.join(path.dirname(index), 'queue.js')
/** The id of the module put in the cache; another copy of the service's code (its source and its build, in a test) may have put it there. */
const REPLACED = 'child-health:postgres-queue'
if (require.cache[file]?.id !== REPLACED) {
  if (require.cache[index] !== undefined) throw new Error('postgres.js was loaded before db/postgres-install, with its own queue')
  const queue = new Module(REPLACED)
  queue.filename = file
  queue.loaded = true
  queue.exports = Queue
  require.cache[file] = queue
}
