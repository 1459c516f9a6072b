import { Type } from '@sinclair/typebox'
import { Id, StrictObject } from '../../lib/schemas'

export const AcceptedInvite = Type.Object({
  familyId: Id,
  familyName: Type.String(),
  role: Type.Ref('FamilyRole')
}, { $id: 'AcceptedInvite', title: 'AcceptedInvite' })

export const AcceptBody = StrictObject({ token: Type.String({ minLength: 1, maxLength: 200, 'x-secret': true }) })
