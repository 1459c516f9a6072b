// An account's fields as the API checks them in its bodies, and the command
// line with the same rules.
import { Type } from '@sinclair/typebox'
import { Name, Secret } from './schemas'

/** The bytes of a password: bcrypt reads only 72, so a longer one is refused, never cut. */
export const MIN_PASSWORD_BYTES = 8
export const MAX_PASSWORD_BYTES = 72

export const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254 })
export const Password = Secret({ 'x-min-bytes': MIN_PASSWORD_BYTES, 'x-max-bytes': MAX_PASSWORD_BYTES, description: '8 to 72 bytes' })
export const UserName = Name(100)

/** The front end's page a sign-in with the identity provider comes back to (lib/oidc/redirect.ts checks it). */
export const FrontEndPath = Type.String({
  minLength: 1,
  maxLength: 2000,
  description: 'The front end\'s path to come back to, on this service\'s origin: one / then anything but another / or \\, without # or spaces; characters outside printable ASCII come back percent-encoded in UTF-8',
  examples: ['/children/7?tab=growth']
})
