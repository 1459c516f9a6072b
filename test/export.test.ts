import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdirSync, rmSync, watch, writeFileSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import path from 'node:path'
import SwaggerParser from '@apidevtools/swagger-parser'
import Ajv from 'ajv'
import addFormats from 'ajv-formats'
import { childBundle } from '../domain/export/child-records'
import { assertValidBundle } from './fhir-validate'
import { bearer, build, call, familyOf, join, register, withoutGrowthTables, type Pair } from './helper'
import { created, OPEN, sha256, unzip, type App } from './import-helpers'

interface Resource {
  resourceType: string
  id: string
  meta: { profile?: string[] }
  [key: string]: any
}

interface Bundle {
  resourceType: 'Bundle'
  type: string
  timestamp: string
  entry: Array<{ fullUrl: string, resource: Resource }>
}

const assertValid = (t: Test, bundle: Bundle): void => assertValidBundle(t, bundle)

// ---- the app, its users and a child's records ----

/** A user who joins the family in a role through an invite. */
async function joined (app: App, owner: Pair, familyId: number, role: string): Promise<Pair> {
  const user = await register(app)
  await join(app, owner, familyId, user, role)
  return user
}

/** A stored file written where the service keeps it, with a row that names it (as an upload would). */
async function attach (app: App, childId: number, links: { visitId?: number, measurementId?: number, illnessId?: number } = {}, size = 2048): Promise<{ storedName: string, bytes: Buffer }> {
  const storedName = `${randomBytes(16).toString('hex')}.pdf`
  const bytes = Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(size)])
  mkdirSync(app.config.uploadDir, { recursive: true })
  writeFileSync(path.join(app.config.uploadDir, storedName), bytes)
  await app.db.sql`
    insert into attachments (child_id, visit_id, measurement_id, illness_id, file_name, stored_name, content_type, size_bytes)
    values (${childId}, ${links.visitId ?? null}, ${links.measurementId ?? null}, ${links.illnessId ?? null},
            ${`scan ${storedName.slice(0, 4)}.pdf`}, ${storedName}, 'application/pdf', ${bytes.length})
  `
  return { storedName, bytes }
}

async function setAvatar (app: App, childId: number): Promise<{ storedName: string, bytes: Buffer }> {
  const storedName = `${randomBytes(16).toString('hex')}.webp`
  const bytes = randomBytes(1500)
  mkdirSync(app.config.avatarDir, { recursive: true })
  writeFileSync(path.join(app.config.avatarDir, storedName), bytes)
  await app.db.sql`update children set avatar_name = ${storedName}, avatar_size_bytes = ${bytes.length} where id = ${childId}`
  return { storedName, bytes }
}

/** A child with every kind of record, made through the real routes; attachments and the avatar as an upload leaves them. */
async function fullChild (app: App, owner: Pair, name = 'Zoë Ødegård'): Promise<{ id: number, files: Map<string, Buffer> }> {
  const child = await created(app, owner, '/api/children', { name, dateOfBirth: '2021-03-01', sex: 'female', familyId: familyOf(owner) })
  const base = `/api/children/${child.id}`
  const wellness = await created(app, owner, `${base}/visits`, { date: '2023-03-01', type: 'wellness', provider: 'Dr. Osei', notes: 'Two-year check', measurement: { heightCm: 86.4, weightKg: 12.125 } })
  const sick = await created(app, owner, `${base}/visits`, { date: '2022-01-10', type: 'sick' })
  const early = await created(app, owner, `${base}/measurements`, { measuredAt: '2021-03-01', heightCm: 50.2, weightKg: 3.456, headCircumferenceCm: 34.5, notes: 'At birth' })
  await created(app, owner, `${base}/measurements`, { measuredAt: '2023-03-02', heightCm: 86.6 })
  await created(app, owner, `${base}/measurements`, { measuredAt: '2022-06-01', weightKg: 10.2, visitId: sick.id })
  // Given before the sick visit: a record links only to a visit on or before its date.
  await created(app, owner, `${base}/medical-events`, { date: '2021-05-01', type: 'vaccine', name: 'DTaP', doseNumber: 2, lotNumber: 'AC52; B', site: 'Left thigh', nextDueDate: '2021-07-01' })
  await created(app, owner, `${base}/medical-events`, { date: '2022-01-10', type: 'procedure', name: 'Ear examination', description: 'Both ears', visitId: sick.id })
  await created(app, owner, `${base}/medical-events`, { date: '2022-01-10', type: 'medication', name: 'Amoxicillin' })
  const flu = await created(app, owner, `${base}/illnesses`, { startDate: '2022-01-08', endDate: '2022-01-15', diagnosis: 'Influenza', symptoms: 'Fever', temperatureC: 39.25, visitId: sick.id })
  await created(app, owner, `${base}/illnesses`, { startDate: '2023-03-01', diagnosis: 'Cold', medications: 'Rest' })
  const files = new Map<string, Buffer>()
  for (const links of [{ visitId: wellness.id, measurementId: wellness.measurement.id }, { illnessId: flu.id, visitId: sick.id }, { measurementId: early.id }]) {
    const { storedName, bytes } = await attach(app, child.id, links)
    files.set(storedName, bytes)
  }
  const avatar = await setAvatar(app, child.id)
  files.set(avatar.storedName, avatar.bytes)
  return { id: child.id, files }
}

