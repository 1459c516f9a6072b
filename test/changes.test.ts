import t, { type Test } from 'tap'
import { copyFileSync } from 'node:fs'
import path from 'node:path'
import sharp from 'sharp'
import { migrate, MIGRATIONS_DIR } from '../db/migrate'
import { build, call, join, login, register, tempDir, testDatabase, type App, type Pair } from './helper'
import { file, form } from './multipart'

const OPEN = { REGISTRATION: 'open' }

type Answer = Awaited<ReturnType<typeof call>>

/** Reads a family's changes after a cursor, every page of them. */
async function changesSince (app: App, reader: Pair, familyId: number, cursor: string | null): Promise<{ data: any[], cursor: string }> {
  const data: any[] = []
  let since = cursor
  for (;;) {
    const query = since === null ? '?limit=1000' : `?limit=1000&since=${since}`
    const res = await call(app, reader, 'GET', `/api/families/${familyId}/changes${query}`)
    if (res.statusCode !== 200) throw new Error(`changes answered ${res.statusCode}: ${res.body}`)
    const page = res.json()
    data.push(...page.data)
    since = page.meta.nextCursor
    if (!page.meta.hasMore) return { data, cursor: since as string }
  }
}

/** A short form of changes, to compare: kind id op version user. */
function brief (changes: any[]): string[] {
  return changes.map(change => `${change.kind} ${change.id} ${change.op} v${change.version} by ${change.userId ?? 'nobody'}`)
}

async function png (): Promise<Buffer> {
  return sharp({ create: { width: 8, height: 8, channels: 3, background: '#3a7' } }).png().toBuffer()
}

/** Follows one family's changes as writes happen, step by step. */
function follower (t: Test, app: App, reader: Pair, familyId: number) {
  let cursor: string | null = null
  return {
    async start () {
      cursor = (await changesSince(app, reader, familyId, null)).cursor
    },
    async expect (what: string, expected: string[], { anyOrder = false } = {}) {
      const next = await changesSince(app, reader, familyId, cursor)
      cursor = next.cursor
      const got = brief(next.data)
      t.same(anyOrder ? got.sort() : got, anyOrder ? [...expected].sort() : expected, what)
      return next.data
    }
  }
}

