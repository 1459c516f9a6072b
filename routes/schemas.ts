import { ListOf, sharedSchemas } from '../lib/schemas'
import { TokenPair, User } from './auth/schemas'
import { Me, Session } from './me/schemas'
import { Child } from './children/schemas'
import { Measurement } from './measurements/schemas'
import { Visit } from './visits/schemas'
import { MedicalEvent } from './medical-events/schemas'
import { Illness } from './illnesses/schemas'
import { Temperature } from './temperatures/schemas'
import { Attachment } from './attachments/schemas'
import { AcceptedInvite, CreatedInvite, Family, FamilyRole, Invite, Member } from './families/schemas'
import { AdminFamily, AdminUser, Stats } from './admin/schemas'
import { Change, ChangeFeed, HistoryEntry, HistoryEntryList } from './changes/schemas'
import { CalendarFeed, CreatedCalendarFeed } from './calendar/schemas'
import { DueVaccine } from './due/schemas'

const listed = ['Family', 'Member', 'Invite', 'Session', 'Child', 'Measurement', 'Visit', 'MedicalEvent', 'Illness', 'Temperature', 'Attachment', 'AdminUser', 'CalendarFeed', 'DueVaccine']

/**
 * Objects the API answers with, registered once at the root and referenced by
 * $id, so that the OpenAPI document names them and generated clients get named types.
 */
export const namedSchemas = [
  ...sharedSchemas, User, TokenPair, Me, Session, FamilyRole, Family, Member, Invite, CreatedInvite, AcceptedInvite,
  Child, Measurement, Visit, MedicalEvent, Illness, Temperature, Attachment, AdminUser, AdminFamily, Stats,
  Change, ChangeFeed, HistoryEntry, HistoryEntryList, CalendarFeed, CreatedCalendarFeed, DueVaccine,
  ...listed.map(ListOf)
]
