// An account's fields as the API checks them in its bodies, and the command
// line with the same rules.
import { Type } from '@sinclair/typebox'
import { MAX_PASSWORD_BYTES, MIN_PASSWORD_BYTES } from './passwords'
import { Name, Secret } from './schemas'

export const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254 })
export const Password = Secret({ 'x-min-bytes': MIN_PASSWORD_BYTES, 'x-max-bytes': MAX_PASSWORD_BYTES, description: '8 to 72 bytes' })
export const UserName = Name(100)
