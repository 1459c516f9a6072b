import t, { type Test } from 'tap'
import { resourceId } from '../lib/fhir'
import { issuesOf } from './fhir-validate'
import { build, call, changesSince, familyOf, got as get, join, made, register } from './helper'
import { importedChild, unzip } from './import-helpers'
import { assertValidFhir, listening, makeShare, viewLink } from './share-helpers'

const OPEN = { REGISTRATION: 'open' }
type Json = any

/** An owner, the first user and so an administrator, with a child born 2020-01-01. */
async function setup (t: Test) {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const child = await made(app, owner, '/api/children', { name: 'Kim', dateOfBirth: '2020-01-01', sex: 'female' })
  return { app, owner, familyId: familyOf(owner), child }
}

const ids = (list: Json) => list.data.map((item: Json) => item.id)

t.test('an allergy through its whole life: create in both shapes, list, filter, sort, patch, replace, delete, history', async t => {
  const { app, owner, child } = await setup(t)
  const base = `/api/children/${child.id}/allergies`

  const res = await call(app, owner, 'POST', base, { date: '2022-05-01', substance: '  Peanuts ', category: 'food', reaction: 'Hives', severity: 'severe', notes: 'Carries an auto-injector' })
  t.equal(res.statusCode, 201, res.body)
  const peanuts = res.json()
  t.equal(res.headers.location, `/api/allergies/${peanuts.id}`)
  t.same(peanuts, {
    id: peanuts.id,
    childId: child.id,
    date: '2022-05-01',
    substance: 'Peanuts',
    category: 'food',
    reaction: 'Hives',
    severity: 'severe',
    status: 'active',
    notes: 'Carries an auto-injector',
    version: 1,
    createdAt: peanuts.createdAt,
    updatedAt: peanuts.updatedAt
  }, 'the allergy as sent, trimmed, active by default')
  const flat = await call(app, owner, 'POST', '/api/allergies', { childId: child.id, date: '2021-03-01', substance: 'Penicillin', category: 'medication', status: 'resolved' })
  t.equal(flat.statusCode, 201, flat.body)
  const penicillin = flat.json()
  t.match(penicillin, { category: 'medication', reaction: null, severity: null, status: 'resolved', notes: null })
  const dust = await made(app, owner, base, { date: '2023-09-10', substance: 'House dust', status: null })
  t.equal(dust.status, 'active', 'a null status is active')

  t.same(ids(await get(app, owner, base)), [dust.id, peanuts.id, penicillin.id], 'newest first by default')
  t.same((await get(app, owner, base)).meta, { total: 3, limit: 50, offset: 0 })
  t.same((await get(app, owner, base)).data[1], peanuts, 'a listed allergy is its GET')
  t.same(ids(await get(app, owner, `${base}?sort=date`)), [penicillin.id, peanuts.id, dust.id])
  t.same(ids(await get(app, owner, `${base}?sort=substance`)), [dust.id, peanuts.id, penicillin.id])
  t.same(ids(await get(app, owner, `${base}?sort=createdAt`)), [peanuts.id, penicillin.id, dust.id])
  t.same(ids(await get(app, owner, `${base}?from=2022-01-01&to=2022-12-31`)), [peanuts.id], 'from and to bound the date, inclusive')
  t.same(ids(await get(app, owner, `${base}?from=2022-05-01`)), [dust.id, peanuts.id])
  t.same(ids(await get(app, owner, `${base}?status=resolved`)), [penicillin.id])
  t.same(ids(await get(app, owner, `${base}?status=active`)), [dust.id, peanuts.id])
  t.same(ids(await get(app, owner, `/api/allergies?childId=${child.id}&limit=1&offset=1`)), [peanuts.id], 'the flat list, paged')

  const patched = await call(app, owner, 'PATCH', `/api/allergies/${peanuts.id}`, { severity: 'moderate', notes: null })
  t.equal(patched.statusCode, 200, patched.body)
  t.match(patched.json(), { severity: 'moderate', notes: null, status: 'active', substance: 'Peanuts', version: 2 })
  const replaced = await call(app, owner, 'PUT', `/api/allergies/${penicillin.id}`, { date: '2021-03-02', substance: 'Amoxicillin' })
  t.equal(replaced.statusCode, 200, replaced.body)
  t.match(replaced.json(), { date: '2021-03-02', substance: 'Amoxicillin', category: null, status: 'active', version: 2 }, 'a PUT without a status makes it active')
  t.equal((await call(app, owner, 'DELETE', `/api/allergies/${dust.id}`)).statusCode, 204)
  t.equal((await call(app, owner, 'GET', `/api/allergies/${dust.id}`)).statusCode, 404)

  const history = (await get(app, owner, `/api/allergies/${penicillin.id}/history`)).data
  t.same(history.map((entry: Json) => [entry.version, entry.op]), [[2, 'updated'], [1, 'created']], 'newest first')
  t.same(history[0].fields, {
    date: { from: '2021-03-01', to: '2021-03-02' },
    substance: { from: 'Penicillin', to: 'Amoxicillin' },
    category: { from: 'medication', to: null },
    status: { from: 'resolved', to: 'active' }
  }, 'the fields the PUT altered')
  t.equal((await call(app, owner, 'GET', `/api/allergies/${dust.id}/history`)).json().data[0].op, 'deleted')
})

