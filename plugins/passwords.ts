import fp from 'fastify-plugin'
import { holdPasswordWorkers } from '../io/passwords'

/** The app holds bcrypt's worker threads while it runs: they end when it closes (with the last app of the process). */
export default fp(async function passwords (fastify) {
  const letGo = holdPasswordWorkers()
  fastify.addHook('onClose', letGo)
}, { name: 'passwords' })
