import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import sharp from 'sharp'
import { ZipFile } from 'yazl'
import type { InjectOptions } from 'fastify'
import { PASSWORD, type App } from './helper'
import { file, form } from './multipart'

/**
 * A family with every kind of data, and a sample request for every protected
 * route aimed at it: shared by the access matrix and the fuzzing.
 */
export interface Fixture {
  familyId: number
  childId: number
  measurementId: number
  visitId: number
  medicalEventId: number
  illnessId: number
  temperatureId: number
  medicineCourseId: number
  medicineDoseId: number
  allergyId: number
  attachmentId: number
  inviteId: number
  shareId: number
  /** The token of the share's manifest URL. */
  shareToken: string
  webhookId: number
  /** A personal access token of the owner's, for the routes that act on one. */
  tokenId: number
  /** A member of the family made for this fixture, for routes that act on a user. */
  extraUserId: number
  /** A user in no family of the fixture. */
  outsiderUserId: number
  /** An identity of the identity provider linked to the extra member. */
  identityId: number
  marker: string
}

export interface Sample {
  query?: string
  body?: Record<string, unknown>
  /** A multipart body: an image in the field `file`, or with `'archive'` a family archive to import. */
  multipart?: boolean | 'archive'
  /** A CSV file, sent as the body with Content-Type: text/csv. */
  csv?: string
}

const MARKER = 'family-secret-'

/** POSTs that only read: any member, viewers too, may make them. */
export const READS_BY_POST = ['POST /api/families/{id}/events/tickets', 'POST /api/me/calendar-feeds']

/** GETs that need a role that may write the child: a viewer is refused. */
export const WRITERS_ONLY_READS = ['GET /api/children/{childId}/shares', 'GET /api/shares/{id}']

/** Public routes that reach a family's data by a capability in the path, each with its request: the same answer whatever bearer comes with it. */
export function publicSample (route: string, f: Fixture): { url: string, body?: Record<string, unknown>, status: number } | undefined {
  const samples: Record<string, { url: string, body?: Record<string, unknown>, status: number }> = {
    'POST /api/shl/{token}': { url: `/api/shl/${f.shareToken}`, body: { recipient: 'Dr. Matrix' }, status: 200 },
    'GET /api/shl/files/{ticket}': { url: `/api/shl/files/${randomBytes(32).toString('base64url')}`, status: 404 },
    'OPTIONS /api/shl/{token}': { url: `/api/shl/${f.shareToken}`, status: 204 },
    'OPTIONS /api/shl/files/{ticket}': { url: `/api/shl/files/${randomBytes(32).toString('base64url')}`, status: 204 }
  }
  return samples[route]
}

/**
 * POSTs any member may make, viewers too, whose writes are then decided one by
 * one: a viewer's batch is answered, each of its writes a 403 (test/batch.test.ts).
 */
export const DECIDED_INSIDE = ['POST /api/families/{id}/batch']

export interface Answer {
  statusCode: number
  body: string
  json: () => any
}

/**
 * Sends a request through the app; an event stream, which would never end, is
 * closed as soon as its status is known.
 */
export async function injectRoute (app: App, options: InjectOptions): Promise<Answer> {
  const res = await app.inject({ ...options, payloadAsStream: true })
  const stream = res.stream()
  if (String(res.headers['content-type']).startsWith('text/event-stream')) {
    stream.destroy()
    return { statusCode: res.statusCode, body: '', json: () => ({}) }
  }
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  const body = Buffer.concat(chunks).toString('utf8')
  return { statusCode: res.statusCode, body, json: () => JSON.parse(body) }
}

