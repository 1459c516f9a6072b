import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { removeStoredFiles } from '../io/stored-files'
import { LOCKS } from '../db/locks'
import { KINDS } from '../kinds'
import { build, call, familyOf, login, PASSWORD, register, type App, type Pair } from './helper'

const OPEN = { REGISTRATION: 'open' }
const DENIED = { error: 'Access denied', code: 'FORBIDDEN', details: {} }

function refresh (app: App, pair: Pair) {
  return app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: pair.refreshToken } })
}

/** No record of any kind, by the kinds' keys. */
const noRecords = (): Record<string, number> => Object.fromEntries(KINDS.map(kind => [kind.key, 0]))

/** The first user registered is the admin; later ones register freely. */
async function setup (t: Test) {
  const app = await build(t, { env: OPEN })
  const admin = await register(app, { name: 'Root' })
  return { app, admin }
}

async function createUser (app: App, admin: Pair, body: Record<string, unknown> = {}) {
  const email = `made-${randomBytes(4).toString('hex')}@example.org`
  const res = await call(app, admin, 'POST', '/api/admin/users', { email, password: PASSWORD, name: 'Made', ...body })
  if (res.statusCode !== 201) throw new Error(`create answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

function storedFile (dir: string, extension: string, size: number): { name: string, file: string } {
  mkdirSync(dir, { recursive: true })
  const name = `${randomBytes(16).toString('hex')}.${extension}`
  const file = path.join(dir, name)
  writeFileSync(file, randomBytes(size))
  return { name, file }
}

interface Seeded {
  childIds: number[]
  files: string[]
}

/**
 * Children with one record of each kind, an attachment and (for the first) an
 * avatar, written as rows and files the way the upload routes store them.
 */
async function seedFamily (app: App, familyId: number, children = 1): Promise<Seeded> {
  const { sql, config } = app
  const seeded: Seeded = { childIds: [], files: [] }
  for (let i = 0; i < children; i++) {
    const avatar = i === 0 ? storedFile(config.avatarDir, 'webp', 300 + i) : null
    const [child] = await sql`
      insert into children (family_id, name, date_of_birth, sex, avatar_name, avatar_size_bytes)
      values (${familyId}, ${`Kid ${i}`}, '2022-01-01', 'female', ${avatar?.name ?? null}, ${avatar === null ? null : 300 + i})
      returning id
    `
    const [visit] = await sql`insert into visits (child_id, date, type) values (${child.id}, '2023-01-02', 'wellness') returning id`
    await sql`insert into measurements (child_id, visit_id, measured_at, weight_kg) values (${child.id}, ${visit.id}, '2023-01-02', 9.5)`
    await sql`insert into medical_events (child_id, date, type, name) values (${child.id}, '2023-01-02', 'vaccine', 'MMR')`
    await sql`insert into illnesses (child_id, start_date, diagnosis) values (${child.id}, '2023-02-01', 'Cold')`
    const upload = storedFile(config.uploadDir, 'pdf', 1000 + i)
    await sql`
      insert into attachments (child_id, visit_id, file_name, stored_name, content_type, size_bytes)
      values (${child.id}, ${visit.id}, 'report.pdf', ${upload.name}, 'application/pdf', ${1000 + i})
    `
    seeded.childIds.push(child.id)
    seeded.files.push(upload.file, ...(avatar === null ? [] : [avatar.file]))
  }
  return seeded
}

/** Rows left of these children and this family, in every table that holds them. */
async function leftovers (app: App, familyId: number, childIds: number[]) {
  const ids = app.sql(childIds)
  const [row] = await app.sql`
    select
      (select count(*) from families where id = ${familyId}) as families,
      (select count(*) from family_members where family_id = ${familyId}) as members,
      (select count(*) from invites where family_id = ${familyId}) as invites,
      (select count(*) from children where id in ${ids} or family_id = ${familyId}) as children,
      (select count(*) from visits where child_id in ${ids}) as visits,
      (select count(*) from measurements where child_id in ${ids}) as measurements,
      (select count(*) from medical_events where child_id in ${ids}) as "medicalEvents",
      (select count(*) from illnesses where child_id in ${ids}) as illnesses,
      (select count(*) from attachments where child_id in ${ids}) as attachments
  `
  return row
}

const NOTHING = { families: 0, members: 0, invites: 0, children: 0, visits: 0, measurements: 0, medicalEvents: 0, illnesses: 0, attachments: 0 }

t.test('a non-admin gets 403 on every admin route, and nothing changes', async t => {
  const { app, admin } = await setup(t)
  const user = await register(app)
  const family = familyOf(admin)
  const routes: Array<[string, string, unknown?]> = [
    ['GET', '/api/admin/stats'],
    ['GET', '/api/admin/users'],
    ['POST', '/api/admin/users', { email: 'new@example.org', password: PASSWORD, name: 'New' }],
    ['GET', `/api/admin/users/${admin.user.id}`],
    ['PATCH', `/api/admin/users/${admin.user.id}`, { role: 'user' }],
    ['POST', `/api/admin/users/${admin.user.id}/password`, { newPassword: 'another password' }],
    ['DELETE', `/api/admin/users/${admin.user.id}`],
    ['GET', '/api/admin/families'],
    ['GET', `/api/admin/families/${family}`],
    ['POST', `/api/admin/families/${family}/members`, { userId: user.user.id, role: 'owner' }],
    ['DELETE', `/api/admin/families/${family}/members/${admin.user.id}`],
    ['DELETE', `/api/admin/families/${family}`]
  ]
  for (const [method, url, payload] of routes) {
    const res = await call(app, user, method, url, payload)
    t.equal(res.statusCode, 403, `${method} ${url}`)
    t.same(res.json(), DENIED)
    const anonymous = await call(app, null, method, url, payload)
    t.equal(anonymous.statusCode, 401, `${method} ${url} without a token`)
    t.equal(anonymous.json().code, 'UNAUTHORIZED')
  }
  const malformed = await call(app, user, 'PATCH', `/api/admin/users/${admin.user.id}`, { role: 'root' })
  t.equal(malformed.statusCode, 400, 'a malformed request is a 400 before the role is checked')

  t.equal((await call(app, admin, 'GET', `/api/admin/users/${admin.user.id}`)).json().role, 'admin', 'nothing changed')
  t.equal((await call(app, admin, 'GET', `/api/admin/families/${family}`)).json().memberCount, 1)
  const [{ n }] = await app.sql`select count(*) as n from users`
  t.equal(n, 2)
})

t.test('a demoted admin is refused at once, with the token from before', async t => {
  const { app, admin } = await setup(t)
  const second = await createUser(app, admin, { role: 'admin' })
  const other = await login(app, second.email)
  t.equal((await call(app, other, 'GET', '/api/admin/stats')).statusCode, 200)

  const demoted = await call(app, admin, 'PATCH', `/api/admin/users/${second.id}`, { role: 'user' })
  t.equal(demoted.statusCode, 200)
  t.equal(demoted.json().role, 'user')
  const refused = await call(app, other, 'GET', '/api/admin/stats')
  t.equal(refused.statusCode, 403)
  t.same(refused.json(), DENIED)

  await call(app, admin, 'PATCH', `/api/admin/users/${second.id}`, { role: 'admin' })
  t.equal((await call(app, other, 'GET', '/api/admin/stats')).statusCode, 200, 'and promoted at once too')
})

t.test('the stats count the rows and files there are', async t => {
  const { app, admin } = await setup(t)
  const { config } = app
  const ann = await register(app)
  const ben = await register(app)
  await createUser(app, admin)
  await createUser(app, admin, { role: 'admin' })
  const again = await login(app, admin.user.email)

  const { responseCache: cacheBefore, ...empty } = (await call(app, again, 'GET', '/api/admin/stats')).json()
  t.same(empty, {
    users: 5, admins: 2, families: 3, children: 0, ...noRecords(), attachments: 0, storageBytes: 0, activeSessions: 4
  })
  t.equal(cacheBefore.maxBytes, 32 * 1024 * 1024, 'and the instance\'s cache of answers')

  await seedFamily(app, familyOf(ann), 2)
  await seedFamily(app, familyOf(ben), 1)
  const [child] = await app.sql`select id from children where family_id = ${familyOf(ben)}`
  await app.sql`insert into measurements (child_id, measured_at, height_cm) values (${child.id}, '2023-03-01', 80.5)`
  t.equal((await call(app, ben, 'POST', '/api/auth/logout')).statusCode, 204)
  await app.sql`update sessions set expires_at = now() - interval '1 second' where user_id = ${ann.user.id}`

  const files = [config.uploadDir, config.avatarDir].flatMap(dir => readdirSync(dir).map(name => statSync(path.join(dir, name)).size))
  t.equal(files.length, 5, 'three attachments and two avatars on disk')
  const stats = await call(app, again, 'GET', '/api/admin/stats')
  t.equal(stats.statusCode, 200)
  const { responseCache: _cache, ...counts } = stats.json()
  t.same(counts, {
    users: 5,
    admins: 2,
    families: 3,
    children: 3,
    ...noRecords(),
    visits: 3,
    measurements: 4,
    medicalEvents: 3,
    illnesses: 3,
    attachments: 3,
    storageBytes: files.reduce((sum, size) => sum + size, 0),
    activeSessions: 2
  })
})

t.test('the stats count every kind of record the registry holds, under its export key', async t => {
  const { app, admin } = await setup(t)
  const owner = await register(app)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2023-01-01', sex: 'female' })).json()
  const illness = (await call(app, owner, 'POST', `/api/children/${child.id}/illnesses`, { startDate: '2024-02-01' })).json()
  t.equal((await call(app, owner, 'POST', `/api/illnesses/${illness.id}/temperatures`, { takenAt: '2024-02-01T08:00:00Z', temperatureC: 38.5 })).statusCode, 201)
  const course = (await call(app, owner, 'POST', `/api/children/${child.id}/medicine-courses`, {
    name: 'Paracetamol', doseAmount: 5, doseUnit: 'ml', minIntervalHours: 4, startDate: '2024-02-01'
  })).json()
  for (const givenAt of ['2024-02-01T08:00:00Z', '2024-02-01T13:00:00Z']) {
    t.equal((await call(app, owner, 'POST', `/api/medicine-courses/${course.id}/doses`, { givenAt })).statusCode, 201)
  }

  const stats = (await call(app, admin, 'GET', '/api/admin/stats')).json()
  const document = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const described = Object.keys(document.components.schemas.Stats.properties)
  for (const kind of KINDS) {
    const [{ n }] = await app.sql.unsafe(`select count(*) as n from ${kind.table}`)
    t.equal(stats[kind.key], n, `${kind.key} counts the rows of ${kind.table}`)
    t.ok(described.includes(kind.key), `and the document describes ${kind.key}`)
  }
  t.match(stats, { illnesses: 1, temperatures: 1, medicineCourses: 1, medicineDoses: 2 })
})

t.test('creating users', async t => {
  const { app, admin } = await setup(t)
  const res = await call(app, admin, 'POST', '/api/admin/users', { email: 'Dora@Example.org', password: PASSWORD, name: '  Dora  ' })
  t.equal(res.statusCode, 201)
  const dora = res.json()
  t.equal(res.headers.location, `/api/admin/users/${dora.id}`)
  t.same(Object.keys(dora).sort(), ['createdAt', 'disabled', 'email', 'familyCount', 'id', 'lastLoginAt', 'name', 'role'])
  t.match(dora, { email: 'Dora@Example.org', name: 'Dora', role: 'user', disabled: false, lastLoginAt: null, familyCount: 0 })
  t.same((await call(app, admin, 'GET', `/api/admin/users/${dora.id}`)).json(), dora)

  const session = await login(app, 'dora@example.org')
  t.same((await call(app, session, 'GET', '/api/me')).json().families, [], 'no family until one is created or joined')
  t.same((await call(app, session, 'GET', '/api/families')).json().data, [])
  const read = (await call(app, admin, 'GET', `/api/admin/users/${dora.id}`)).json()
  t.ok(Date.parse(read.lastLoginAt) > 0, 'the login is recorded')

  const taken = await call(app, admin, 'POST', '/api/admin/users', { email: 'DORA@example.ORG', password: PASSWORD, name: 'Other' })
  t.equal(taken.statusCode, 409)
  t.same(taken.json(), { error: 'The e-mail address is already registered', code: 'EMAIL_TAKEN', details: {} })

  t.equal((await createUser(app, admin, { role: 'admin' })).role, 'admin')
  t.equal((await createUser(app, admin, { role: null })).role, 'user')
  t.equal((await createUser(app, admin, { password: 'é'.repeat(36) })).familyCount, 0, '72 bytes is enough')

  for (const [body, issue] of [
    [{ password: 'short12' }, '/body/password'],
    [{ password: 'é'.repeat(37) }, '/body/password'],
    [{ password: 'x'.repeat(73) }, '/body/password'],
    [{ role: 'root' }, '/body/role'],
    [{ email: 'not an email' }, '/body/email'],
    [{ name: '   ' }, '/body/name'],
    [{ disabled: true }, '/body/disabled'],
    [{ familyId: 1 }, '/body/familyId']
  ] as Array<[Record<string, unknown>, string]>) {
    const bad = await call(app, admin, 'POST', '/api/admin/users', { email: `x${randomBytes(3).toString('hex')}@example.org`, password: PASSWORD, name: 'X', ...body })
    t.equal(bad.statusCode, 400, JSON.stringify(body))
    t.equal(bad.json().code, 'VALIDATION_ERROR')
    t.ok(bad.json().details.issues.some((i: any) => i.path === issue), issue)
  }
  const missing = await call(app, admin, 'POST', '/api/admin/users', { email: 'y@example.org' })
  t.same(missing.json().details.issues.map((i: any) => i.path).sort(), ['/body/name', '/body/password'])

  const both = await Promise.all(['Twin@example.org', 'twin@EXAMPLE.org'].map(email =>
    call(app, admin, 'POST', '/api/admin/users', { email, password: PASSWORD, name: 'Twin' })))
  t.same(both.map(res => res.statusCode).sort(), [201, 409], 'one e-mail given twice at once: one account')
  t.equal(both.find(res => res.statusCode === 409)?.json().code, 'EMAIL_TAKEN')
})

t.test('listing users: search, sort, pages', async t => {
  const { app, admin } = await setup(t)
  const made = []
  for (const [name, email] of [
    ['charlie', 'c@example.org'], ['Alice', 'z-alice@example.org'], ['bob', 'b@example.org'],
    ['100% Dad', 'dad@example.org'], ['Under', 'under_score@example.org'], ['Back\\slash', 'k@example.org']
  ]) made.push(await createUser(app, admin, { name, email }))
  const [charlie, alice, bob, dad, under, back] = made
  const day = (id: number, date: string) => app.sql`update users set created_at = ${date} where id = ${id}`
  await day(admin.user.id, '2024-01-01')
  await day(charlie.id, '2024-01-05')
  await day(alice.id, '2024-01-03')
  await day(bob.id, '2024-01-03')
  await day(dad.id, '2024-01-02')
  await day(under.id, '2024-01-04')
  await day(back.id, '2024-01-06')

  const ids = async (query: string) => {
    const res = await call(app, admin, 'GET', `/api/admin/users${query}`)
    t.equal(res.statusCode, 200, query)
    return res.json().data.map((u: any) => u.id)
  }
  const all = (await call(app, admin, 'GET', '/api/admin/users')).json()
  t.same(all.meta, { total: 7, limit: 50, offset: 0 })
  t.same(all.data.map((u: any) => u.id), [admin.user.id, dad.id, alice.id, bob.id, under.id, charlie.id, back.id], 'createdAt by default, ties by id')
  t.same(Object.keys(all.data[0]).sort(), ['createdAt', 'disabled', 'email', 'familyCount', 'id', 'lastLoginAt', 'name', 'role'])
  t.equal(all.data[0].familyCount, 1)
  t.same(await ids('?sort=-createdAt'), [back.id, charlie.id, under.id, alice.id, bob.id, dad.id, admin.user.id])
  t.same(await ids('?sort=name'), [dad.id, alice.id, back.id, bob.id, charlie.id, admin.user.id, under.id], 'names ignore case')
  t.same(await ids('?sort=-name'), [under.id, admin.user.id, charlie.id, bob.id, back.id, alice.id, dad.id])
  t.same(await ids('?sort=email'), [bob.id, charlie.id, dad.id, back.id, under.id, admin.user.id, alice.id], 'e-mails ignore case')
  t.same(await ids('?sort=-createdAt,name'), [back.id, charlie.id, under.id, alice.id, bob.id, dad.id, admin.user.id])
  t.same(await ids('?sort=createdAt,-name'), [admin.user.id, dad.id, bob.id, alice.id, under.id, charlie.id, back.id])

  t.same(await ids('?q=ALI'), [alice.id], 'the name or the e-mail, ignoring case')
  t.same(await ids('?q=b%40example'), [bob.id])
  t.same(await ids('?q=%25'), [dad.id], 'a % is no wildcard')
  t.same(await ids('?q=_'), [under.id], 'an _ is no wildcard')
  t.same(await ids('?q=%5C'), [back.id], 'a backslash is itself')
  t.same(await ids('?q=nobody'), [])
  t.same(await ids('?q=%20%20'), await ids(''), 'an empty search is no search')

  const page = (await call(app, admin, 'GET', '/api/admin/users?limit=2&offset=1&sort=name')).json()
  t.same(page.data.map((u: any) => u.id), [alice.id, back.id])
  t.same(page.meta, { total: 7, limit: 2, offset: 1 })
  const past = (await call(app, admin, 'GET', '/api/admin/users?q=example.org&offset=100')).json()
  t.same(past, { data: [], meta: { total: 7, limit: 50, offset: 100 } }, 'the total of the search past its end')
  t.equal((await call(app, admin, 'GET', '/api/admin/users?unknown=1')).statusCode, 200, 'unknown query parameters are ignored')

  for (const query of ['sort=password', 'sort=name,', 'sort=-', 'sort=name;drop', 'limit=0', 'limit=1001', 'offset=-1', 'limit=x']) {
    const res = await call(app, admin, 'GET', `/api/admin/users?${query}`)
    t.equal(res.statusCode, 400, query)
    t.equal(res.json().code, 'VALIDATION_ERROR')
    t.match(res.json().details.issues[0].path, /^\/query\//)
  }
  for (const id of ['0', 'abc', '2147483648', '1.5', '-1']) {
    const res = await call(app, admin, 'GET', `/api/admin/users/${id}`)
    t.equal(res.statusCode, 400, id)
    t.equal(res.json().details.issues[0].path, '/params/id')
  }
  const unknown = await call(app, admin, 'GET', '/api/admin/users/999999')
  t.equal(unknown.statusCode, 404)
  t.same(unknown.json(), { error: 'User not found', code: 'NOT_FOUND', details: {} })
})

t.test('updating users: profile, role, disabling', async t => {
  const { app, admin } = await setup(t)
  const eve = await register(app, { email: 'eve@example.org' })
  const frank = await register(app)
  const eveAgain = await login(app, 'eve@example.org')

  const renamed = await call(app, admin, 'PATCH', `/api/admin/users/${eve.user.id}`, { name: ' Eve E. ', email: 'EVE@example.org' })
  t.equal(renamed.statusCode, 200)
  t.match(renamed.json(), { id: eve.user.id, name: 'Eve E.', email: 'EVE@example.org', role: 'user', disabled: false, familyCount: 1 })
  t.same((await call(app, admin, 'PATCH', `/api/admin/users/${eve.user.id}`, {})).json(), renamed.json(), 'an empty change changes nothing')
  const taken = await call(app, admin, 'PATCH', `/api/admin/users/${eve.user.id}`, { email: frank.user.email.toUpperCase() })
  t.equal(taken.statusCode, 409)
  t.equal(taken.json().code, 'EMAIL_TAKEN')

  for (const body of [{ name: null }, { name: '' }, { email: null }, { role: 'root' }, { disabled: 'yes' }, { password: PASSWORD }, { id: 5 }]) {
    const res = await call(app, admin, 'PATCH', `/api/admin/users/${eve.user.id}`, body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
  t.equal((await call(app, admin, 'PATCH', '/api/admin/users/999999', { name: 'X' })).statusCode, 404)
  t.equal((await call(app, admin, 'PATCH', '/api/admin/users/abc', { name: 'X' })).statusCode, 400)

  t.equal((await call(app, eve, 'GET', '/api/me')).statusCode, 200)
  const disabled = await call(app, admin, 'PATCH', `/api/admin/users/${eve.user.id}`, { disabled: true })
  t.equal(disabled.statusCode, 200)
  t.equal(disabled.json().disabled, true)
  for (const session of [eve, eveAgain]) {
    t.equal((await call(app, session, 'GET', '/api/me')).statusCode, 401, 'every session ends at once')
    t.equal((await refresh(app, session)).json().code, 'REFRESH_TOKEN_INVALID')
  }
  const [{ n }] = await app.sql`select count(*) as n from sessions where user_id = ${eve.user.id} and revoked_at is null`
  t.equal(n, 0)
  const refused = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'eve@example.org', password: PASSWORD } })
  t.equal(refused.statusCode, 403)
  t.equal(refused.json().code, 'ACCOUNT_DISABLED')

  t.equal((await call(app, admin, 'PATCH', `/api/admin/users/${eve.user.id}`, { disabled: false })).json().disabled, false)
  t.equal((await call(app, await login(app, 'eve@example.org'), 'GET', '/api/me')).statusCode, 200, 'enabled again')
})

t.test('the last admin can be neither demoted nor disabled', async t => {
  const { app, admin } = await setup(t)
  for (const body of [{ role: 'user' }, { disabled: true }, { role: 'user', disabled: true }]) {
    const res = await call(app, admin, 'PATCH', `/api/admin/users/${admin.user.id}`, body)
    t.equal(res.statusCode, 409, JSON.stringify(body))
    t.same(res.json(), { error: 'The last admin can be neither demoted nor disabled', code: 'LAST_ADMIN', details: {} })
  }
  t.equal((await call(app, admin, 'PATCH', `/api/admin/users/${admin.user.id}`, { role: 'admin', name: 'Still' })).statusCode, 200)

  const second = await createUser(app, admin, { role: 'admin' })
  await call(app, admin, 'PATCH', `/api/admin/users/${second.id}`, { disabled: true })
  t.equal((await call(app, admin, 'PATCH', `/api/admin/users/${admin.user.id}`, { role: 'user' })).json().code, 'LAST_ADMIN', 'a disabled admin does not count')
  await call(app, admin, 'PATCH', `/api/admin/users/${second.id}`, { disabled: false })

  // Both demotions are let through the admin check and held at the lock, then released together.
  let pending: Promise<Array<Awaited<ReturnType<typeof call>>>> | undefined
  let waiting = 0
  await app.sql.begin(async tx => {
    await tx`select pg_advisory_xact_lock(${LOCKS.admins})`
    pending = Promise.all([admin.user.id, second.id].map(id => call(app, admin, 'PATCH', `/api/admin/users/${id}`, { role: 'user' })))
    for (let waited = 0; waited < 10000; waited += 20) {
      const [{ n }] = await app.sql`
        select count(*) as n from pg_locks
        where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())
      `
      waiting = n
      if (waiting === 2) break
      await new Promise(resolve => setTimeout(resolve, 20))
    }
  })
  t.equal(waiting, 2, 'both demotions waited for the lock')
  const both = await (pending as NonNullable<typeof pending>)
  t.same(both.map(res => res.statusCode).sort(), [200, 409], 'two demotions at once: one passes')
  t.equal(both.find(res => res.statusCode === 409)?.json().code, 'LAST_ADMIN')
  const [{ n }] = await app.sql`select count(*) as n from users where role = 'admin' and not disabled`
  t.equal(n, 1)
})

t.test('setting a password ends every session of the user', async t => {
  const { app, admin } = await setup(t)
  const gus = await register(app)
  const gusAgain = await login(app, gus.user.email)
  const set = await call(app, admin, 'POST', `/api/admin/users/${gus.user.id}/password`, { newPassword: ' new password ' })
  t.equal(set.statusCode, 204)
  t.equal(set.body, '')
  for (const session of [gus, gusAgain]) {
    t.equal((await call(app, session, 'GET', '/api/me')).statusCode, 401)
    t.equal((await refresh(app, session)).json().code, 'REFRESH_TOKEN_INVALID')
  }
  const old = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: gus.user.email, password: PASSWORD } })
  t.equal(old.json().code, 'INVALID_CREDENTIALS')
  t.equal((await call(app, await login(app, gus.user.email, ' new password '), 'GET', '/api/me')).statusCode, 200, 'never trimmed')
  t.equal((await call(app, admin, 'GET', '/api/admin/stats')).statusCode, 200, 'the admin\'s own session goes on')

  for (const body of [{ newPassword: 'short' }, { newPassword: 'x'.repeat(73) }, {}, { newPassword: PASSWORD, currentPassword: PASSWORD }, { newPassword: 12345678 }]) {
    const res = await call(app, admin, 'POST', `/api/admin/users/${gus.user.id}/password`, body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
  t.equal((await call(app, admin, 'POST', '/api/admin/users/999999/password', { newPassword: PASSWORD })).statusCode, 404)
})

t.test('deleting users', async t => {
  const { app, admin } = await setup(t)
  const owner = await register(app)
  const member = await register(app)
  const ownerFamily = familyOf(owner)
  const memberFamily = familyOf(member)
  t.equal((await call(app, admin, 'POST', `/api/admin/families/${ownerFamily}/members`, { userId: member.user.id, role: 'member' })).statusCode, 201)
  const kept = await seedFamily(app, ownerFamily)
  const gone = await seedFamily(app, memberFamily, 2)
  await call(app, member, 'POST', `/api/families/${memberFamily}/invites`, { email: 'friend@example.org', role: 'viewer' })

  const self = await call(app, admin, 'DELETE', `/api/admin/users/${admin.user.id}`)
  t.equal(self.statusCode, 409)
  t.same(self.json(), { error: 'The last admin cannot be deleted', code: 'LAST_ADMIN', details: {} })

  const lastOwner = await call(app, admin, 'DELETE', `/api/admin/users/${owner.user.id}`)
  t.equal(lastOwner.statusCode, 409)
  t.same(lastOwner.json(), { error: 'The user is the last owner of a family with other members', code: 'LAST_OWNER', details: { familyIds: [ownerFamily] } })
  t.equal((await call(app, owner, 'GET', '/api/me')).statusCode, 200, 'nothing was deleted')

  const deleted = await call(app, admin, 'DELETE', `/api/admin/users/${member.user.id}`)
  t.equal(deleted.statusCode, 204)
  t.equal(deleted.body, '')
  t.same(await leftovers(app, memberFamily, gone.childIds), NOTHING, 'the family the user was alone in is gone with everything in it')
  t.notOk(gone.files.some(file => existsSync(file)), 'its files too')
  t.ok(kept.files.every(file => existsSync(file)), 'another family\'s files stay')
  t.match(await leftovers(app, ownerFamily, kept.childIds), { families: 1, members: 1, children: 1, attachments: 1 })
  const [rows] = await app.sql`
    select
      (select count(*) from users where id = ${member.user.id}) as users,
      (select count(*) from sessions where user_id = ${member.user.id}) as sessions,
      (select count(*) from refresh_tokens where user_id = ${member.user.id}) as tokens,
      (select count(*) from family_members where user_id = ${member.user.id}) as memberships
  `
  t.same(rows, { users: 0, sessions: 0, tokens: 0, memberships: 0 })
  t.equal((await call(app, member, 'GET', '/api/me')).statusCode, 401, 'refused at once')
  t.equal((await refresh(app, member)).statusCode, 401)
  t.equal((await call(app, admin, 'GET', `/api/admin/users/${member.user.id}`)).statusCode, 404)
  t.equal((await call(app, admin, 'DELETE', `/api/admin/users/${member.user.id}`)).statusCode, 404)

  const coOwner = await createUser(app, admin)
  await call(app, admin, 'POST', `/api/admin/families/${ownerFamily}/members`, { userId: coOwner.id, role: 'owner' })
  t.equal((await call(app, admin, 'DELETE', `/api/admin/users/${owner.user.id}`)).statusCode, 204, 'an owner with a co-owner may go')
  const family = (await call(app, admin, 'GET', `/api/admin/families/${ownerFamily}`)).json()
  t.same(family.members.map((m: any) => [m.userId, m.role]), [[coOwner.id, 'owner']])
  t.ok(kept.files.every(file => existsSync(file)), 'the family keeps its files')

  const second = await createUser(app, admin, { role: 'admin' })
  const secondSession = await login(app, second.email)
  t.equal((await call(app, secondSession, 'DELETE', `/api/admin/users/${admin.user.id}`)).statusCode, 204, 'an admin that is not the last may go')
  t.equal((await call(app, admin, 'GET', '/api/admin/stats')).statusCode, 401)
  t.equal((await call(app, secondSession, 'DELETE', `/api/admin/users/${second.id}`)).json().code, 'LAST_ADMIN')
  t.equal((await call(app, secondSession, 'DELETE', '/api/admin/users/0')).statusCode, 400)
})

t.test('families: list, read, and an admin still needs membership for a family\'s data', async t => {
  const { app, admin } = await setup(t)
  const ann = await register(app, { name: 'Ann' })
  const ben = await register(app, { name: 'Ben' })
  const own = familyOf(admin)
  const annFamily = familyOf(ann)
  const benFamily = familyOf(ben)
  const [pct] = await app.sql`insert into families (name) values ('100% Smiths') returning id`

  const list = await call(app, admin, 'GET', '/api/admin/families')
  t.equal(list.statusCode, 200)
  t.same(list.json().meta, { total: 4, limit: 50, offset: 0 })
  t.same(list.json().data.map((f: any) => [f.id, f.role]), [[own, 'owner'], [annFamily, null], [benFamily, null], [pct.id, null]], 'by id; the admin\'s own role, null elsewhere')
  t.same(Object.keys(list.json().data[0]).sort(), ['childCount', 'createdAt', 'id', 'memberCount', 'name', 'role', 'version'])
  const ids = async (query: string) => (await call(app, admin, 'GET', `/api/admin/families${query}`)).json().data.map((f: any) => f.id)
  t.same(await ids('?q=ann%27S'), [annFamily])
  t.same(await ids('?q=%25'), [pct.id])
  t.same(await ids('?q=_'), [])
  t.same(await ids('?sort=-name'), [own, benFamily, annFamily, pct.id])
  t.same(await ids('?sort=-id'), [pct.id, benFamily, annFamily, own])
  const page = (await call(app, admin, 'GET', '/api/admin/families?limit=1&offset=2')).json()
  t.same(page, { data: [list.json().data[2]], meta: { total: 4, limit: 1, offset: 2 } })
  t.same((await call(app, admin, 'GET', '/api/admin/families?q=zzz&offset=5')).json().meta, { total: 0, limit: 50, offset: 5 })
  for (const query of ['sort=email', 'sort=memberCount', 'limit=0']) {
    t.equal((await call(app, admin, 'GET', `/api/admin/families?${query}`)).statusCode, 400, query)
  }

  await seedFamily(app, annFamily)
  const read = await call(app, admin, 'GET', `/api/admin/families/${annFamily}`)
  t.equal(read.statusCode, 200)
  t.same(Object.keys(read.json()).sort(), ['childCount', 'createdAt', 'id', 'memberCount', 'members', 'name', 'role', 'version'])
  t.match(read.json(), { id: annFamily, name: "Ann's family", role: null, memberCount: 1, childCount: 1 })
  t.same(read.json().members.map((m: any) => Object.keys(m).sort()), [['email', 'joinedAt', 'name', 'role', 'userId']])
  t.match(read.json().members[0], { userId: ann.user.id, name: 'Ann', email: ann.user.email, role: 'owner' })

  for (const url of [`/api/families/${annFamily}`, `/api/families/${annFamily}/members`]) {
    const res = await call(app, admin, 'GET', url)
    t.equal(res.statusCode, 403, `${url}: the family's own routes need membership`)
    t.same(res.json(), DENIED)
  }
  t.equal((await call(app, admin, 'POST', `/api/admin/families/${annFamily}/members`, { userId: admin.user.id, role: 'viewer' })).statusCode, 201)
  t.equal((await call(app, admin, 'GET', `/api/families/${annFamily}`)).statusCode, 200, 'a member may read it')
  t.equal((await call(app, admin, 'GET', `/api/admin/families/${annFamily}`)).json().role, 'viewer')

  t.equal((await call(app, admin, 'GET', '/api/admin/families/999999')).json().code, 'NOT_FOUND')
  t.equal((await call(app, admin, 'GET', '/api/admin/families/0')).statusCode, 400)
})