t.test('every write records one change for each record it touches, with its op, version and user', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app, { name: 'Olga' })
  const o = owner.user.id
  const me = await call(app, owner, 'GET', '/api/me')
  const familyId = me.json().families[0].id as number

  // Registration wrote the family, its owner, and the family's head count.
  const first = await changesSince(app, owner, familyId, null)
  t.same(brief(first.data), [`family ${familyId} created v1 by ${o}`, `member ${o} created v1 by ${o}`, `family ${familyId} updated v2 by ${o}`], 'registration')
  t.same(first.data[1].record, { userId: o, name: 'Olga', email: owner.user.email, role: 'owner', joinedAt: first.data[1].record.joinedAt }, 'a member\'s record is the member as its list answers it')
  t.match(first.data[2].record, { id: familyId, role: 'owner', memberCount: 1, childCount: 0, version: 2 }, 'a family\'s record carries the reader\'s role')

  const feed = follower(t, app, owner, familyId)
  await feed.start()

  t.equal((await call(app, owner, 'PATCH', `/api/families/${familyId}`, { name: 'The Olgas' })).statusCode, 200)
  await feed.expect('rename', [`family ${familyId} updated v3 by ${o}`])

  const member = await register(app, { name: 'Max' })
  const m = member.user.id
  const invite = await call(app, owner, 'POST', `/api/families/${familyId}/invites`, { email: member.user.email, role: 'viewer' })
  t.equal((await call(app, member, 'POST', '/api/invites/accept', { token: invite.json().token })).statusCode, 200)
  await feed.expect('accepted invite', [`member ${m} created v1 by ${m}`, `family ${familyId} updated v4 by ${m}`])

  t.equal((await call(app, owner, 'PATCH', `/api/families/${familyId}/members/${m}`, { role: 'member' })).statusCode, 200)
  await feed.expect('role change', [`member ${m} updated v2 by ${o}`, `family ${familyId} updated v5 by ${o}`])

  const child = await call(app, member, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2021-03-04', sex: 'female', familyId })
  const c = child.json().id as number
  t.equal(child.json().version, 1, 'a created child has version 1')
  await feed.expect('new child', [`child ${c} created v1 by ${m}`, `family ${familyId} updated v6 by ${m}`])

  const replaced = await call(app, owner, 'PUT', `/api/children/${c}`, { name: 'Kimmy', dateOfBirth: '2021-03-04', sex: 'female' })
  t.equal(replaced.json().version, 2, 'each change adds one to the version')
  await feed.expect('child replaced', [`child ${c} updated v2 by ${o}`])

  const avatar = form([file(await png(), 'me.png', 'image/png')])
  t.equal((await call(app, owner, 'POST', `/api/children/${c}/avatar`, avatar.payload, avatar.headers)).statusCode, 200)
  await feed.expect('avatar set', [`child ${c} updated v3 by ${o}`])
  t.equal((await call(app, owner, 'DELETE', `/api/children/${c}/avatar`)).statusCode, 204)
  await feed.expect('avatar removed', [`child ${c} updated v4 by ${o}`])

  const visit = await call(app, owner, 'POST', '/api/visits', { childId: c, date: '2022-01-10', type: 'wellness', measurement: { weightKg: 9.5 } })
  const v = visit.json().id as number
  const vm = visit.json().measurement.id as number
  await feed.expect('visit with a measurement', [`visit ${v} created v1 by ${o}`, `measurement ${vm} created v1 by ${o}`])

  const measurement = await call(app, member, 'POST', `/api/children/${c}/measurements`, { measuredAt: '2022-02-01', heightCm: 80 })
  const ms = measurement.json().id as number
  const event = await call(app, member, 'POST', '/api/medical-events', { childId: c, date: '2022-02-02', type: 'vaccine', name: 'MMR', visitId: v })
  const illness = await call(app, member, 'POST', `/api/children/${c}/illnesses`, { startDate: '2022-02-03', diagnosis: 'Cold', visitId: v })
  await feed.expect('one record of each kind', [
    `measurement ${ms} created v1 by ${m}`, `medicalEvent ${event.json().id} created v1 by ${m}`, `illness ${illness.json().id} created v1 by ${m}`
  ])

  t.equal((await call(app, member, 'PUT', `/api/measurements/${ms}`, { measuredAt: '2022-02-01', heightCm: 81 })).json().version, 2)
  const [updated] = await feed.expect('measurement replaced', [`measurement ${ms} updated v2 by ${m}`])
  t.match(updated.record, { id: ms, heightCm: 81, version: 2, measuredAt: '2022-02-01' }, 'the record after the change')

  const upload = form([file(await png(), 'chart.png', 'image/png'), { name: 'measurementId', value: String(ms) }])
  const attachment = await call(app, owner, 'POST', `/api/children/${c}/attachments`, upload.payload, upload.headers)
  const a = attachment.json().id as number
  await feed.expect('attachment', [`attachment ${a} created v1 by ${o}`])

  t.equal((await call(app, owner, 'DELETE', `/api/visits/${v}`)).statusCode, 204)
  const unlinked = await feed.expect('a deleted visit unlinks its records', [
    `visit ${v} deleted v1 by ${o}`,
    `measurement ${vm} updated v2 by ${o}`, `medicalEvent ${event.json().id} updated v2 by ${o}`, `illness ${illness.json().id} updated v2 by ${o}`
  ], { anyOrder: true })
  t.ok(unlinked.filter(change => change.op === 'updated').every(change => change.record.visitId === null), 'each now without its visit')

  t.equal((await call(app, owner, 'DELETE', `/api/measurements/${ms}`)).statusCode, 204)
  await feed.expect('a deleted measurement unlinks its attachment', [`measurement ${ms} deleted v2 by ${o}`, `attachment ${a} updated v2 by ${o}`], { anyOrder: true })

  t.equal((await call(app, member, 'PATCH', '/api/me', { name: 'Maximilian' })).statusCode, 200)
  const renamed = await feed.expect('a member\'s new name', [`member ${m} updated v3 by ${m}`])
  t.equal(renamed[0].record.name, 'Maximilian')

  t.equal((await call(app, owner, 'DELETE', `/api/children/${c}`)).statusCode, 204)
  const gone = await feed.expect('a deleted child and everything of it', [
    `attachment ${a} deleted v2 by ${o}`, `measurement ${vm} deleted v2 by ${o}`, `medicalEvent ${event.json().id} deleted v2 by ${o}`,
    `illness ${illness.json().id} deleted v2 by ${o}`, `child ${c} deleted v4 by ${o}`, `family ${familyId} updated v7 by ${o}`
  ])
  t.ok(gone.slice(0, 5).every(change => change.record === null && change.childId === c), 'deleted records carry no record but their child')

  // An administrator acting outside the family writes for nobody.
  const stranger = await register(app, { name: 'Sam' })
  const s = stranger.user.id
  t.equal((await call(app, owner, 'POST', `/api/admin/families/${familyId}/members`, { userId: s, role: 'viewer' })).statusCode, 201)
  await feed.expect('added by an administrator', [`member ${s} created v1 by nobody`, `family ${familyId} updated v8 by nobody`])
  t.equal((await call(app, owner, 'DELETE', `/api/admin/users/${s}`)).statusCode, 204)
  await feed.expect('a deleted user leaves', [`member ${s} deleted v1 by nobody`, `family ${familyId} updated v9 by nobody`])

  t.equal((await call(app, owner, 'DELETE', `/api/families/${familyId}/members/${m}`)).statusCode, 204)
  await feed.expect('member removed', [`member ${m} deleted v3 by ${o}`, `family ${familyId} updated v10 by ${o}`])

  // A refused write records nothing.
  const other = await call(app, owner, 'POST', '/api/children', { name: 'Lea', dateOfBirth: '2020-01-01', sex: 'other', familyId })
  await feed.expect('another child', [`child ${other.json().id} created v1 by ${o}`, `family ${familyId} updated v11 by ${o}`])
  t.equal((await call(app, owner, 'POST', `/api/children/${other.json().id}/measurements`, { measuredAt: '2019-01-01', weightKg: 3 })).statusCode, 400)
  t.equal((await call(app, owner, 'PUT', `/api/children/${other.json().id}`, { name: 'Lea', dateOfBirth: '2030-01-01', sex: 'other' })).statusCode, 400)
  await feed.expect('refused writes', [])
})

