import { sharedSchemas } from '../lib/schemas'
import { TokenPair, User } from './auth/schemas'

/** Objects that several resources answer with: registered once and referenced by $id. */
export const namedSchemas = [...sharedSchemas, User, TokenPair]