async function lastMigration (app: App): Promise<string> {
  const [row] = await app.db.sql<{ name: string }[]>`select name from migrations order by name desc limit 1`
  return row.name
}

const DISPOSITION = /^attachment; filename="([a-z0-9-]+-\d{4}-\d{2}-\d{2}\.[a-z.]+)"/

function withoutHead (document: any): any {
  const { exportedAt: _at, schemaVersion: _version, ...rest } = document
  return rest
}

// ---- the tests ----

t.test('a child\'s JSON export equals what the child\'s routes answer', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const { id } = await fullChild(app, owner)
  const res = await call(app, owner, 'GET', `/api/children/${id}/export`)
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json; charset=utf-8/)
  t.equal(res.headers['cache-control'], 'no-store')
  const disposition = String(res.headers['content-disposition'])
  const today = new Date().toISOString().slice(0, 10)
  t.equal(DISPOSITION.exec(disposition)?.[1], `zoe-odegard-${today}.json`, 'an ASCII file name from the child\'s name and the date')
  t.ok(disposition.endsWith(`; filename*=UTF-8''Zo%C3%AB-%C3%98deg%C3%A5rd-${today}.json`), 'and the name as written')
  const document = res.json()
  t.same(Object.keys(document), ['exportedAt', 'schemaVersion', 'child', 'measurements', 'visits', 'medicalEvents', 'illnesses', 'temperatures', 'medicineCourses', 'medicineDoses', 'allergies', 'attachments', 'growth', 'growthUnavailable'])
  t.equal(document.schemaVersion, await lastMigration(app), 'the schema version is the last applied migration')
  t.ok(Math.abs(Date.parse(document.exportedAt) - Date.now()) < 60000, 'exportedAt is the moment of the export')

  const answer = async (url: string): Promise<any> => (await call(app, owner, 'GET', url)).json()
  const base = `/api/children/${id}`
  t.same(document.child, await answer(base), 'the child')
  t.same(document.measurements, (await answer(`${base}/measurements?limit=1000`)).data, 'the measurements')
  t.same(document.visits, (await answer(`${base}/visits?limit=1000`)).data, 'the visits')
  t.same(document.medicalEvents, (await answer(`${base}/medical-events?limit=1000`)).data, 'the medical events')
  t.same(document.illnesses, (await answer(`${base}/illnesses?limit=1000`)).data, 'the illnesses')
  t.same(document.attachments, (await answer(`${base}/attachments?limit=1000`)).data, 'the attachments')
  t.same(document.growth, await answer(`${base}/growth`), 'the growth document')
  t.equal(document.growthUnavailable, null, 'no reason when growth is there')
  t.same([document.measurements.length, document.visits.length, document.medicalEvents.length, document.illnesses.length, document.attachments.length, document.growth.points.length],
    [4, 2, 3, 2, 3, 4], 'every record is there')
  t.ok(document.child.avatarUrl.startsWith('/avatars/'))
  t.equal(document.measurements.find((m: any) => m.measuredAt === '2021-03-01').weightKg, 3.456, 'decimals as stored')

  const ajv = new Ajv({ strict: false })
  addFormats(ajv)
  ajv.addSchema(app.swagger(), 'openapi.json')
  const validate = ajv.compile({ $ref: 'openapi.json#/components/schemas/ChildExport' })
  t.ok(validate(document), `matches the ChildExport schema ${ajv.errorsText(validate.errors)}`)

  const explicit = await call(app, owner, 'GET', `/api/children/${id}/export?format=json`)
  t.same(withoutHead(explicit.json()), withoutHead(document), 'format=json is the default')
})