t.test('a write that fails or rolls back records no change', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const familyId = (await call(app, owner, 'GET', '/api/me')).json().families[0].id
  const child = await call(app, owner, 'POST', '/api/children', { name: 'Ana', dateOfBirth: '2021-01-01', sex: 'female' })
  const feed = follower(t, app, owner, familyId)
  await feed.start()
  const [{ count: before }] = await app.sql`select count(*)::int as count from changes`

  // The visit is written, then its measurement fails: the whole write rolls back.
  await app.db.sql.unsafe(`
    create function refuse_measurement() returns trigger language plpgsql as $$ begin raise exception 'refused'; end $$;
    create trigger refuse_measurement before insert on measurements for each row execute function refuse_measurement();
  `)
  const failed = await call(app, owner, 'POST', '/api/visits', { childId: child.json().id, date: '2022-01-01', type: 'sick', measurement: { weightKg: 10 } })
  t.equal(failed.statusCode, 500, 'the write fails')
  await app.db.sql.unsafe('drop trigger refuse_measurement on measurements')
  const [{ count: after }] = await app.sql`select count(*)::int as count from changes`
  t.equal(after, before, 'no change was recorded')
  t.equal((await app.sql`select count(*)::int as n from visits`)[0].n, 0, 'and no visit')
  await feed.expect('nothing in the feed', [])
})