t.test('an allergy is refused as the contract says', async t => {
  const { app, owner, child } = await setup(t)
  const base = `/api/children/${child.id}/allergies`
  const refused = async (body: Record<string, unknown>, path: string) => {
    const res = await call(app, owner, 'POST', base, { date: '2022-05-01', substance: 'Eggs', ...body })
    t.equal(res.statusCode, 400, `${JSON.stringify(body)}: 400`)
    t.ok(res.json().details.issues.some((issue: Json) => issue.path === path), path)
  }
  await refused({ category: 'pollen' }, '/body/category')
  await refused({ severity: 'deadly' }, '/body/severity')
  await refused({ status: 'gone' }, '/body/status')
  await refused({ substance: '   ' }, '/body/substance')
  await refused({ substance: 'x'.repeat(201) }, '/body/substance')
  await refused({ date: '2019-12-31' }, '/body/date')
  const unknown = await call(app, owner, 'POST', base, { date: '2022-05-01', substance: 'Eggs', colour: 'red' })
  t.equal(unknown.statusCode, 400, 'an unknown property')
  t.equal(unknown.json().code, 'VALIDATION_ERROR')
  t.equal((await call(app, owner, 'POST', base, { date: '2022-05-01', substance: 'x'.repeat(200) })).statusCode, 201, '200 characters are enough')
  t.equal((await call(app, owner, 'GET', `${base}?status=gone`)).statusCode, 400, 'a filter outside its values')
  t.equal((await call(app, owner, 'GET', `${base}?sort=severity`)).statusCode, 400, 'a sort it does not have')
})

t.test('the family scope: a viewer reads, a stranger is refused, another family\'s allergy is a 403', async t => {
  const { app, owner, familyId, child } = await setup(t)
  const viewer = await register(app)
  await join(app, owner, familyId, viewer, 'viewer')
  const stranger = await register(app)
  const allergy = await made(app, owner, `/api/children/${child.id}/allergies`, { date: '2022-05-01', substance: 'Cats' })
  t.equal((await call(app, viewer, 'GET', `/api/allergies/${allergy.id}`)).statusCode, 200)
  t.equal((await call(app, viewer, 'PATCH', `/api/allergies/${allergy.id}`, { notes: 'x' })).statusCode, 403, 'a viewer writes nothing')
  t.equal((await call(app, viewer, 'POST', `/api/children/${child.id}/allergies`, { date: '2022-05-01', substance: 'Dogs' })).statusCode, 403)
  for (const [method, url] of [['GET', `/api/allergies/${allergy.id}`], ['DELETE', `/api/allergies/${allergy.id}`], ['GET', `/api/children/${child.id}/allergies`]]) {
    t.equal((await call(app, stranger, method, url)).statusCode, 403, `${method} ${url} by a stranger`)
  }
  t.equal((await call(app, owner, 'GET', '/api/allergies/999999')).statusCode, 404)
})

t.test('a batch writes allergies as their own requests would', async t => {
  const { app, owner, familyId, child } = await setup(t)
  const res = await call(app, owner, 'POST', `/api/families/${familyId}/batch`, {
    atomic: true,
    operations: [
      { method: 'POST', path: `/api/children/${child.id}/allergies`, body: { date: '2022-05-01', substance: 'Eggs' } },
      { method: 'POST', path: '/api/allergies', body: { childId: child.id, date: '2022-05-02', substance: 'Milk', severity: 'extreme' } }
    ]
  })
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json().results.map((result: Json) => result.status), [201, 400], 'what each would have been, the bad one refused')
  t.equal((await get(app, owner, `/api/children/${child.id}/allergies`)).meta.total, 0, 'and none is written')
})

