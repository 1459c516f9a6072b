import { sharedSchemas } from '../lib/schemas'
import { TokenPair, User } from './auth/schemas'
import { Child } from './children/schemas'
import { Measurement } from './measurements/schemas'
import { Visit } from './visits/schemas'
import { MedicalEvent } from './medical-events/schemas'
import { Illness } from './illnesses/schemas'
import { AcceptedInvite, CreatedInvite, Family, FamilyRole, Invite, Member } from './families/schemas'
import { AdminFamily, AdminUser, Stats } from './admin/schemas'

/** Objects that several resources answer with: registered once and referenced by $id. */
export const namedSchemas = [...sharedSchemas, User, TokenPair, FamilyRole, Family, Member, Invite, CreatedInvite, AcceptedInvite,
  Child, Measurement, Visit, MedicalEvent, Illness,
  AdminUser, AdminFamily, Stats]