/** A request that a route accepts from a caller allowed to make it. */
export function sample (route: string, f: Fixture): Sample | undefined {
  const samples: Record<string, Sample> = {
    'GET /api/children': { query: `familyId=${f.familyId}` },
    'GET /api/families/{id}/events': {},
    'POST /api/families/{id}/events/tickets': { body: {} },
    'POST /api/families/{id}/batch': { body: { atomic: true, operations: [{ method: 'PATCH', path: `/api/measurements/${f.measurementId}`, body: { notes: 'batched' } }] } },
    'POST /api/children': { body: { name: 'New', dateOfBirth: '2021-01-01', sex: 'male', familyId: f.familyId } },
    'PUT /api/children/{id}': { body: { name: 'Renamed', dateOfBirth: '2020-01-01', sex: 'female' } },
    'PATCH /api/children/{id}': { body: { name: 'Patched' } },
    'POST /api/children/{id}/avatar': { multipart: true },
    'POST /api/children/{childId}/attachments': { multipart: true },
    'GET /api/children/{childId}/export': { query: 'format=json' },
    'GET /api/growth-standards/{indicator}': { query: 'sex=female&from=0&to=10' },
    'POST /api/families/{id}/invites': { body: { email: `new-${randomBytes(3).toString('hex')}@example.org`, role: 'member' } },
    'PATCH /api/families/{id}': { body: { name: 'Renamed family' } },
    'PATCH /api/families/{id}/members/{userId}': { body: { role: 'viewer' } },
    'POST /api/children/{childId}/measurements': { body: { measuredAt: '2022-01-01', weightKg: 9 } },
    'POST /api/children/{childId}/measurements/import': { csv: 'measuredAt,weightKg,notes\n2022-01-01,9,\n2022-02-01,"9,5",second\n' },
    'POST /api/measurements': { body: { childId: f.childId, measuredAt: '2022-01-01', weightKg: 9 } },
    'PUT /api/measurements/{id}': { body: { measuredAt: '2022-01-02', weightKg: 9.5 } },
    'PATCH /api/measurements/{id}': { body: { weightKg: 9.6 } },
    'GET /api/measurements': { query: `childId=${f.childId}` },
    'POST /api/children/{childId}/visits': { body: { date: '2022-01-01', type: 'sick' } },
    'POST /api/visits': { body: { childId: f.childId, date: '2022-01-01', type: 'sick' } },
    'PUT /api/visits/{id}': { body: { date: '2022-01-02', type: 'dental' } },
    'PATCH /api/visits/{id}': { body: { type: 'vision' } },
    'GET /api/visits': { query: `childId=${f.childId}` },
    'POST /api/children/{childId}/medical-events': { body: { date: '2022-01-01', type: 'vaccine', name: 'MMR' } },
    'POST /api/medical-events': { body: { childId: f.childId, date: '2022-01-01', type: 'vaccine', name: 'MMR' } },
    'PUT /api/medical-events/{id}': { body: { date: '2022-01-02', type: 'medication', name: 'Syrup' } },
    'PATCH /api/medical-events/{id}': { body: { name: 'Drops' } },
    'GET /api/medical-events': { query: `childId=${f.childId}` },
    'POST /api/children/{childId}/illnesses': { body: { startDate: '2022-01-01' } },
    'POST /api/illnesses': { body: { childId: f.childId, startDate: '2022-01-01' } },
    'PUT /api/illnesses/{id}': { body: { startDate: '2022-01-02', diagnosis: 'Cold' } },
    'PATCH /api/illnesses/{id}': { body: { diagnosis: 'Flu' } },
    'GET /api/illnesses': { query: `childId=${f.childId}` },
    'POST /api/illnesses/{illnessId}/temperatures': { body: { takenAt: '2021-01-02T08:00:00Z', temperatureC: 38.4, method: 'ear' } },
    'PUT /api/temperatures/{id}': { body: { takenAt: '2021-01-02T09:00:00+01:00', temperatureC: 38.9 } },
    'PATCH /api/temperatures/{id}': { body: { notes: 'after a nap' } },
    'POST /api/children/{childId}/medicine-courses': { body: { name: 'Ibuprofen', doseAmount: 2.5, doseUnit: 'ml', minIntervalHours: 6, maxDosesPer24h: 4, startDate: '2022-01-01' } },
    'POST /api/medicine-courses': { body: { childId: f.childId, name: 'Ibuprofen', doseAmount: 2.5, doseUnit: 'ml', minIntervalHours: 6, startDate: '2022-01-01', remind: true } },
    'PUT /api/medicine-courses/{id}': { body: { name: 'Paracetamol', doseAmount: 5, doseUnit: 'ml', minIntervalHours: 4, startDate: '2021-01-01', endDate: '2021-01-05' } },
    'PATCH /api/medicine-courses/{id}': { body: { remind: true } },
    'GET /api/medicine-courses': { query: `childId=${f.childId}` },
    'POST /api/medicine-courses/{courseId}/doses': { body: { givenAt: '2021-01-02T08:00:00Z', amount: 2.5 } },
    'PUT /api/medicine-doses/{id}': { body: { givenAt: '2021-01-02T09:00:00+01:00' } },
    'PATCH /api/medicine-doses/{id}': { body: { amount: 3 } },
    'POST /api/children/{childId}/allergies': { body: { date: '2022-01-01', substance: 'Peanuts', category: 'food', severity: 'severe' } },
    'POST /api/allergies': { body: { childId: f.childId, date: '2022-01-01', substance: 'Eggs' } },
    'PUT /api/allergies/{id}': { body: { date: '2022-01-02', substance: 'Milk', status: 'resolved' } },
    'PATCH /api/allergies/{id}': { body: { reaction: 'Hives' } },
    'GET /api/allergies': { query: `childId=${f.childId}` },
    'POST /api/auth/logout': { body: {} },
    'POST /api/invites/accept': { body: { token: 'not-a-token' } },
    'PATCH /api/me': { body: { name: 'Same Name' } },
    'POST /api/me/password': { body: { currentPassword: PASSWORD, newPassword: PASSWORD } },
    'POST /api/me/identities/link': { body: { currentPassword: PASSWORD, redirect: '/settings' } },
    'POST /api/me/calendar-feeds': { body: { familyId: f.familyId } },
    'POST /api/children/{childId}/shares': { body: { label: 'For the doctor', expiresAt: new Date(Date.now() + 7 * 86_400_000).toISOString(), sections: ['immunizations'] } },
    // A documentation address (TEST-NET-3): accepted, and never sent to, since the access matrix runs no job worker.
    'POST /api/families/{id}/webhooks': { body: { url: 'https://203.0.113.10/hook', events: ['measurement', 'visit'] } },
    'POST /api/families/{id}/webhooks/{wid}/enable': {},
    'POST /api/me/tokens': { body: { name: 'Script', scope: 'read' } },
    'PUT /api/me/notifications': { body: { channels: [], quietHours: { from: '22:00', to: '07:00', timeZone: 'Europe/Berlin' } } },
    'POST /api/families': { body: { name: 'Another family' } },
    'POST /api/families/import': { multipart: 'archive' },
    'POST /api/admin/users': { body: { email: `made-${randomBytes(3).toString('hex')}@example.org`, password: PASSWORD, name: 'Made' } },
    'PATCH /api/admin/users/{id}': { body: { name: 'Renamed user' } },
    'POST /api/admin/users/{id}/password': { body: { newPassword: PASSWORD } },
    'POST /api/admin/users/{id}/identity-link': { body: {} },
    'POST /api/admin/families/{id}/members': { body: { userId: f.outsiderUserId, role: 'member' } }
  }
  if (samples[route] !== undefined) return samples[route]
  if (/^(GET|DELETE) /.test(route)) return {}
  return undefined
}