t.test('a child\'s FHIR export validates against FHIR R4, with stable ids', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const { id } = await fullChild(app, owner)
  const first = await call(app, owner, 'GET', `/api/children/${id}/export?format=fhir`)
  t.equal(first.statusCode, 200)
  t.match(first.headers['content-type'], /^application\/fhir\+json/)
  t.equal(DISPOSITION.exec(String(first.headers['content-disposition']))?.[1], `zoe-odegard-${new Date().toISOString().slice(0, 10)}.fhir.json`)
  const bundle: Bundle = first.json()
  assertValid(t, bundle)
  t.match(bundle, { resourceType: 'Bundle', type: 'collection' })

  // Written batch by batch, it is the bundle the mapping makes from the routes' own answers, the growth route's scores included.
  const list = async (kind: string): Promise<any[]> => (await call(app, owner, 'GET', `/api/children/${id}/${kind}?limit=1000`)).json().data
  const scored = async (): Promise<any[]> => {
    const points = new Map((await call(app, owner, 'GET', `/api/children/${id}/growth`)).json().points.map((point: any) => [point.measurementId, point]))
    return (await list('measurements')).map(measurement => ({ ...measurement, growth: points.get(measurement.id) }))
  }
  const records = {
    child: (await call(app, owner, 'GET', `/api/children/${id}`)).json(),
    measurements: await scored(),
    visits: await list('visits'),
    medicalEvents: await list('medical-events'),
    illnesses: await list('illnesses'),
    attachments: await list('attachments')
  }
  t.same(bundle, childBundle(records, { timestamp: bundle.timestamp }), 'the streamed bundle equals the bundle of the records in memory')
  const documents = bundle.entry.filter(e => e.resource.resourceType === 'DocumentReference')
  t.equal(documents.filter(e => e.resource.context?.related !== undefined).length, 3, 'attachments point to their measurement or illness')

  const counts: Record<string, number> = {}
  for (const { resource } of bundle.entry) counts[resource.resourceType] = (counts[resource.resourceType] ?? 0) + 1
  t.same(counts, { Patient: 1, Encounter: 2, Observation: 15, Condition: 2, Immunization: 1, Procedure: 1, MedicationStatement: 1, DocumentReference: 3 })
  const patient = bundle.entry[0].resource
  t.match(patient, { resourceType: 'Patient', name: [{ text: 'Zoë Ødegård' }], birthDate: '2021-03-01', gender: 'female' })

  const urls = (of: Bundle) => new Map(of.entry.map(e => [e.fullUrl, e.resource]))
  const observations = bundle.entry.map(e => e.resource).filter(r => r.resourceType === 'Observation')
  const coded = (loinc: string): Resource[] => observations.filter(o => o.code.coding[0].code === loinc)
  t.same(coded('8306-3').map(o => [o.effectiveDateTime, o.valueQuantity.value, o.valueQuantity.code]).sort(), [['2021-03-01', 50.2, 'cm'], ['2023-03-01', 86.4, 'cm']], 'body length up to day 730')
  t.same(coded('8302-2').map(o => [o.effectiveDateTime, o.valueQuantity.value, o.valueQuantity.code]), [['2023-03-02', 86.6, 'cm']], 'body height from day 731')
  t.same(coded('29463-7').map(o => o.valueQuantity.code), ['kg', 'kg', 'kg'], 'body weight in kg')
  t.same(coded('9843-4').map(o => o.valueQuantity.code), ['cm'], 'head circumference in cm')
  t.same(coded('39156-5').map(o => o.valueQuantity.code), ['kg/m2', 'kg/m2'], 'BMI in kg/m2')
  t.same(coded('8310-5').map(o => [o.valueQuantity.value, o.valueQuantity.code]), [[39.25, 'Cel']], 'the temperature in Cel')
  for (const observation of observations) t.equal(observation.subject.reference, bundle.entry[0].fullUrl)
  // The growth percentiles of US Core's pediatric profiles, each naming the chart that scored it.
  const percentiles = (of: Bundle, loinc: string) => of.entry.map(e => e.resource).filter(r => r.resourceType === 'Observation' && r.code.coding[0].code === loinc)
    .map(o => [o.effectiveDateTime, o.valueQuantity.code, o.method.text]).sort()
  const WHO = 'WHO Child Growth Standards (2006)'
  t.same(percentiles(bundle, '77606-2'), [['2021-03-01', '%', WHO], ['2023-03-01', '%', WHO]], 'weight-for-length percentiles')
  t.same(percentiles(bundle, '59576-9'), [['2021-03-01', '%', WHO], ['2023-03-01', '%', WHO]], 'BMI percentiles')
  t.same(percentiles(bundle, '8289-1'), [['2021-03-01', '%', WHO]], 'head circumference percentiles')
  for (const observation of coded('77606-2')) t.equal(urls(bundle).get(observation.derivedFrom[0].reference)?.code.coding[0].code, '29463-7', 'derived from the weight')

  const encounterRefs = bundle.entry.flatMap(({ resource }) => [resource.encounter, resource.context, ...(resource.context?.encounter ?? [])])
    .filter(ref => ref?.reference !== undefined)
  t.ok(encounterRefs.length >= 8, `${encounterRefs.length} records point to their visit`)
  for (const ref of encounterRefs) t.equal(urls(bundle).get(ref.reference)?.resourceType, 'Encounter', `${ref.reference} is an Encounter of the bundle`)
  const sickVisit = bundle.entry.find(e => e.resource.resourceType === 'Encounter' && e.resource.type[0].text === 'sick')
  const procedure = bundle.entry.find(e => e.resource.resourceType === 'Procedure')
  t.equal(procedure?.resource.encounter.reference, sickVisit?.fullUrl, 'the procedure points to its visit')

  const second: Bundle = (await call(app, owner, 'GET', `/api/children/${id}/export?format=fhir`)).json()
  t.same(second.entry.map(e => e.fullUrl), bundle.entry.map(e => e.fullUrl), 'ids are stable between two exports')
  assertValid(t, second)

  // On CDC's charts: no BMI chart under 24 months; each percentile names CDC's infant chart.
  await call(app, owner, 'PATCH', `/api/children/${id}`, { growthReference: 'cdc' })
  const cdc: Bundle = (await call(app, owner, 'GET', `/api/children/${id}/export?format=fhir`)).json()
  assertValid(t, cdc)
  const INFANT = 'CDC 2000 growth charts, birth to 36 months'
  t.same(percentiles(cdc, '77606-2'), [['2021-03-01', '%', INFANT], ['2023-03-01', '%', INFANT]], 'weight-for-length on CDC\'s infant chart')
  t.same(percentiles(cdc, '59576-9'), [], 'CDC has no BMI chart under 24 months')
  t.same(percentiles(cdc, '8289-1'), [['2021-03-01', '%', INFANT]])
  records.child = (await call(app, owner, 'GET', `/api/children/${id}`)).json()
  records.measurements = await scored()
  t.same(cdc.entry, childBundle(records, { timestamp: cdc.timestamp }).entry, 'the growth route\'s CDC scores, as the bundle has them')
})

