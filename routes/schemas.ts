import { sharedSchemas } from '../lib/schemas'
import { TokenPair, User } from './auth/schemas'
import { AcceptedInvite, CreatedInvite, Family, FamilyRole, Invite, Member } from './families/schemas'

/** Objects that several resources answer with: registered once and referenced by $id. */
export const namedSchemas = [...sharedSchemas, User, TokenPair, FamilyRole, Family, Member, Invite, CreatedInvite, AcceptedInvite]
