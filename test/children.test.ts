import t from 'tap'
import { mkdirSync, writeFileSync, existsSync } from 'node:fs'
import path from 'node:path'
import { build, call, familyOf, household, register } from './helper'

const OPEN = { REGISTRATION: 'open' }

t.test('children: create, read, list, replace, delete', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const family = familyOf(owner)

  const created = await call(app, owner, 'POST', '/api/children', { name: ' Kim ', dateOfBirth: '2022-03-15', sex: 'female' })
  t.equal(created.statusCode, 201, 'familyId may be left out with one family')
  const kim = created.json()
  t.equal(created.headers.location, `/api/children/${kim.id}`)
  t.same(Object.keys(kim).sort(), [
    'avatarUrl', 'createdAt', 'dateOfBirth', 'familyId', 'gestationalAgeAtBirthDays', 'gestationalAgeAtBirthWeeks', 'growthReference', 'id', 'name', 'scheduleId', 'sex', 'updatedAt', 'version'
  ])
  t.match(kim, { familyId: family, name: 'Kim', dateOfBirth: '2022-03-15', sex: 'female', avatarUrl: null, growthReference: 'who', scheduleId: null })
  t.same((await call(app, owner, 'GET', `/api/children/${kim.id}`)).json(), kim)

  const second = (await call(app, owner, 'POST', '/api/families', { name: 'Second' })).json()
  const ambiguous = await call(app, owner, 'POST', '/api/children', { name: 'Lou', dateOfBirth: '2021-01-01', sex: 'male' })
  t.equal(ambiguous.statusCode, 400, 'with several families familyId is required')
  t.same(ambiguous.json().details.issues, [{ path: '/body/familyId', message: 'is required when you belong to several families' }])
  const lou = (await call(app, owner, 'POST', '/api/children', { name: 'Lou', dateOfBirth: '2021-01-01', sex: 'male', familyId: second.id })).json()
  const ada = (await call(app, owner, 'POST', '/api/children', { name: 'Ada', dateOfBirth: '2023-07-01', sex: 'other', familyId: family })).json()

  const all = (await call(app, owner, 'GET', '/api/children')).json()
  t.same(all.data.map((c: any) => c.name), ['Ada', 'Kim', 'Lou'], 'every family\'s children, by name')
  t.same(all.meta, { total: 3, limit: 50, offset: 0 })
  const one = (await call(app, owner, 'GET', `/api/children?familyId=${second.id}`)).json()
  t.same(one.data.map((c: any) => c.id), [lou.id], 'the familyId filter')
  const byBirth = (await call(app, owner, 'GET', '/api/children?sort=-dateOfBirth')).json()
  t.same(byBirth.data.map((c: any) => c.name), ['Ada', 'Kim', 'Lou'])
  const byCreation = (await call(app, owner, 'GET', '/api/children?sort=createdAt&limit=2&offset=1')).json()
  t.same(byCreation.data.map((c: any) => c.id), [lou.id, ada.id])
  t.same(byCreation.meta, { total: 3, limit: 2, offset: 1 })
  t.equal((await call(app, owner, 'GET', '/api/children?sort=sex')).statusCode, 400)
  t.equal((await call(app, owner, 'GET', '/api/children?familyId=999999')).statusCode, 404)

  for (const [label, body] of [
    ['a future birth', { name: 'X', dateOfBirth: '2999-01-01', sex: 'male' }],
    ['a bad sex', { name: 'X', dateOfBirth: '2020-01-01', sex: 'unknown' }],
    ['an impossible date', { name: 'X', dateOfBirth: '2023-02-30', sex: 'male' }],
    ['no name', { name: '', dateOfBirth: '2020-01-01', sex: 'male' }],
    ['a long name', { name: 'n'.repeat(201), dateOfBirth: '2020-01-01', sex: 'male' }],
    ['an unknown field', { name: 'X', dateOfBirth: '2020-01-01', sex: 'male', avatarUrl: '/x' }]
  ] as Array<[string, object]>) {
    const res = await call(app, owner, 'POST', '/api/children', { ...body, familyId: family })
    t.equal(res.statusCode, 400, label)
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }

  await call(app, owner, 'POST', `/api/children/${kim.id}/measurements`, { measuredAt: '2022-04-01', weightKg: 4 })
  const late = await call(app, owner, 'PUT', `/api/children/${kim.id}`, { name: 'Kim', dateOfBirth: '2022-04-02', sex: 'female' })
  t.equal(late.statusCode, 400, 'the birth may not move after a record')
  t.match(late.json().details.issues, [{ path: '/body/dateOfBirth', message: /earliest record \(2022-04-01\)/ }])
  const replaced = await call(app, owner, 'PUT', `/api/children/${kim.id}`, { name: 'Kimberly', dateOfBirth: '2022-04-01', sex: 'other' })
  t.equal(replaced.statusCode, 200)
  t.match(replaced.json(), { id: kim.id, familyId: family, name: 'Kimberly', dateOfBirth: '2022-04-01', sex: 'other' })
  t.equal((await call(app, owner, 'PUT', `/api/children/${kim.id}`, { name: 'Kim', dateOfBirth: '2022-04-01' })).statusCode, 400, 'PUT replaces every field')
  t.equal((await call(app, owner, 'PUT', `/api/children/${kim.id}`, { name: 'Kim', dateOfBirth: '2022-04-01', sex: 'other', familyId: second.id })).statusCode, 400, 'a child does not move family by PUT')
})