/** Routes that only an owner of the family may use. */
export const OWNER_ONLY = [
  'PATCH /api/families/{id}', 'DELETE /api/families/{id}', 'PATCH /api/families/{id}/members/{userId}',
  'DELETE /api/families/{id}/members/{userId}', 'GET /api/families/{id}/invites', 'POST /api/families/{id}/invites',
  'DELETE /api/families/{id}/invites/{inviteId}', 'GET /api/families/{id}/export',
  'POST /api/families/{id}/webhooks', 'GET /api/families/{id}/webhooks', 'GET /api/families/{id}/webhooks/{wid}',
  'DELETE /api/families/{id}/webhooks/{wid}', 'POST /api/families/{id}/webhooks/{wid}/enable', 'GET /api/families/{id}/webhooks/{wid}/deliveries'
]

/** Routes of any signed-in user, about the caller's own account or open to all. */
const OWN = /^(GET|PUT|PATCH|POST|DELETE) \/api\/(me|me\/.*|auth\/logout|invites\/accept|growth-standards\/\{indicator\}|push\/public-key|schedules)$|^(GET|POST) \/api\/families$|^POST \/api\/families\/import$/

export function classify (route: string): 'admin' | 'own' | 'family' {
  if (route.includes(' /api/admin/')) return 'admin'
  // A feed of the caller's own, of a family the caller must belong to.
  if (route === 'POST /api/me/calendar-feeds') return 'family'
  if (OWN.test(route)) return 'own'
  return 'family'
}

