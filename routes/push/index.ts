import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errors } from '../../lib/errors'
import { errorResponses, operations } from '../../lib/schemas'
import { vapidKeys } from '../../io/vapid'
import { PushPublicKey } from './schemas'

const operation = operations(['notifications'])

const DESCRIPTION = 'The key a browser subscribes with (PushManager.subscribe({ userVisibleOnly: true, applicationServerKey })) ' +
  'before it gives its subscription to PUT /api/me/notifications as a webpush channel. Any signed-in user may read it. ' +
  'It changes only when the service\'s VAPID keys change; a subscription made with another key must be made again. ' +
  'When the service has no VAPID keys (in production without VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY), Web Push is off ' +
  'and this answers 503 PUSH_DISABLED: a client then offers no Web Push channel.'

/** Web Push: the VAPID public key browsers subscribe with. */
const push: FastifyPluginAsyncTypebox = async function (fastify) {
  fastify.addSchema(PushPublicKey)
  const keys = vapidKeys(fastify.config)
  if (keys === null) fastify.log.info('Web Push is off: VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY are not set')

  fastify.get('/api/push/public-key', {
    schema: operation('getPushPublicKey', 'The VAPID public key for subscribing a browser to Web Push', {
      description: DESCRIPTION,
      response: {
        200: Type.Ref('PushPublicKey'),
        ...errorResponses(401, 403),
        503: Type.Ref('Error', { description: 'Web Push is off (PUSH_DISABLED), or the database is unavailable' })
      }
    })
  }, async () => {
    if (keys === null) throw new errors.pushDisabled()
    return { publicKey: keys.publicKey }
  })
}

export default push