t.test('If-Match: a stale version is a 412 that changes nothing, and of two writes with one version exactly one wins', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const child = await call(app, owner, 'POST', '/api/children', { name: 'Ben', dateOfBirth: '2021-01-01', sex: 'male' })
  const created = await call(app, owner, 'POST', `/api/children/${child.json().id}/visits`, { date: '2022-05-05', type: 'dental' })
  const id = created.json().id as number
  const url = `/api/visits/${id}`

  const read = await call(app, owner, 'GET', url)
  t.equal(read.headers.etag, '"1"', 'an item\'s ETag is its version')

  const both = await Promise.all(['Dr A', 'Dr B'].map(provider =>
    call(app, owner, 'PUT', url, { date: '2022-05-05', type: 'dental', provider }, { 'if-match': '"1"' })))
  t.same(both.map(res => res.statusCode).sort(), [200, 412], 'two PUTs with the same If-Match: one 200, one 412')
  const lost = both.find(res => res.statusCode === 412) as Answer
  t.same(lost.json(), { error: 'The item has changed since the version in If-Match', code: 'PRECONDITION_FAILED', details: { currentVersion: 2 } }, 'the 412 names the version now')
  const now = await call(app, owner, 'GET', url)
  t.equal(now.json().version, 2)
  t.equal(now.json().provider, (both.find(res => res.statusCode === 200) as Answer).json().provider, 'the winner\'s write stands')

  const free = await Promise.all(['Dr C', 'Dr D'].map(provider => call(app, owner, 'PUT', url, { date: '2022-05-05', type: 'dental', provider })))
  t.same(free.map(res => res.statusCode), [200, 200], 'without If-Match both go through')
  t.equal((await call(app, owner, 'GET', url)).json().version, 4)

  const stale = await call(app, owner, 'DELETE', url, undefined, { 'if-match': '"3"' })
  t.equal(stale.statusCode, 412, 'a DELETE with a stale If-Match is refused')
  t.equal((await call(app, owner, 'GET', url)).statusCode, 200, 'and the visit is still there')
  t.equal((await call(app, owner, 'PUT', url, { date: '2022-05-05', type: 'dental' }, { 'if-match': 'W/"4"' })).statusCode, 412, 'a weak tag never matches a write')
  const bad = await call(app, owner, 'PUT', url, { date: '2022-05-05', type: 'dental' }, { 'if-match': 'four' })
  t.equal(bad.statusCode, 400, 'a malformed If-Match is a 400')
  t.same(bad.json().details.issues, [{ path: '/headers/if-match', message: 'must be a list of versions in double quotes, such as "3", or *' }])
  t.equal((await call(app, owner, 'PUT', url, { date: '2022-05-05', type: 'dental', notes: 'x' }, { 'if-match': '"2", "4"' })).statusCode, 200, 'any of several listed versions matches')
  t.equal((await call(app, owner, 'DELETE', url, undefined, { 'if-match': '*' })).statusCode, 204, '* matches any version')
  t.equal((await call(app, owner, 'DELETE', url, undefined, { 'if-match': '"5"' })).statusCode, 404, 'a deleted item is a 404, not a 412')

  // Children and families honour If-Match the same way.
  const childUrl = `/api/children/${child.json().id}`
  t.equal((await call(app, owner, 'PUT', childUrl, { name: 'Benny', dateOfBirth: '2021-01-01', sex: 'male' }, { 'if-match': '"7"' })).statusCode, 412)
  t.equal((await call(app, owner, 'PUT', childUrl, { name: 'Benny', dateOfBirth: '2021-01-01', sex: 'male' }, { 'if-match': '"1"' })).statusCode, 200)
  t.equal((await call(app, owner, 'DELETE', childUrl, undefined, { 'if-match': '"1"' })).statusCode, 412)
  const familyId = child.json().familyId
  const family = await call(app, owner, 'GET', `/api/families/${familyId}`)
  t.equal(family.headers.etag, `"${family.json().version}"`)
  t.equal((await call(app, owner, 'PATCH', `/api/families/${familyId}`, { name: 'X' }, { 'if-match': `"${family.json().version - 1}"` })).statusCode, 412)
  t.equal((await call(app, owner, 'PATCH', `/api/families/${familyId}`, { name: 'X' }, { 'if-match': `"${family.json().version}"` })).statusCode, 200)
  const [{ n }] = await app.sql`select count(*)::int as n from changes where op = 'updated' and kind = 'visit'`
  t.equal(n, 4, 'the refused writes recorded nothing: only the four PUTs that went through')
})

