import { ListOf, sharedSchemas } from '../lib/schemas'
import { OidcSettings, TokenPair, User } from './auth/schemas'
import { CreatedPersonalToken, Identity, IdentityLink, Me, PersonalToken, Preferences, Session } from './me/schemas'
import { Child } from './children/schemas'
import { KINDS } from '../kinds'
import { Attachment } from './attachments/schemas'
import { Family } from '../lib/family-schemas'
import { CreatedInvite, FamilyRole, Invite, Member } from './families/schemas'
import { AcceptedInvite } from './invites/schemas'
import { AdminFamily, AdminUser, Stats } from './admin/schemas'
import { Change, ChangeFeed, HistoryEntry, HistoryEntryList } from './changes/schemas'
import { CalendarFeed, CreatedCalendarFeed } from './calendar/schemas'
import { DueVaccine } from './due/schemas'
import { VaccineSchedule } from '../lib/schedules'
import { NotificationSettings } from './notifications/schemas'
import { CreatedShare, Share } from './shares/schemas'
import { CreatedWebhook, Webhook, WebhookDelivery } from './webhooks/schemas'

/** The kinds of a child's records, in the registry's order. */
const kindSchemas = KINDS.map(kind => kind.schema)
const kindNames = kindSchemas.map(schema => schema.$id as string)

const listed = ['Family', 'Member', 'Invite', 'Session', 'Child', ...kindNames, 'Attachment', 'AdminUser', 'CalendarFeed', 'DueVaccine', 'VaccineSchedule', 'Share', 'Webhook', 'WebhookDelivery', 'PersonalToken', 'Identity']

/**
 * Objects the API answers with, registered once at the root and referenced by
 * $id, so that the OpenAPI document names them and generated clients get named types.
 */
export const namedSchemas = [
  ...sharedSchemas, User, TokenPair, OidcSettings, Preferences, Me, Session, FamilyRole, Family, Member, Invite, CreatedInvite, AcceptedInvite,
  Child, ...kindSchemas, Attachment, AdminUser, AdminFamily, Stats,
  Change, ChangeFeed, HistoryEntry, HistoryEntryList, CalendarFeed, CreatedCalendarFeed, DueVaccine, VaccineSchedule, NotificationSettings, Share, CreatedShare,
  Webhook, CreatedWebhook, WebhookDelivery,
  PersonalToken, CreatedPersonalToken, Identity, IdentityLink,
  ...listed.map(ListOf)
]