t.test('a family\'s ZIP archive holds the listed files, checked by its manifest', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app, { name: 'Ada' })
  const familyId = familyOf(owner)
  await call(app, owner, 'PATCH', `/api/families/${familyId}`, { name: 'Lovelace & Byron' })
  await joined(app, owner, familyId, 'viewer')
  const first = await fullChild(app, owner)
  const second = await fullChild(app, owner, 'Ben')
  const third = await created(app, owner, '/api/children', { name: 'Cy', dateOfBirth: '2024-01-01', sex: 'other' })

  const res = await call(app, owner, 'GET', `/api/families/${familyId}/export`)
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'application/zip')
  t.equal(DISPOSITION.exec(String(res.headers['content-disposition']))?.[1], `lovelace-byron-${new Date().toISOString().slice(0, 10)}.zip`)
  const entries = await unzip(res.rawPayload)
  const files = new Map([...first.files, ...second.files])
  const expected = ['family.json', ...[first.id, second.id, third.id].map(id => `fhir/${id}.json`), ...[...files.keys()].map(name => `files/${name}`), 'manifest.json']
  t.same([...entries.keys()].sort(), expected.sort(), 'exactly the listed files')
  for (const [name, bytes] of files) t.ok(entries.get(`files/${name}`)?.equals(bytes), `files/${name} is the stored file`)

  const manifest = JSON.parse(String(entries.get('manifest.json')))
  t.same(manifest.files.map((file: any) => file.path).sort(), expected.filter(name => name !== 'manifest.json').sort(), 'the manifest lists every other file')
  for (const file of manifest.files) {
    const bytes = entries.get(file.path) as Buffer
    t.equal(file.sha256, sha256(bytes), `${file.path}: its SHA-256`)
    t.equal(file.size, bytes.length, `${file.path}: its size`)
  }
  const [rows] = await app.db.sql`
    select
      (select count(*) from family_members where family_id = ${familyId}) as members,
      (select count(*) from children where family_id = ${familyId}) as children,
      (select count(*) from measurements m join children c on c.id = m.child_id where c.family_id = ${familyId}) as measurements,
      (select count(*) from visits v join children c on c.id = v.child_id where c.family_id = ${familyId}) as visits,
      (select count(*) from medical_events e join children c on c.id = e.child_id where c.family_id = ${familyId}) as "medicalEvents",
      (select count(*) from illnesses i join children c on c.id = i.child_id where c.family_id = ${familyId}) as illnesses,
      (select count(*) from temperatures r join children c on c.id = r.child_id where c.family_id = ${familyId}) as temperatures,
      (select count(*) from medicine_courses m join children c on c.id = m.child_id where c.family_id = ${familyId}) as "medicineCourses",
      (select count(*) from medicine_doses d join children c on c.id = d.child_id where c.family_id = ${familyId}) as "medicineDoses",
      (select count(*) from allergies l join children c on c.id = l.child_id where c.family_id = ${familyId}) as allergies,
      (select count(*) from attachments a join children c on c.id = a.child_id where c.family_id = ${familyId}) as attachments,
      (select count(avatar_name) from children where family_id = ${familyId}) as avatars
  `
  t.same(manifest.counts, { ...rows, files: files.size }, 'the counts are the rows')
  t.same(manifest.missingFiles, [])
  t.equal(manifest.schemaVersion, await lastMigration(app))

  const family = JSON.parse(String(entries.get('family.json')))
  t.equal(family.exportedAt, manifest.exportedAt, 'one moment for the whole archive')
  t.same(family.family, (await call(app, owner, 'GET', `/api/families/${familyId}`)).json(), 'the family as its route answers it')
  t.same(family.members, [{ name: 'Ada', role: 'owner' }, { name: family.members[1].name, role: 'viewer' }], 'the members\' names and roles')
  t.same(family.children.map((child: any) => child.child.id), [first.id, second.id, third.id])
  for (const child of family.children) {
    t.equal(child.exportedAt, family.exportedAt)
    const alone = (await call(app, owner, 'GET', `/api/children/${child.child.id}/export`)).json()
    t.same(withoutHead(child), withoutHead(alone), `child ${child.child.id} as its own JSON export`)
    const bundle: Bundle = JSON.parse(String(entries.get(`fhir/${child.child.id}.json`)))
    assertValid(t, bundle)
    const own: Bundle = (await call(app, owner, 'GET', `/api/children/${child.child.id}/export?format=fhir`)).json()
    t.same(bundle.entry, own.entry, `fhir/${child.child.id}.json is the child's bundle`)
  }
})