export function concrete (route: string, f: Fixture): string {
  const [, url] = route.split(' ')
  if (url.startsWith('/api/admin/users/')) return url.replace('{id}', String(f.extraUserId)).replace('{identityId}', String(f.identityId))
  if (url.startsWith('/api/me/tokens/')) return url.replace('{id}', String(f.tokenId))
  const kind = url.split('/')[2]
  const ids: Record<string, number> = {
    families: f.familyId, children: f.childId, measurements: f.measurementId, visits: f.visitId,
    'medical-events': f.medicalEventId, illnesses: f.illnessId, attachments: f.attachmentId, temperatures: f.temperatureId,
    'medicine-courses': f.medicineCourseId, 'medicine-doses': f.medicineDoseId, allergies: f.allergyId, shares: f.shareId
  }
  return url
    .replace('{id}', String(ids[kind] ?? f.familyId))
    .replace('{childId}', String(f.childId))
    .replace('{illnessId}', String(f.illnessId))
    .replace('{courseId}', String(f.medicineCourseId))
    .replace('{userId}', String(f.extraUserId))
    .replace('{inviteId}', String(f.inviteId))
    .replace('{wid}', String(f.webhookId))
    .replace('{indicator}', 'weight-for-age')
}

export async function multipartPayload (): Promise<{ payload: Buffer, headers: Record<string, string> }> {
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#3a6' } }).png().toBuffer()
  return form([file(png, 'photo.png', 'image/png')])
}

/** The smallest family archive an export could write: a family without children, with its manifest. */
export async function archivePayload (app: App): Promise<{ payload: Buffer, headers: Record<string, string> }> {
  const [{ name }] = await app.sql`select name from migrations order by name desc limit 1`
  const family = Buffer.from(JSON.stringify({ exportedAt: new Date().toISOString(), schemaVersion: name, family: { id: 1, name: 'Imported' }, members: [], children: [] }))
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: name,
    files: [{ path: 'family.json', size: family.length, sha256: createHash('sha256').update(family).digest('hex') }],
    missingFiles: []
  }))
  const zip = new ZipFile()
  zip.addBuffer(family, 'family.json')
  zip.addBuffer(manifest, 'manifest.json')
  zip.end()
  const chunks: Buffer[] = []
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer)
  return form([file(Buffer.concat(chunks), 'family.zip', 'application/zip')])
}