t.test('ETags change with every change a read could show, stay the same otherwise, and 304 only after the scope', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const stranger = await register(app)
  const child = await call(app, owner, 'POST', '/api/children', { name: 'Eli', dateOfBirth: '2021-01-01', sex: 'female' })
  const c = child.json().id
  const sibling = await call(app, owner, 'POST', '/api/children', { name: 'Fay', dateOfBirth: '2020-01-01', sex: 'female' })
  const list = `/api/children/${c}/measurements`
  const tag = async (url: string): Promise<string> => {
    const res = await call(app, owner, 'GET', url)
    t.equal(res.statusCode, 200, `${url} answers`)
    return res.headers.etag as string
  }

  const first = await tag(list)
  t.match(first, /^"[0-9a-f]+\.\d+\.[A-Za-z0-9_-]{22}"$/, 'a list answers an ETag: the clock of what it shows and a hash of its URL')
  t.equal(await tag(list), first, 'the same while nothing changes')
  t.not(await tag(`${list}?limit=5`), first, 'another query of the list is another answer')
  const growth = await tag(`/api/children/${c}/growth`)
  const childTag = await tag(`/api/children/${c}`)
  const family = await tag('/api/children')

  await call(app, owner, 'POST', `/api/children/${sibling.json().id}/measurements`, { measuredAt: '2021-01-01', weightKg: 9 })
  t.equal(await tag(list), first, 'a change of another child does not move it')
  t.equal(await tag(`/api/children/${c}/growth`), growth)
  t.not(await tag('/api/children'), family, 'a family-wide read moves with any change of the family')

  const created = await call(app, owner, 'POST', list, { measuredAt: '2022-01-01', weightKg: 10 })
  const second = await tag(list)
  t.not(second, first, 'a new measurement moves it')
  t.not(await tag(`/api/children/${c}/growth`), growth, 'and the growth')
  t.equal(await tag(`/api/children/${c}`), childTag, 'not the child\'s own version')
  await call(app, owner, 'POST', `/api/children/${c}/visits`, { date: '2022-01-02', type: 'sick' })
  t.not(await tag(list), second, 'any change of the child moves the child\'s reads')

  const conditional = { 'if-none-match': await tag(list) }
  const notModified = await call(app, owner, 'GET', list, undefined, conditional)
  t.equal(notModified.statusCode, 304, 'If-None-Match with the current ETag is a 304')
  t.equal(notModified.body, '', 'with no body')
  t.equal(notModified.headers.etag, conditional['if-none-match'])
  t.equal((await call(app, stranger, 'GET', list, undefined, conditional)).statusCode, 403, 'a stranger with a valid ETag gets 403')
  t.equal((await call(app, null, 'GET', list, undefined, conditional)).statusCode, 401, 'no token: 401')
  const item = `/api/measurements/${created.json().id}`
  t.equal((await call(app, owner, 'GET', item, undefined, { 'if-none-match': '"1"' })).statusCode, 304, 'an item with its version: 304')
  t.equal((await call(app, owner, 'GET', item, undefined, { 'if-none-match': 'W/"1"' })).statusCode, 304, 'a weak tag matches a read')
  t.equal((await call(app, owner, 'GET', item, undefined, { 'if-none-match': '"2"' })).statusCode, 200, 'another version: 200')

  const session = await login(app, owner.user.email)
  t.equal((await call(app, session, 'GET', item, undefined, { 'if-none-match': '"1"' })).statusCode, 304)
  t.equal((await call(app, session, 'POST', '/api/auth/logout', {})).statusCode, 204)
  t.equal((await call(app, session, 'GET', item, undefined, { 'if-none-match': '"1"' })).statusCode, 401, 'a revoked session gets 401, not 304')

  for (const url of [`/api/children/${c}/visits`, `/api/visits?childId=${c}`, `/api/children/${c}/attachments`, `/api/children/${c}/export`,
    `/api/children/${c}/export?format=fhir`, `/api/families/${child.json().familyId}/members`, `/api/families/${child.json().familyId}`,
    '/api/families', `/api/families/${child.json().familyId}/changes`, `/api/measurements/${created.json().id}/history`]) {
    const etag = await tag(url)
    t.equal((await call(app, owner, 'GET', url, undefined, { 'if-none-match': etag })).statusCode, 304, `${url}: 304 with its ETag`)
  }
})