t.test('a stored file gone from disk is left out of the archive and named in the manifest', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const child = await created(app, owner, '/api/children', { name: 'Kim', dateOfBirth: '2022-01-01', sex: 'male' })
  const kept = await attach(app, child.id)
  const lost = await attach(app, child.id)
  rmSync(path.join(app.config.uploadDir, lost.storedName))
  const res = await call(app, owner, 'GET', `/api/families/${familyOf(owner)}/export`)
  t.equal(res.statusCode, 200)
  const entries = await unzip(res.rawPayload)
  t.ok(entries.has(`files/${kept.storedName}`))
  t.notOk(entries.has(`files/${lost.storedName}`))
  const manifest = JSON.parse(String(entries.get('manifest.json')))
  t.same(manifest.missingFiles, [`files/${lost.storedName}`])
  t.match(manifest.counts, { attachments: 2, files: 1 })
})

t.test('who may export what', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const child = await created(app, owner, '/api/children', { name: 'Kim', dateOfBirth: '2022-01-01', sex: 'male' })
  const viewer = await joined(app, owner, familyId, 'viewer')
  const member = await joined(app, owner, familyId, 'member')
  const stranger = await register(app)
  const strangerChild = await created(app, stranger, '/api/children', { name: 'Lou', dateOfBirth: '2022-01-01', sex: 'female' })
  const childUrl = `/api/children/${child.id}/export`
  const familyUrl = `/api/families/${familyId}/export`

  const cases: Array<[string, Pair | null, string, number, string?]> = [
    ['the owner exports the child', owner, childUrl, 200],
    ['a viewer exports the child as JSON', viewer, childUrl, 200],
    ['a viewer exports the child as FHIR', viewer, `${childUrl}?format=fhir`, 200],
    ['a member exports the child', member, childUrl, 200],
    ['the owner exports the family', owner, familyUrl, 200],
    ['a viewer may not export the family', viewer, familyUrl, 403, 'FORBIDDEN'],
    ['a member may not export the family', member, familyUrl, 403, 'FORBIDDEN'],
    ['another family\'s child', stranger, childUrl, 403, 'FORBIDDEN'],
    ['another family', stranger, familyUrl, 403, 'FORBIDDEN'],
    ['the owner may not export another family\'s child', owner, `/api/children/${strangerChild.id}/export`, 403, 'FORBIDDEN'],
    ['no token, child', null, childUrl, 401, 'UNAUTHORIZED'],
    ['no token, family', null, familyUrl, 401, 'UNAUTHORIZED'],
    ['an unknown child', owner, '/api/children/2147483647/export', 404, 'NOT_FOUND'],
    ['an unknown family', owner, '/api/families/2147483647/export', 404, 'NOT_FOUND'],
    ['an unknown format', owner, `${childUrl}?format=csv`, 400, 'VALIDATION_ERROR'],
    ['an id out of range', owner, '/api/children/2147483648/export', 400, 'VALIDATION_ERROR'],
    ['a family id that is not a number', owner, '/api/families/x/export', 400, 'VALIDATION_ERROR']
  ]
  for (const [name, pair, url, status, code] of cases) {
    const res = await call(app, pair, 'GET', url)
    t.equal(res.statusCode, status, name)
    if (status === 200 && url.endsWith('format=fhir')) assertValid(t, res.json())
    if (code !== undefined) {
      t.equal(res.json().code, code, `${name}: ${code}`)
      if (status === 403) t.equal(res.json().error, 'Access denied')
    }
  }
  const unknown = await call(app, owner, 'GET', `${childUrl}?format=csv`)
  t.same(unknown.json().details.issues.map((issue: any) => issue.path), ['/query/format'])
})

