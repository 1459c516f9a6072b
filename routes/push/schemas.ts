import { Type } from '@sinclair/typebox'

export const PushPublicKey = Type.Object({
  publicKey: Type.String({
    pattern: '^[A-Za-z0-9_-]{87}$',
    description: 'The VAPID public key: base64url (no padding) of the uncompressed P-256 point, 65 bytes. ' +
      'Give it to PushManager.subscribe() as applicationServerKey, decoded to bytes',
    examples: ['BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM']
  })
}, { $id: 'PushPublicKey', title: 'PushPublicKey', additionalProperties: false })