t.test('allergies are changes, exported as AllergyIntolerance, archived and imported, and counted', async t => {
  const { app, owner, familyId, child } = await setup(t)
  const start = await changesSince(app, owner, familyId, null)
  const severe = await made(app, owner, `/api/children/${child.id}/allergies`, { date: '2022-05-01', substance: 'Peanuts', category: 'food', reaction: 'Hives', severity: 'severe' })
  const mild = await made(app, owner, `/api/children/${child.id}/allergies`, { date: '2021-02-01', substance: 'Grass pollen', category: 'other', severity: 'mild', status: 'resolved' })
  const feed = await changesSince(app, owner, familyId, start.next)
  t.same(feed.data.map((change: Json) => [change.kind, change.op, change.id]), [['allergy', 'created', severe.id], ['allergy', 'created', mild.id]])
  t.same(feed.data[0].record, severe, 'the change carries the allergy as its GET answers it')

  const bundle = await get(app, owner, `/api/children/${child.id}/export?format=fhir`)
  t.same(issuesOf(bundle), [], 'the bundle validates')
  const found = (id: number) => bundle.entry.find((entry: Json) => entry.resource.id === resourceId('allergy', id))?.resource
  t.match(found(severe.id), {
    resourceType: 'AllergyIntolerance',
    clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical', code: 'active' }] },
    category: ['food'],
    criticality: 'high',
    code: { text: 'Peanuts' },
    recordedDate: '2022-05-01',
    reaction: [{ manifestation: [{ text: 'Hives' }], severity: 'severe' }]
  })
  t.same(issuesOf(found(severe.id)), [], 'and so does the AllergyIntolerance')
  t.match(found(mild.id), { clinicalStatus: { coding: [{ code: 'resolved' }] }, criticality: 'low', code: { text: 'Grass pollen' } })
  t.notOk('category' in found(mild.id) || 'reaction' in found(mild.id), 'no FHIR category for other, no reaction without one')
  t.equal(found(severe.id).patient.reference, bundle.entry[0].fullUrl, 'about the child')

  const document = await get(app, owner, `/api/children/${child.id}/export?format=json`)
  t.same(document.allergies.map((allergy: Json) => allergy.id), [severe.id, mild.id], 'the JSON export lists them, newest first')

  const archive = await call(app, owner, 'GET', `/api/families/${familyId}/export`)
  const entries = await unzip(archive.rawPayload)
  t.equal(JSON.parse((entries.get('manifest.json') as Buffer).toString()).counts.allergies, 2, 'the archive counts them')
  const { target, importer, counts, child: newChild } = await importedChild(t, archive.rawPayload, OPEN)
  t.equal(counts.allergies, 2)
  const strip = ({ id: _id, childId: _child, version: _version, createdAt: _created, updatedAt: _updated, ...rest }: Json) => rest
  t.same((await get(target, importer, `/api/children/${newChild.id}/allergies`)).data.map(strip), [severe, mild].map(strip), 'imported as they were')

  const admin = (await call(app, (await register(app)), 'GET', '/api/admin/stats'))
  t.equal(admin.statusCode, 403, 'a user reads no statistics')
  const stats = (await call(app, owner, 'GET', '/api/admin/stats')).json()
  t.equal(stats.allergies, 2, 'the statistics count them')
})

t.test('a shared summary lists the allergies with the medications, or says none is known as the IPS writes it', async t => {
  const { app, owner, child } = await setup(t)
  const origin = await listening(app)
  const section = (bundle: Json) => bundle.entry[0].resource.section.find((part: Json) => part.code.coding[0].code === '48765-2')

  const empty = (await makeShare(origin, owner, child.id, { sections: ['medications'] })).json()
  const [none] = await viewLink(empty.link, { recipient: 'ER' })
  assertValidFhir(t, none)
  const stated = section(none)
  t.equal(stated.title, 'Allergies and intolerances')
  t.notOk('emptyReason' in stated, 'no empty reason: the IPS states it with a resource')
  const noKnown = none.entry.find((entry: Json) => entry.fullUrl === stated.entry[0].reference).resource
  t.match(noKnown, {
    resourceType: 'AllergyIntolerance',
    code: { coding: [{ system: 'http://hl7.org/fhir/uv/ips/CodeSystem/absent-unknown-uv-ips', code: 'no-known-allergies', display: 'No known allergies' }] }
  })
  t.match(stated.text.div, /No known allergies/)
  t.same(none.entry[0].resource.section.map((part: Json) => part.title), ['Allergies and intolerances', 'Medications'], 'before the medications')

  const allergy = await made(app, owner, `/api/children/${child.id}/allergies`, { date: '2022-05-01', substance: 'Peanuts', reaction: 'Hives', severity: 'severe' })
  const shared = (await makeShare(origin, owner, child.id, { sections: ['medications'] })).json()
  const [summary] = await viewLink(shared.link, { recipient: 'ER' })
  assertValidFhir(t, summary)
  const listed = section(summary)
  t.same(listed.entry.map((entry: Json) => entry.reference), [`urn:uuid:${resourceId('allergy', allergy.id)}`], 'the allergy, and nothing saying none is known')
  t.match(listed.text.div, /2022-05-01 Peanuts: Hives \(severe\)/)
  t.equal(summary.entry.filter((entry: Json) => entry.resource.resourceType === 'AllergyIntolerance').length, 1)

  const other = (await makeShare(origin, owner, child.id, { sections: ['immunizations'] })).json()
  const [without] = await viewLink(other.link, { recipient: 'School nurse' })
  t.equal(section(without), undefined, 'a summary without medications has no allergies section')
})