t.test('without the WHO tables the JSON export has growth: null, and says why', async t => {
  const app = await build(t, { env: { ...OPEN, ...await withoutGrowthTables(t) } })
  await app.growth.loading
  t.equal(app.growth.tables, null, 'the tables are missing')
  const owner = await register(app)
  const { id } = await fullChild(app, owner)
  t.equal((await call(app, owner, 'GET', `/api/children/${id}/growth`)).statusCode, 503, 'the growth route answers 503')
  const res = await call(app, owner, 'GET', `/api/children/${id}/export`)
  t.equal(res.statusCode, 200)
  const document = res.json()
  t.equal(document.growth, null)
  t.equal(document.growthUnavailable, 'The WHO growth reference tables are not installed (see GROWTH_DATA_DIR)', 'the reason beside it')
  t.equal(document.measurements.length, 4, 'everything else is there')
  const zip = await unzip((await call(app, owner, 'GET', `/api/families/${familyOf(owner)}/export`)).rawPayload)
  const archived = JSON.parse(String(zip.get('family.json'))).children[0]
  t.equal(archived.growth, null, 'and in the family archive')
  t.match(archived.growthUnavailable, /not installed/, 'with its reason')
})

const NOTE = 'n'.repeat(8000)

/** Many records with long notes, so that an export takes a while to stream. */
async function manyRecords (app: App, childId: number, count: number): Promise<void> {
  const sql = app.db.sql
  await sql`insert into measurements (child_id, measured_at, weight_kg, notes) select ${childId}, date '2022-01-01' + (i % 500), 9, ${NOTE} from generate_series(1, ${count}) i`
  await sql`insert into visits (child_id, date, type, notes) select ${childId}, date '2022-01-01' + (i % 500), 'wellness', ${NOTE} from generate_series(1, ${count}) i`
  await sql`insert into medical_events (child_id, date, type, name, description) select ${childId}, date '2022-01-01' + (i % 500), 'vaccine', 'MMR', ${NOTE} from generate_series(1, ${count}) i`
  await sql`insert into illnesses (child_id, start_date, notes) select ${childId}, date '2022-01-01' + (i % 500), ${NOTE} from generate_series(1, ${count}) i`
}

/** One write of one record of each kind, in one transaction. */
async function writeOneOfEach (app: App, childId: number, note: string): Promise<void> {
  await app.db.sql.begin(async tx => {
    await tx`insert into measurements (child_id, measured_at, weight_kg, notes) values (${childId}, '2023-06-01', 10, ${note})`
    await tx`insert into visits (child_id, date, type, notes) values (${childId}, '2023-06-01', 'sick', ${note})`
    await tx`insert into medical_events (child_id, date, type, name, description) values (${childId}, '2023-06-01', 'medication', 'Ibuprofen', ${note})`
    await tx`insert into illnesses (child_id, start_date, notes) values (${childId}, '2023-06-01', ${note})`
  })
}

/** Transactions open on the app's connections to the test database (the test's own connection left out). */
async function openTransactions (app: App): Promise<number> {
  const [row] = await app.db.sql<{ n: number }[]>`
    select count(*) as n from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and xact_start is not null
  `
  return row.n
}

async function until (check: () => Promise<boolean>, ms = 10000): Promise<boolean> {
  for (const stop = Date.now() + ms; Date.now() < stop;) {
    if (await check()) return true
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  return false
}

async function listening (app: App): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as net.AddressInfo
  return `http://127.0.0.1:${port}`
}