t.test('a child\'s growth chart: WHO unless chosen, kept by PATCH, back to WHO when a PUT leaves it out', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const created = await call(app, owner, 'POST', '/api/children', { name: 'Sam', dateOfBirth: '2020-05-01', sex: 'male', growthReference: 'auto' })
  t.equal(created.statusCode, 201)
  const sam = created.json()
  t.equal(sam.growthReference, 'auto', 'chosen on create')
  const patched = await call(app, owner, 'PATCH', `/api/children/${sam.id}`, { name: 'Samuel' })
  t.equal(patched.json().growthReference, 'auto', 'a PATCH without it keeps it')
  t.equal((await call(app, owner, 'PATCH', `/api/children/${sam.id}`, { growthReference: 'cdc' })).json().growthReference, 'cdc')
  t.equal((await call(app, owner, 'GET', `/api/children/${sam.id}`)).json().growthReference, 'cdc')
  const replaced = await call(app, owner, 'PUT', `/api/children/${sam.id}`, { name: 'Sam', dateOfBirth: '2020-05-01', sex: 'male' })
  t.equal(replaced.json().growthReference, 'who', 'a PUT without it sets the default')
  for (const [method, path, body] of [
    ['POST', '/api/children', { name: 'X', dateOfBirth: '2020-01-01', sex: 'male', growthReference: 'nchs' }],
    ['PATCH', `/api/children/${sam.id}`, { growthReference: null }],
    ['PUT', `/api/children/${sam.id}`, { name: 'Sam', dateOfBirth: '2020-05-01', sex: 'male', growthReference: 'CDC' }]
  ] as Array<[string, string, object]>) {
    const res = await call(app, owner, method, path, body)
    t.equal(res.statusCode, 400, `${method} with ${JSON.stringify(body)}`)
    t.equal(res.json().details.issues[0].path, '/body/growthReference')
  }
  t.equal((await call(app, owner, 'GET', `/api/children/${sam.id}`)).json().growthReference, 'who', 'nothing written by a refused write')
  const changes = (await call(app, owner, 'GET', `/api/families/${sam.familyId}/changes`)).json().data
  t.same(changes.filter((c: any) => c.kind === 'child').map((c: any) => c.record.growthReference), ['auto', 'auto', 'cdc', 'who'], 'the changes feed carries it')
})