/** A family with a child, one record of each kind, a file, an invite and its members, written with SQL. */
export async function fixture (app: App, users: Record<'owner' | 'member' | 'viewer', number>): Promise<Fixture> {
  const sql = app.sql
  const marker = MARKER + randomBytes(4).toString('hex')
  const [family] = await sql`insert into families (name) values (${'Family ' + marker}) returning id`
  const made = await sql`
    insert into users (email, name, password_hash)
    select ${marker + '-extra@example.org'}, 'Extra', password_hash from users where id = ${users.owner}
    union all
    select ${marker + '-outsider@example.org'}, 'Outsider', password_hash from users where id = ${users.owner}
    returning id
  `
  const [extra, outsider] = made.map(row => row.id as number)
  for (const [role, userId] of [['owner', users.owner], ['member', users.member], ['viewer', users.viewer], ['member', extra]] as const) {
    await sql`insert into family_members (family_id, user_id, role) values (${family.id}, ${userId}, ${role})`
  }
  const [child] = await sql`insert into children (family_id, name, date_of_birth, sex, schedule_id) values (${family.id}, ${'Child ' + marker}, '2020-01-01', 'female', 'us-routine') returning id`
  const [visit] = await sql`insert into visits (child_id, date, type, notes) values (${child.id}, '2021-01-01', 'wellness', ${marker}) returning id`
  const [measurement] = await sql`insert into measurements (child_id, measured_at, weight_kg, notes) values (${child.id}, '2021-01-01', 10, ${marker}) returning id`
  const [event] = await sql`
    insert into medical_events (child_id, date, type, name, dose_number, lot_number, next_due_date, vaccine)
    values (${child.id}, '2021-01-01', 'vaccine', ${marker}, 1, ${marker}, '2021-03-01', 'DTaP') returning id
  `
  const [illness] = await sql`insert into illnesses (child_id, start_date, diagnosis) values (${child.id}, '2021-01-01', ${marker}) returning id`
  const [temperature] = await sql`insert into temperatures (child_id, illness_id, taken_at, temperature_c, notes) values (${child.id}, ${illness.id}, '2021-01-01T20:00:00Z', 38.5, ${marker}) returning id`
  const [course] = await sql`
    insert into medicine_courses (child_id, name, dose_amount, dose_unit, min_interval_hours, max_doses_per24h, start_date)
    values (${child.id}, ${marker}, 5, 'ml', 4, 3, '2021-01-01') returning id
  `
  const [dose] = await sql`insert into medicine_doses (child_id, course_id, given_at) values (${child.id}, ${course.id}, '2021-01-01T08:00:00Z') returning id`
  const [allergy] = await sql`insert into allergies (child_id, date, substance, notes) values (${child.id}, '2021-01-01', ${marker}, ${marker}) returning id`
  const stored = randomBytes(16).toString('hex') + '.png'
  mkdirSync(app.config.uploadDir, { recursive: true })
  writeFileSync(path.join(app.config.uploadDir, stored), await sharp({ create: { width: 2, height: 2, channels: 3, background: '#000' } }).png().toBuffer())
  const [attachment] = await sql`
    insert into attachments (child_id, file_name, stored_name, content_type, size_bytes)
    values (${child.id}, ${marker + '.png'}, ${stored}, 'image/png', 70) returning id
  `
  const shareToken = randomBytes(32).toString('base64url')
  const [share] = await sql`
    insert into shares (child_id, created_by, label, sections, token_hash, expires_at, content, content_length)
    values (${child.id}, ${users.owner}, ${'Link ' + marker}, '{immunizations}', ${createHash('sha256').update(shareToken).digest('hex')},
            now() + interval '7 days', 'eyJhbGciOiJkaXIifQ..aaaa.bbbb.cccc', 33) returning id
  `
  const [invite] = await sql`
    insert into invites (family_id, email, role, token_hash, expires_at)
    values (${family.id}, ${marker + '@example.org'}, 'member', ${randomBytes(32).toString('hex')}, now() + interval '7 days') returning id
  `
  const [webhook] = await sql`
    insert into webhooks (family_id, url, secret, events, created_by, epoch, after_xid, after_seq, disabled_at, disabled_reason)
    select family_id, ${'https://203.0.113.10/' + marker}, ${'whsec_' + randomBytes(32).toString('base64')}, null, ${users.owner}, epoch, '0', 0, now(), ${marker}
    from family_clocks where family_id = ${family.id}
    returning id
  `
  await sql`insert into webhook_deliveries (webhook_id, change_cursor, status_code, duration_ms, response_excerpt) values (${webhook.id}, 'cursor', 200, 12, ${marker})`
  const [identity] = await sql`insert into user_identities (issuer, subject, user_id) values ('https://id.example.org', ${marker}, ${extra}) returning id`
  const [token] = await sql`
    insert into sessions (user_id, token_hash, token_name, token_scope, token_family_id, expires_at)
    values (${users.owner}, ${randomBytes(32).toString('hex')}, ${marker}, 'read', ${family.id}, 'infinity') returning id
  `
  return {
    familyId: family.id, childId: child.id, measurementId: measurement.id, visitId: visit.id, medicalEventId: event.id,
    illnessId: illness.id, temperatureId: temperature.id, medicineCourseId: course.id, medicineDoseId: dose.id, allergyId: allergy.id, attachmentId: attachment.id, inviteId: invite.id, shareId: share.id, shareToken, webhookId: webhook.id, tokenId: token.id, extraUserId: extra, outsiderUserId: outsider, identityId: identity.id, marker
  }
}

export async function tableCounts (app: App): Promise<string> {
  const [row] = await app.sql`
    select (select count(*) from families) f, (select count(*) from family_members) fm, (select count(*) from children) c,
           (select count(*) from measurements) m, (select count(*) from visits) v, (select count(*) from medical_events) e,
           (select count(*) from illnesses) i, (select count(*) from temperatures) t, (select count(*) from medicine_courses) mc, (select count(*) from medicine_doses) md, (select count(*) from attachments) a, (select count(*) from invites where revoked_at is null) inv,
           (select count(*) from users) u, (select count(*) from calendar_feeds) cf, (select string_agg(name, ',' order by id) from children) names,
           (select count(*) from notification_settings) ns, (select count(*) from notification_channels) nc,
           (select count(*) from shares where revoked_at is null) sh,
           (select count(*) from webhooks) wh, (select count(*) from webhooks where disabled_at is null) whe,
           (select count(*) from sessions where token_hash is not null) pat,
           (select count(*) from user_identities) ui, (select count(*) from identity_links) il,
           (select string_agg(name || role, ',' order by id) from users) accounts
  `
  return JSON.stringify(row)
}