t.test('an export reads one moment: records written meanwhile are wholly out of it', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const child = await created(app, owner, '/api/children', { name: 'Kim', dateOfBirth: '2021-06-01', sex: 'male' })
  await manyRecords(app, child.id, 400)
  const origin = await listening(app)

  const body = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = []
    http.get(`${origin}/api/children/${child.id}/export`, { headers: bearer(owner.accessToken) }, res => {
      res.once('data', async (chunk: Buffer) => {
        chunks.push(chunk)
        res.pause()
        try {
          t.equal(await openTransactions(app), 0, 'no transaction is open while it streams')
          await writeOneOfEach(app, child.id, 'written meanwhile')
          await app.db.sql`delete from measurements where id = (select min(id) from measurements where child_id = ${child.id})`
        } catch (error) {
          reject(error)
        }
        res.on('data', (more: Buffer) => chunks.push(more))
        res.on('end', () => resolve(Buffer.concat(chunks).toString()))
        res.resume()
      })
    }).on('error', reject)
  })
  t.ok(body.length > 10_000_000, `${body.length} bytes streamed`)
  const during = JSON.parse(body)
  t.same([during.measurements.length, during.visits.length, during.medicalEvents.length, during.illnesses.length], [400, 400, 400, 400], 'the state before')
  t.equal(during.growth.points.length, 400)
  t.notOk(body.includes('written meanwhile'), 'nothing written after the export began')

  const after = (await call(app, owner, 'GET', `/api/children/${child.id}/export`)).json()
  t.same([after.measurements.length, after.visits.length, after.medicalEvents.length, after.illnesses.length], [400, 401, 401, 401], 'the next export has the state after')
  t.ok(await until(async () => await openTransactions(app) === 0), 'no transaction is left open')
})

t.test('exports while records are written hold each write wholly or not at all', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const child = await created(app, owner, '/api/children', { name: 'Kim', dateOfBirth: '2021-06-01', sex: 'male' })
  await manyRecords(app, child.id, 150)
  let writing = true
  let writes = 0
  const writer = (async () => {
    while (writing) {
      await writeOneOfEach(app, child.id, 'concurrent')
      writes += 1
    }
  })()
  const exports: any[] = []
  for (let i = 0; i < 6; i++) {
    const res = await call(app, owner, 'GET', `/api/children/${child.id}/export`)
    exports.push(res.json())
  }
  writing = false
  await writer
  const seen = exports.map(document => ['measurements', 'visits', 'medicalEvents', 'illnesses']
    .map(key => document[key].filter((record: any) => (record.notes ?? record.description) === 'concurrent').length))
  for (const [index, counts] of seen.entries()) {
    t.ok(counts.every(count => count === counts[0]), `export ${index + 1}: ${counts[0]} writes, each with all four of its records`)
  }
  t.ok(writes > 0 && seen[seen.length - 1][0] > 0, `${writes} writes happened during the exports`)
})

/** Starts a download over HTTP, reads its first bytes, runs `meanwhile`, then goes away. */
function leaveEarly (url: string, token: string, meanwhile: () => Promise<void>): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: bearer(token) }, res => {
      res.once('data', () => {
        res.pause()
        meanwhile().then(() => {
          request.destroy()
          resolve(res.statusCode)
        }, reject)
      })
    })
    request.on('error', () => {})
  })
}

t.test('a client that disconnects stops the export', async t => {
  const logs: string[] = []
  const app = await build(t, { env: OPEN, logs })
  const owner = await register(app)
  const child = await created(app, owner, '/api/children', { name: 'Kim', dateOfBirth: '2021-06-01', sex: 'male' })
  for (let i = 0; i < 4; i++) await attach(app, child.id, {}, 8 * 1024 * 1024)
  await manyRecords(app, child.id, 300)
  const origin = await listening(app)
  const stopped = (): number => logs.filter(line => line.includes('export stopped: the client disconnected')).length

  for (const [name, url] of [['the family ZIP', `/api/families/${familyOf(owner)}/export`], ['a child\'s JSON', `/api/children/${child.id}/export`]]) {
    const before = stopped()
    const status = await leaveEarly(`${origin}${url}`, owner.accessToken, async () => {
      t.equal(await openTransactions(app), 0, `${name}: no transaction is open while it streams`)
      t.equal(app.pool.inUse, 0, `${name}: no pooled connection is held while it streams`)
    })
    t.equal(status, 200)
    t.ok(await until(async () => stopped() === before + 1), `${name}: the export says it stopped`)
  }
  const entries = logs.map(line => JSON.parse(line))
  t.same(entries.filter(entry => entry.level >= 50), [], 'no error is logged')
  t.same(entries.filter(entry => entry.res?.statusCode >= 500), [], 'nothing answers 500')

  const again = await call(app, owner, 'GET', `/api/families/${familyOf(owner)}/export`)
  t.equal(again.statusCode, 200, 'the next export works')
  t.equal((await unzip(again.rawPayload)).size, 7, 'family.json, one bundle, four files and the manifest')
})