t.test('the feed read in pages while 8 writers commit yields every change once, in commit order', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const familyId = (await call(app, owner, 'GET', '/api/me')).json().families[0].id
  const children = await Promise.all(['A', 'B'].map(name => call(app, owner, 'POST', '/api/children', { name, dateOfBirth: '2020-01-01', sex: 'other' })))
  const start = (await changesSince(app, owner, familyId, null)).cursor
  const shared = (await call(app, owner, 'POST', `/api/children/${children[0].json().id}/measurements`, { measuredAt: '2021-01-01', weightKg: 5 })).json().id

  let writing = true
  const written: number[] = []
  const writers = Array.from({ length: 8 }, async (_, w) => {
    let n = 0
    while (writing) {
      n += 1
      const childId = children[w % 2].json().id
      const res = n % 3 === 0
        ? await call(app, owner, 'PUT', `/api/measurements/${shared}`, { measuredAt: '2021-01-01', weightKg: 5 + (n % 50) / 10 })
        : await call(app, owner, 'POST', `/api/children/${childId}/measurements`, { measuredAt: '2021-02-01', heightCm: 60 + w })
      if (res.statusCode === 201 || res.statusCode === 200) written.push(res.json().id)
      else throw new Error(`a write answered ${res.statusCode}`)
    }
  })
  const seen: any[] = []
  let cursor = start
  const deadline = Date.now() + 3000
  while (Date.now() < deadline) {
    const res = await call(app, owner, 'GET', `/api/families/${familyId}/changes?since=${cursor}&limit=7`)
    seen.push(...res.json().data)
    cursor = res.json().meta.nextCursor
  }
  writing = false
  await Promise.all(writers)
  const rest = await changesSince(app, owner, familyId, cursor)
  seen.push(...rest.data)

  const all = await changesSince(app, owner, familyId, start)
  t.ok(written.length > 50, `${written.length} writes committed`)
  t.equal(seen.length, all.data.length, 'the pages hold as many changes as the log')
  t.same(seen.map(change => change.cursor), all.data.map(change => change.cursor), 'the same changes, each once, in the same order')
  t.equal(seen.filter(change => change.kind === 'measurement').length, written.length + 1, 'one change for each acknowledged write')
  const versions = seen.filter(change => change.id === shared).map(change => change.version)
  t.same(versions, versions.map((_, i) => i + 1), 'one record\'s versions come in order, none missing')
})

t.test('history lists each change of an item with its fields before and after, also once the item is deleted', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app, { name: 'Hana' })
  const member = await register(app)
  const familyId = (await call(app, owner, 'GET', '/api/me')).json().families[0].id
  const stranger = await register(app)
  const child = await call(app, owner, 'POST', '/api/children', { name: 'Ida', dateOfBirth: '2021-01-01', sex: 'female' })
  const created = await call(app, owner, 'POST', `/api/children/${child.json().id}/illnesses`, { startDate: '2022-03-01', diagnosis: 'Flu', temperatureC: 39.2 })
  const url = `/api/illnesses/${created.json().id}`
  await call(app, owner, 'PUT', url, { startDate: '2022-03-01', endDate: '2022-03-06', diagnosis: 'Flu', temperatureC: 38.5 })
  await call(app, owner, 'DELETE', url)

  await join(app, owner, familyId, member, 'viewer')
  const history = await call(app, member, 'GET', `${url}/history`)
  t.equal(history.statusCode, 200, 'any member reads it, the item deleted or not')
  const user = { id: owner.user.id, name: 'Hana' }
  t.same(history.json().meta, { total: 3, limit: 50, offset: 0 })
  const [deleted, updated, first] = history.json().data
  t.match(deleted, { version: 2, op: 'deleted', user })
  t.same(deleted.fields.diagnosis, { from: 'Flu', to: null }, 'a deletion takes every field to null')
  t.match(updated, { version: 2, op: 'updated', user })
  t.same(updated.fields, {
    endDate: { from: null, to: '2022-03-06' },
    temperatureC: { from: 39.2, to: 38.5 },
    status: { from: 'current', to: 'finished' }
  }, 'an update lists only the fields it changed, before and after')
  t.match(first, { version: 1, op: 'created', user })
  t.same(first.fields.diagnosis, { from: null, to: 'Flu' }, 'a creation comes from null')
  t.notOk('id' in first.fields || 'version' in first.fields || 'updatedAt' in first.fields, 'bookkeeping fields are left out')

  t.equal((await call(app, stranger, 'GET', `${url}/history`)).statusCode, 403, 'a stranger: 403')
  t.equal((await call(app, owner, 'GET', '/api/illnesses/999999/history')).statusCode, 404, 'an id that never existed: 404')
  t.equal((await call(app, owner, 'GET', `/api/measurements/${created.json().id}/history`)).statusCode, 404, 'of another kind: 404')
  const childHistory = await call(app, owner, 'GET', `/api/children/${child.json().id}/history`)
  t.same(childHistory.json().data.map((entry: any) => entry.op), ['created'])
  const familyHistory = await call(app, owner, 'GET', `/api/families/${familyId}/history?limit=2`)
  t.equal(familyHistory.json().data[0].op, 'updated', 'a family has its history too')
  t.same(familyHistory.json().data[0].fields, { memberCount: { from: 1, to: 2 } })
})