t.test('family members: add and remove', async t => {
  const { app, admin } = await setup(t)
  const ann = await register(app)
  const ben = await register(app)
  const cat = await register(app)
  const family = familyOf(ann)
  const base = `/api/admin/families/${family}/members`

  t.equal((await call(app, ben, 'GET', `/api/families/${family}`)).statusCode, 403)
  const added = await call(app, admin, 'POST', base, { userId: ben.user.id, role: 'member' })
  t.equal(added.statusCode, 201)
  t.same(Object.keys(added.json()).sort(), ['email', 'joinedAt', 'name', 'role', 'userId'])
  t.match(added.json(), { userId: ben.user.id, name: ben.user.name, email: ben.user.email, role: 'member' })
  t.equal((await call(app, ben, 'GET', `/api/families/${family}`)).json().role, 'member', 'the new member gets in at once, with the token from before')
  const again = await call(app, admin, 'POST', base, { userId: ben.user.id, role: 'owner' })
  t.equal(again.statusCode, 409)
  t.same(again.json(), { error: 'The user is already a member of this family', code: 'ALREADY_MEMBER', details: {} })

  t.same((await call(app, admin, 'POST', base, { userId: 999999, role: 'member' })).json(), { error: 'User not found', code: 'NOT_FOUND', details: {} })
  t.same((await call(app, admin, 'POST', '/api/admin/families/999999/members', { userId: cat.user.id, role: 'member' })).json(),
    { error: 'Family not found', code: 'NOT_FOUND', details: {} })
  for (const body of [{ userId: cat.user.id, role: 'boss' }, { userId: String(cat.user.id), role: 'member' }, { userId: cat.user.id }, { userId: cat.user.id, role: 'member', extra: 1 }, { userId: 0, role: 'member' }]) {
    const res = await call(app, admin, 'POST', base, body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
  await call(app, admin, 'POST', base, { userId: cat.user.id, role: 'viewer' })

  const removed = await call(app, admin, 'DELETE', `${base}/${ben.user.id}`)
  t.equal(removed.statusCode, 204)
  t.equal((await call(app, ben, 'GET', `/api/families/${family}`)).statusCode, 403, 'a removed member is refused at once')
  t.equal((await call(app, admin, 'DELETE', `${base}/${ben.user.id}`)).json().code, 'NOT_FOUND', 'no longer a member')
  t.equal((await call(app, admin, 'DELETE', `/api/admin/families/999999/members/${ben.user.id}`)).statusCode, 404)
  t.equal((await call(app, admin, 'DELETE', `${base}/abc`)).statusCode, 400)

  const lastOwner = await call(app, admin, 'DELETE', `${base}/${ann.user.id}`)
  t.equal(lastOwner.statusCode, 409)
  t.same(lastOwner.json(), { error: 'The last owner of a family with other members cannot be removed', code: 'LAST_OWNER', details: {} })
  t.equal((await call(app, admin, 'DELETE', `${base}/${cat.user.id}`)).statusCode, 204)
  t.equal((await call(app, admin, 'DELETE', `${base}/${ann.user.id}`)).statusCode, 204, 'the last owner alone may be removed')
  const left = (await call(app, admin, 'GET', `/api/admin/families/${family}`)).json()
  t.match(left, { id: family, memberCount: 0, members: [] }, 'a family left without members is kept')
  t.equal((await call(app, ann, 'GET', `/api/families/${family}`)).statusCode, 403)
})

t.test('deleting a family removes everything in it, files included', async t => {
  const { app, admin } = await setup(t)
  const ann = await register(app)
  const ben = await register(app)
  const family = familyOf(ann)
  await call(app, admin, 'POST', `/api/admin/families/${family}/members`, { userId: ben.user.id, role: 'viewer' })
  await call(app, ann, 'POST', `/api/families/${family}/invites`, { email: 'friend@example.org', role: 'member' })
  const doomed = await seedFamily(app, family, 3)
  const kept = await seedFamily(app, familyOf(ben))
  t.match(await leftovers(app, family, doomed.childIds), { families: 1, members: 2, invites: 1, children: 3, visits: 3, attachments: 3 })
  t.ok(doomed.files.every(file => existsSync(file)))

  const res = await call(app, admin, 'DELETE', `/api/admin/families/${family}`)
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.same(await leftovers(app, family, doomed.childIds), NOTHING, 'no row of it is left')
  t.notOk(doomed.files.some(file => existsSync(file)), 'no file of it is left')
  t.ok(kept.files.every(file => existsSync(file)), 'another family keeps its files')
  t.equal((await call(app, ann, 'GET', `/api/families/${family}`)).statusCode, 404)
  t.same((await call(app, ann, 'GET', '/api/me')).json().families, [], 'its members lose it at once')
  t.equal((await call(app, admin, 'GET', `/api/admin/families/${family}`)).statusCode, 404)
  t.equal((await call(app, admin, 'DELETE', `/api/admin/families/${family}`)).statusCode, 404)
  t.equal((await call(app, admin, 'DELETE', '/api/admin/families/2147483648')).statusCode, 400)

  const emptyFamily = familyOf(ben)
  rmSync(kept.files[0])
  t.equal((await call(app, admin, 'DELETE', `/api/admin/families/${emptyFamily}`)).statusCode, 204, 'a file already gone is no error')
  t.same(await leftovers(app, emptyFamily, kept.childIds), NOTHING)
  t.notOk(kept.files.some(file => existsSync(file)))
})

t.test('stored files are removed only inside their own directory', async t => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'stored-files-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const config = { uploadDir: path.join(root, 'uploads'), avatarDir: path.join(root, 'avatars') }
  const upload = storedFile(config.uploadDir, 'pdf', 10)
  const avatar = storedFile(config.avatarDir, 'webp', 10)
  writeFileSync(path.join(root, 'outside.txt'), 'keep')
  mkdirSync(path.join(config.uploadDir, 'sub'))
  writeFileSync(path.join(config.uploadDir, 'sub', 'inner.pdf'), 'keep')

  const refused = await removeStoredFiles(config, {
    attachments: [upload.name, 'missing.pdf', '../outside.txt', 'sub/inner.pdf', 'sub\\inner.pdf', '..', '.', ''],
    avatars: [avatar.name, '../uploads/sub/inner.pdf']
  })
  t.same(refused.sort(), ['', '.', '..', '../outside.txt', '../uploads/sub/inner.pdf', 'sub/inner.pdf', 'sub\\inner.pdf'].sort())
  t.notOk(existsSync(upload.file))
  t.notOk(existsSync(avatar.file))
  t.ok(existsSync(path.join(root, 'outside.txt')))
  t.ok(existsSync(path.join(config.uploadDir, 'sub', 'inner.pdf')))
  t.same(await removeStoredFiles(config, {}), [])
})

t.test('the OpenAPI document describes every admin route', async t => {
  const { app } = await setup(t)
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const operations = Object.entries(doc.paths as Record<string, Record<string, any>>)
    .filter(([url]) => url.startsWith('/api/admin'))
    .flatMap(([url, methods]) => Object.entries(methods).map(([method, op]) => ({ url, method, op })))
  t.same(operations.map(({ op }) => op.operationId).sort(), [
    'addAdminFamilyMember', 'createAdminIdentityLink', 'createAdminUser', 'deleteAdminFamily', 'deleteAdminUser', 'deleteAdminUserIdentity', 'getAdminFamily', 'getAdminStats',
    'getAdminUser', 'listAdminFamilies', 'listAdminUserIdentities', 'listAdminUsers', 'removeAdminFamilyMember', 'setAdminUserPassword', 'updateAdminUser'
  ])
  for (const { url, method, op } of operations) {
    t.same(op.tags, ['admin'], `${method} ${url}`)
    t.same(op.security, [{ bearer: [] }])
    t.ok(op.summary)
    t.ok(op.responses['401'] && op.responses['403'], 'documents its refusals')
  }
  for (const name of ['AdminUser', 'AdminFamily', 'Stats']) t.ok(doc.components.schemas[name], name)
})

t.test('the kept counts of the stats stay exact through every kind of write, and fold without losing any', async t => {
  const { app, admin } = await setup(t)
  const ann = await register(app)
  const { sql } = app
  const exact = async () => {
    const [row] = await sql`
      select (select count(*) from users)::int as users, (select count(*) from families)::int as families,
             (select count(*) from children)::int as children, (select count(*) from attachments)::int as attachments,
             ((select coalesce(sum(size_bytes), 0) from attachments) + (select coalesce(sum(avatar_size_bytes), 0) from children))::int as "storageBytes"
    `
    // Every kind of record, by its table.
    for (const kind of KINDS) row[kind.key] = (await sql.unsafe(`select count(*)::int as n from ${kind.table}`))[0].n
    return row
  }
  const stated = async () => {
    const { responseCache: _cache, admins: _admins, activeSessions: _sessions, ...counts } = (await call(app, admin, 'GET', '/api/admin/stats')).json()
    return counts
  }
  const seeded = await seedFamily(app, familyOf(ann), 3)
  t.same(await stated(), await exact(), 'after inserts of every kind')

  const [one, two] = seeded.childIds
  await sql`update children set avatar_size_bytes = 4321 where id = ${one}`
  await sql`update children set avatar_name = null, avatar_size_bytes = null where id = ${two}`
  await sql`update children set name = 'Renamed' where id = ${one}`
  t.same(await stated(), await exact(), 'after avatars are replaced and removed')

  await sql`insert into measurements (child_id, measured_at, weight_kg) select ${one}, date '2023-01-01' + i, 10 from generate_series(1, 1500) i`
  await sql`delete from measurements where child_id = ${one} and measured_at > date '2023-02-01'`
  t.same(await stated(), await exact(), 'after a bulk insert and a bulk delete')

  t.equal((await call(app, ann, 'DELETE', `/api/children/${two}`)).statusCode, 204)
  t.same(await stated(), await exact(), 'after a child is deleted with its records')

  for (let i = 0; i < 1100; i++) await sql`insert into visits (child_id, date, type) values (${one}, '2023-05-01', 'sick')`
  const [{ deltas }] = await sql`select count(*)::int as deltas from row_counts`
  t.ok(deltas > 1000, `${deltas} rows of deltas before the stats are read`)
  t.same(await stated(), await exact(), 'the stats read them all')
  const [{ folded }] = await sql`select count(*)::int as folded from row_counts`
  t.ok(folded <= 9, `and fold them into one row a table (${folded} rows)`)
  t.same(await stated(), await exact(), 'without losing any')

  await sql`update row_counts set delta_rows = delta_rows + 5 where table_name = 'visits'`
  await sql`select recount_rows()`
  t.same(await stated(), await exact(), 'recount_rows repairs them')
})