/** A HEAD over a connection of its own: its status, headers and whatever body came. */
function head (origin: string, url: string, token: string, headers: Record<string, string> = {}): Promise<{ status: number, headers: http.IncomingHttpHeaders, body: Buffer }> {
  return new Promise((resolve, reject) => {
    http.request(`${origin}${url}`, { method: 'HEAD', agent: false, headers: { ...bearer(token), ...headers } }, res => {
      const chunks: Buffer[] = []
      res.on('data', chunk => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    }).on('error', reject).end()
  })
}

t.test('HEAD on an export answers the headers of its GET, builds nothing and takes no slot', async t => {
  const logs: string[] = []
  const app = await build(t, { env: OPEN, logs })
  const owner = await register(app)
  const child = await fullChild(app, owner)
  const stranger = await register(app)
  const viewer = await joined(app, owner, familyOf(owner), 'viewer')
  const origin = await listening(app)
  const family = `/api/families/${familyOf(owner)}/export`
  const written: string[] = []
  const watcher = watch(app.config.uploadDir, (_event, name) => written.push(String(name)))
  t.teardown(() => watcher.close())

  const heads = await Promise.all(Array.from({ length: 4 }, () => head(origin, family, owner.accessToken)))
  t.same(heads.map(res => res.status), [200, 200, 200, 200], 'four HEADs of one user at once, where two exports may run')
  const [first] = heads
  t.equal(first.headers['content-type'], 'application/zip')
  t.match(first.headers['content-disposition'], DISPOSITION)
  t.equal(first.headers['cache-control'], 'no-store')
  t.match(first.headers.etag, /^".+"$/)
  t.equal(first.headers['content-length'], undefined, 'no length, as the streamed GET says none')
  t.equal(first.body.length, 0, 'no body')
  await new Promise(resolve => setTimeout(resolve, 200))
  t.same(written, [], 'no spool file is written')

  const get = await call(app, owner, 'GET', family)
  t.equal(get.statusCode, 200, 'a GET right after is not refused')
  t.equal(get.headers['content-disposition'], first.headers['content-disposition'], 'its headers are those the HEADs answered')
  t.equal(get.headers.etag, first.headers.etag)
  t.ok(await until(async () => written.length > 0), 'the GET writes its spool where the HEADs wrote none')

  const conditional = await head(origin, family, owner.accessToken, { 'if-none-match': String(first.headers.etag) })
  t.equal(conditional.status, 304, 'a current ETag is a 304, as for a GET')
  for (const [who, pair] of [['a stranger', stranger], ['a viewer', viewer]] as const) {
    t.equal((await head(origin, family, pair.accessToken)).status, 403, `${who}: 403 on the family, as for a GET`)
  }
  t.equal((await head(origin, `/api/families/999999/export`, owner.accessToken)).status, 404)

  const json = await head(origin, `/api/children/${child.id}/export`, viewer.accessToken)
  t.equal(json.status, 200, 'a viewer\'s HEAD of a child export')
  t.equal(json.headers['content-type'], 'application/json; charset=utf-8')
  t.match(json.headers['content-disposition'], /\.json"/)
  const fhir = await head(origin, `/api/children/${child.id}/export?format=fhir`, owner.accessToken)
  t.equal(fhir.headers['content-type'], 'application/fhir+json; charset=utf-8')
  t.match(fhir.headers['content-disposition'], /\.fhir\.json"/)
  t.equal((await head(origin, `/api/children/${child.id}/export`, stranger.accessToken)).status, 403, 'a stranger: 403 on the child')
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}/export`)).headers['content-disposition'], json.headers['content-disposition'])

  const entries = logs.map(line => JSON.parse(line))
  t.same(entries.filter(entry => entry.level >= 50), [], 'no error is logged')
  t.notOk(logs.some(line => line.includes('Premature close')))
})

t.test('the OpenAPI document describes both exports', async t => {
  const app = await build(t)
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  await t.resolves(SwaggerParser.validate(structuredClone(doc)), 'the document stays valid OpenAPI')
  const child = doc.paths['/api/children/{childId}/export'].get
  const family = doc.paths['/api/families/{id}/export'].get
  t.equal(child.operationId, 'exportChild')
  t.equal(family.operationId, 'exportFamily')
  t.same(child.tags, ['export'])
  t.same(family.tags, ['export'])
  t.same(child.security, [{ bearer: [] }])
  t.match(child.parameters.find((p: any) => p.name === 'format'), { in: 'query', schema: { enum: ['json', 'fhir'], default: 'json' } })
  t.same(Object.keys(child.responses['200'].content).sort(), ['application/fhir+json', 'application/json'])
  t.equal(child.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/ChildExport')
  t.equal(child.responses['200'].content['application/fhir+json'].schema.$ref, '#/components/schemas/FhirBundle')
  t.same(family.responses['200'].content, { 'application/zip': { schema: { type: 'string', format: 'binary' } } })
  for (const status of ['400', '401', '403', '404', '500', '503']) {
    t.equal(child.responses[status].content['application/json'].schema.$ref, '#/components/schemas/Error', `child ${status}`)
    t.equal(family.responses[status].content['application/json'].schema.$ref, '#/components/schemas/Error', `family ${status}`)
  }
  t.ok(doc.components.schemas.ChildExport)
  t.ok(doc.components.schemas.Growth)
})