t.test('the feed refuses cursors it did not hand out, of another family, or from before a restore', async t => {
  const app = await build(t, { env: OPEN })
  const a = await register(app)
  const b = await register(app)
  const fa = (await call(app, a, 'GET', '/api/me')).json().families[0].id
  const fb = (await call(app, b, 'GET', '/api/me')).json().families[0].id
  const ours = (await changesSince(app, a, fa, null)).cursor
  const theirs = (await changesSince(app, b, fb, null)).cursor
  const bad = async (since: string, message: RegExp) => {
    const res = await call(app, a, 'GET', `/api/families/${fa}/changes?since=${encodeURIComponent(since)}`)
    t.equal(res.statusCode, 400, `${since}: 400`)
    t.equal(res.json().details.issues[0].path, '/query/since')
    t.match(res.json().details.issues[0].message, message)
  }
  await bad('nonsense', /not a cursor/)
  await bad(Buffer.from(`${fa}.zz.1`).toString('base64url'), /not a cursor/)
  await bad(theirs, /another family/)
  t.equal((await call(app, a, 'GET', `/api/families/${fb}/changes`)).statusCode, 403, 'another family\'s feed: 403')
  t.equal((await call(app, a, 'GET', `/api/families/${fa}/changes?limit=0`)).statusCode, 400)
  t.equal((await call(app, a, 'GET', `/api/families/${fa}/changes?limit=1001`)).statusCode, 400)
  await app.sql`update family_clocks set epoch = 'abcdef0123' where family_id = ${fa}`
  await bad(ours, /before the family's data was restored/)
  const empty = await call(app, a, 'GET', `/api/families/${fa}/changes`)
  t.equal(empty.json().data.length, 3, 'without since, from the first change')
  t.equal(empty.json().meta.hasMore, false)
})

t.test('a database from before change tracking gets a change for every row it holds', async t => {
  const { sql } = await testDatabase(t, { empty: true })
  const dir = tempDir(t, 'child-health-migrations-')
  copyFileSync(path.join(MIGRATIONS_DIR, '00000000-000000-base-schema.sql'), path.join(dir, '00000000-000000-base-schema.sql'))
  await migrate(sql, { dir })
  await sql`insert into users (email, password_hash, name) values ('old@example.org', 'x', 'Old')`
  await sql`insert into families (name) values ('Old family')`
  await sql`insert into family_members (family_id, user_id, role) values (1, 1, 'owner')`
  await sql`insert into children (family_id, name, date_of_birth, sex) values (1, 'Ola', '2020-01-01', 'female')`
  await sql`insert into visits (child_id, date, type) values (1, '2021-01-01', 'wellness')`
  await sql`insert into measurements (child_id, visit_id, measured_at, weight_kg) values (1, 1, '2021-01-01', 9.25)`

  await migrate(sql)
  const changes = await sql<{ seq: number, kind: string, op: string, version: number, record: Record<string, unknown> }[]>`
    select seq, kind, op, version, record from changes where family_id = 1 order by seq
  `
  t.same(changes.map(change => `${change.seq} ${change.kind} ${change.op} v${change.version}`), [
    '1 family created v1', '2 member created v1', '3 child created v1', '4 visit created v1', '5 measurement created v1'
  ], 'each existing row is a change `created`, parents first')
  t.equal(changes[4].record.weight_kg, 9.25)
  t.same(await sql`select version from family_clocks where family_id = 1`, [{ version: 1 }])
  t.same(await sql`select family_changes(1)::int as n, child_changes(1)::int as c`, [{ n: 5, c: 3 }], 'their counts are kept')
  await sql`insert into measurements (child_id, measured_at, height_cm) values (1, '2021-02-01', 80)`
  const [last] = await sql`select seq, kind, xid::text <> '0' as ours from changes where family_id = 1 order by xid desc, seq desc limit 1`
  t.same(last, { seq: 6, kind: 'measurement', ours: true }, 'and the numbers go on after them, in a transaction of their own')
})