t.test('deleting a child takes its records and files with it', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const kim = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2022-03-15', sex: 'female' })).json()
  const lou = (await call(app, owner, 'POST', '/api/children', { name: 'Lou', dateOfBirth: '2022-03-15', sex: 'male' })).json()
  for (const child of [kim, lou]) {
    const visit = (await call(app, owner, 'POST', `/api/children/${child.id}/visits`, { date: '2023-01-01', type: 'sick', measurement: { weightKg: 9 } })).json()
    await call(app, owner, 'POST', `/api/children/${child.id}/medical-events`, { date: '2023-01-01', type: 'vaccine', name: 'MMR', visitId: visit.id })
    await call(app, owner, 'POST', `/api/children/${child.id}/illnesses`, { startDate: '2023-01-01', visitId: visit.id })
  }
  mkdirSync(app.config.uploadDir, { recursive: true })
  mkdirSync(app.config.avatarDir, { recursive: true })
  const upload = path.join(app.config.uploadDir, 'a'.repeat(32) + '.pdf')
  const avatar = path.join(app.config.avatarDir, 'b'.repeat(32) + '.webp')
  writeFileSync(upload, '%PDF-1.4')
  writeFileSync(avatar, 'RIFF')
  await app.sql`update children set avatar_name = ${path.basename(avatar)}, avatar_size_bytes = 4 where id = ${kim.id}`
  await app.sql`insert into attachments (child_id, file_name, stored_name, content_type, size_bytes) values (${kim.id}, 'scan.pdf', ${path.basename(upload)}, 'application/pdf', 8)`

  const res = await call(app, owner, 'DELETE', `/api/children/${kim.id}`)
  t.equal(res.statusCode, 204)
  t.equal((await call(app, owner, 'GET', `/api/children/${kim.id}`)).statusCode, 404)
  for (const table of ['visits', 'measurements', 'medical_events', 'illnesses', 'attachments']) {
    const [{ n }] = await app.sql`select count(*) as n from ${app.sql(table)} where child_id = ${kim.id}`
    t.equal(n, 0, `no ${table} left`)
    const [{ m }] = await app.sql`select count(*) as m from ${app.sql(table)} where child_id = ${lou.id}`
    t.ok(table === 'attachments' || m > 0, `the sibling's ${table} stay`)
  }
  t.notOk(existsSync(upload), 'the attachment file is removed')
  t.notOk(existsSync(avatar), 'the avatar file is removed')
})

t.test('who may do what with children', async t => {
  const app = await build(t, { env: OPEN })
  const { owner, familyId: family, member, viewer, stranger } = await household(app, { member: 'member', viewer: 'viewer', stranger: null })
  const kim = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2022-03-15', sex: 'female', familyId: family })).json()

  const byMember = await call(app, member, 'POST', '/api/children', { name: 'Mo', dateOfBirth: '2022-03-15', sex: 'male', familyId: family })
  t.equal(byMember.statusCode, 201, 'a member may add a child')
  t.equal((await call(app, member, 'DELETE', `/api/children/${byMember.json().id}`)).statusCode, 204, 'and delete one')

  const byViewer = await call(app, viewer, 'POST', '/api/children', { name: 'Vi', dateOfBirth: '2022-03-15', sex: 'male', familyId: family })
  t.equal(byViewer.statusCode, 403, 'a viewer may not')
  t.equal((await call(app, viewer, 'PUT', `/api/children/${kim.id}`, { name: 'X', dateOfBirth: '2022-03-15', sex: 'male' })).statusCode, 403)
  t.equal((await call(app, viewer, 'DELETE', `/api/children/${kim.id}`)).statusCode, 403)
  t.equal((await call(app, viewer, 'GET', `/api/children/${kim.id}`)).statusCode, 200, 'but reads')
  t.equal((await call(app, viewer, 'GET', '/api/children')).json().meta.total, 1)

  t.same((await call(app, stranger, 'GET', '/api/children')).json().data, [], 'a stranger sees none of them')
  t.equal((await call(app, stranger, 'GET', `/api/children?familyId=${family}`)).statusCode, 403)
  const foreign = await call(app, stranger, 'POST', '/api/children', { name: 'X', dateOfBirth: '2022-03-15', sex: 'male', familyId: family })
  t.equal(foreign.statusCode, 403)
  t.same(foreign.json(), { error: 'Access denied', code: 'FORBIDDEN', details: {} })
})
