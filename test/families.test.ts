import t from 'tap'
import { createHash } from 'node:crypto'
import { build, call, familyOf, household, join, login, register, type App } from './helper'

const OPEN = { REGISTRATION: 'open' }

/** An owner invites an e-mail and its holder accepts through the real routes. */
async function addChild (app: App, familyId: number): Promise<number> {
  const [row] = await app.sql`insert into children (family_id, name, date_of_birth, sex) values (${familyId}, 'Kid', '2022-01-01', 'other') returning id`
  return row.id
}

t.test('families: create, read, list, rename, delete', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app, { name: 'Ada' })
  const created = await call(app, ada, 'POST', '/api/families', { name: '  Lovelace  ' })
  t.equal(created.statusCode, 201)
  const family = created.json()
  t.equal(created.headers.location, `/api/families/${family.id}`)
  t.same(Object.keys(family).sort(), ['childCount', 'createdAt', 'id', 'memberCount', 'name', 'role', 'version'])
  t.match(family, { name: 'Lovelace', role: 'owner', memberCount: 1, childCount: 0 })

  const list = (await call(app, ada, 'GET', '/api/families')).json()
  t.same(list.meta, { total: 2, limit: 50, offset: 0 })
  t.same(list.data.map((f: any) => f.name), ["Ada's family", 'Lovelace'], 'sorted by id')
  const page = (await call(app, ada, 'GET', '/api/families?limit=1&offset=1')).json()
  t.same(page.data.map((f: any) => f.id), [family.id])
  t.same(page.meta, { total: 2, limit: 1, offset: 1 })
  t.same((await call(app, ada, 'GET', '/api/families?offset=5')).json(), { data: [], meta: { total: 2, limit: 50, offset: 5 } }, 'the families counted on their own past the end')
  t.equal((await call(app, ada, 'GET', '/api/families?limit=0')).statusCode, 400)
  t.equal((await call(app, ada, 'GET', '/api/families?offset=-1')).statusCode, 400)

  t.same((await call(app, ada, 'GET', `/api/families/${family.id}`)).json(), family)
  const renamed = await call(app, ada, 'PATCH', `/api/families/${family.id}`, { name: 'The Lovelaces' })
  t.equal(renamed.statusCode, 200)
  t.equal(renamed.json().name, 'The Lovelaces')
  t.equal((await call(app, ada, 'PATCH', `/api/families/${family.id}`, { name: '' })).statusCode, 400)
  t.equal((await call(app, ada, 'PATCH', `/api/families/${family.id}`, { name: 'x', extra: 1 })).statusCode, 400)
  t.equal((await call(app, ada, 'POST', '/api/families', {})).statusCode, 400)

  const childId = await addChild(app, family.id)
  t.equal((await call(app, ada, 'GET', `/api/families/${family.id}`)).json().childCount, 1)
  const full = await call(app, ada, 'DELETE', `/api/families/${family.id}`)
  t.equal(full.statusCode, 409)
  t.equal(full.json().code, 'FAMILY_NOT_EMPTY')
  await app.sql`delete from children where id = ${childId}`
  const deleted = await call(app, ada, 'DELETE', `/api/families/${family.id}`)
  t.equal(deleted.statusCode, 204)
  t.equal((await call(app, ada, 'GET', `/api/families/${family.id}`)).statusCode, 404)
  t.equal((await call(app, ada, 'GET', '/api/families/999999')).json().code, 'NOT_FOUND')
  t.equal((await call(app, ada, 'GET', '/api/families/0')).statusCode, 400)
})

/** The calls only a family's owner may make: on the family, on the member `userId`, and on its invites. */
function managing (family: number, userId: number, invite: { email: string, role: string }): Array<[string, string, unknown?]> {
  return [
    ['PATCH', `/api/families/${family}`, { name: 'x' }],
    ['DELETE', `/api/families/${family}`],
    ['PATCH', `/api/families/${family}/members/${userId}`, { role: 'viewer' }],
    ['DELETE', `/api/families/${family}/members/${userId}`],
    ['GET', `/api/families/${family}/invites`],
    ['POST', `/api/families/${family}/invites`, invite],
    ['DELETE', `/api/families/${family}/invites/1`]
  ]
}

t.test('two families see nothing of each other', async t => {
  const app = await build(t, { env: OPEN })
  const a = await register(app)
  const b = await register(app)
  const fa = familyOf(a)
  const fb = familyOf(b)
  t.same((await call(app, a, 'GET', '/api/families')).json().data.map((f: any) => f.id), [fa])
  t.same((await call(app, b, 'GET', '/api/families')).json().data.map((f: any) => f.id), [fb])
  const reads: Array<[string, string]> = [['GET', `/api/families/${fb}`], ['GET', `/api/families/${fb}/members`]]
  for (const [method, url, payload] of [...reads, ...managing(fb, b.user.id, { email: 'x@example.org', role: 'owner' })]) {
    const res = await call(app, a, method, url, payload)
    t.equal(res.statusCode, 403, `${method} ${url}`)
    t.same(res.json(), { error: 'Access denied', code: 'FORBIDDEN', details: {} })
  }
  t.equal((await call(app, b, 'GET', `/api/families/${fb}`)).json().name, b.user.name + "'s family", 'nothing changed')
})

t.test('roles: a viewer and a member read, only an owner manages', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const member = await register(app)
  const viewer = await register(app)
  const family = familyOf(owner)
  t.same(await join(app, owner, family, member, 'member'), { familyId: family, familyName: `${owner.user.name}'s family`, role: 'member' })
  await join(app, owner, family, viewer, 'viewer')

  for (const reader of [member, viewer]) {
    t.equal((await call(app, reader, 'GET', `/api/families/${family}`)).statusCode, 200)
    t.equal((await call(app, reader, 'GET', `/api/families/${family}/members`)).statusCode, 200)
    for (const [method, url, payload] of managing(family, owner.user.id, { email: 'y@example.org', role: 'member' })) {
      const res = await call(app, reader, method, url, payload)
      t.equal(res.statusCode, 403, `${reader === member ? 'member' : 'viewer'}: ${method} ${url}`)
      t.equal(res.json().error, 'Access denied')
    }
  }
  const malformed = await call(app, viewer, 'PATCH', `/api/families/${family}`, { name: 5 })
  t.equal(malformed.statusCode, 400, 'a malformed write is a 400 before the role is checked')

  const members = (await call(app, viewer, 'GET', `/api/families/${family}/members`)).json()
  t.same(members.meta, { total: 3, limit: 50, offset: 0 })
  const pastMembers = (await call(app, viewer, 'GET', `/api/families/${family}/members?offset=10`)).json()
  t.same(pastMembers, { data: [], meta: { total: 3, limit: 50, offset: 10 } }, 'the members counted on their own past the end')
  t.same(members.data.map((m: any) => [m.userId, m.role]), [[owner.user.id, 'owner'], [member.user.id, 'member'], [viewer.user.id, 'viewer']])
  t.same(Object.keys(members.data[0]).sort(), ['email', 'joinedAt', 'name', 'role', 'userId'])
})

t.test('members: roles, removal, leaving and the last owner', async t => {
  const app = await build(t, { env: OPEN })
  const { owner, familyId: family, member, viewer } = await household(app, { member: 'member', viewer: 'viewer' })

  const demoteSelf = await call(app, owner, 'PATCH', `/api/families/${family}/members/${owner.user.id}`, { role: 'member' })
  t.equal(demoteSelf.statusCode, 409)
  t.equal(demoteSelf.json().code, 'LAST_OWNER')
  const leave = await call(app, owner, 'DELETE', `/api/families/${family}/members/${owner.user.id}`)
  t.equal(leave.statusCode, 409, 'the last owner cannot leave')
  t.equal(leave.json().code, 'LAST_OWNER')

  const promoted = await call(app, owner, 'PATCH', `/api/families/${family}/members/${member.user.id}`, { role: 'owner' })
  t.equal(promoted.statusCode, 200)
  t.match(promoted.json(), { userId: member.user.id, role: 'owner' })
  t.equal((await call(app, owner, 'PATCH', `/api/families/${family}/members/${member.user.id}`, { role: 'boss' })).statusCode, 400)
  t.equal((await call(app, owner, 'PATCH', `/api/families/${family}/members/999999`, { role: 'member' })).statusCode, 404)

  const both = await Promise.all([
    call(app, owner, 'PATCH', `/api/families/${family}/members/${member.user.id}`, { role: 'member' }),
    call(app, member, 'PATCH', `/api/families/${family}/members/${owner.user.id}`, { role: 'member' })
  ])
  const codes = both.map(res => res.statusCode).sort()
  t.equal(codes[0], 200, 'one demotion passes')
  t.ok([403, 409].includes(codes[1]), 'the other is refused: its caller is no longer an owner, or would remove the last one')
  const [{ owners }] = await app.sql`select count(*) as owners from family_members where family_id = ${family} and role = 'owner'`
  t.equal(owners, 1)

  const [current] = await app.sql`select user_id from family_members where family_id = ${family} and role = 'owner'`
  const theOwner = current.user_id === owner.user.id ? owner : member

  const before = await call(app, viewer, 'GET', `/api/families/${family}`)
  t.equal(before.statusCode, 200)
  const removed = await call(app, theOwner, 'DELETE', `/api/families/${family}/members/${viewer.user.id}`)
  t.equal(removed.statusCode, 204)
  const after = await call(app, viewer, 'GET', `/api/families/${family}`)
  t.equal(after.statusCode, 403, 'a removed member is refused at once with an access token from before')

  const other = theOwner === owner ? member : owner
  const left = await call(app, other, 'DELETE', `/api/families/${family}/members/${other.user.id}`)
  t.equal(left.statusCode, 204, 'a member may leave')
  t.equal((await call(app, other, 'GET', `/api/families/${family}`)).statusCode, 403)
  t.equal((await call(app, theOwner, 'DELETE', `/api/families/${family}/members/${viewer.user.id}`)).statusCode, 404, 'no longer a member')
})

t.test('invites', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const bea = await register(app, { email: 'Bea@Example.org' })
  const cy = await register(app)
  const family = familyOf(owner)

  const created = await call(app, owner, 'POST', `/api/families/${family}/invites`, { email: 'bea@example.org', role: 'viewer' })
  t.equal(created.statusCode, 201)
  const invite = created.json()
  t.same(Object.keys(invite).sort(), ['createdAt', 'email', 'expiresAt', 'id', 'role', 'token'])
  t.ok(invite.token.length >= 40, 'a long random token')
  const days = (Date.parse(invite.expiresAt) - Date.parse(invite.createdAt)) / 86400000
  t.ok(Math.abs(days - 7) < 0.01, 'valid for 7 days')
  const [stored] = await app.sql`select token_hash from invites where id = ${invite.id}`
  t.equal(stored.token_hash, createHash('sha256').update(invite.token).digest('hex'), 'only its hash is stored')

  const list = (await call(app, owner, 'GET', `/api/families/${family}/invites`)).json()
  t.same(list.data.map((i: any) => i.id), [invite.id])
  t.notOk('token' in list.data[0], 'the token is shown only once')

  t.equal((await call(app, owner, 'POST', `/api/families/${family}/invites`, { email: 'bea@example.org', role: 'chief' })).statusCode, 400)
  t.equal((await call(app, owner, 'POST', `/api/families/${family}/invites`, { email: 'not an email', role: 'member' })).statusCode, 400)
  const self = await call(app, owner, 'POST', `/api/families/${family}/invites`, { email: owner.user.email.toUpperCase(), role: 'member' })
  t.equal(self.statusCode, 409)
  t.equal(self.json().code, 'ALREADY_MEMBER')

  const wrongUser = await call(app, cy, 'POST', '/api/invites/accept', { token: invite.token })
  t.equal(wrongUser.statusCode, 400, 'bound to its e-mail')
  t.same(wrongUser.json(), { error: 'The invite is not valid', code: 'INVITE_INVALID', details: {} })
  const unknown = await call(app, bea, 'POST', '/api/invites/accept', { token: 'not-a-token' })
  t.equal(unknown.json().code, 'INVITE_INVALID')
  t.equal((await app.inject({ method: 'POST', url: '/api/invites/accept', payload: { token: invite.token } })).statusCode, 401, 'needs a signed-in user')

  const replaced = (await call(app, owner, 'POST', `/api/families/${family}/invites`, { email: 'BEA@example.org', role: 'member' })).json()
  t.equal((await call(app, bea, 'POST', '/api/invites/accept', { token: invite.token })).json().code, 'INVITE_INVALID', 'a replaced invite is void')
  t.same((await call(app, owner, 'GET', `/api/families/${family}/invites`)).json().data.map((i: any) => i.id), [replaced.id])

  const accepted = await call(app, bea, 'POST', '/api/invites/accept', { token: replaced.token })
  t.equal(accepted.statusCode, 200, 'e-mails compare case-insensitively')
  t.same(accepted.json(), { familyId: family, familyName: `${owner.user.name}'s family`, role: 'member' })
  t.equal((await call(app, bea, 'POST', '/api/invites/accept', { token: replaced.token })).json().code, 'INVITE_INVALID', 'single use')
  t.same((await call(app, owner, 'GET', `/api/families/${family}/invites`)).json().data, [], 'a used invite is no longer open')

  const toMember = await call(app, owner, 'POST', `/api/families/${family}/invites`, { email: 'bea@example.org', role: 'owner' })
  t.equal(toMember.json().code, 'ALREADY_MEMBER')

  const revocable = (await call(app, owner, 'POST', `/api/families/${family}/invites`, { email: cy.user.email, role: 'member' })).json()
  t.equal((await call(app, owner, 'DELETE', `/api/families/${family}/invites/${revocable.id}`)).statusCode, 204)
  t.equal((await call(app, cy, 'POST', '/api/invites/accept', { token: revocable.token })).json().code, 'INVITE_INVALID', 'a revoked invite')

  const expiring = (await call(app, owner, 'POST', `/api/families/${family}/invites`, { email: cy.user.email, role: 'member' })).json()
  await app.sql`update invites set expires_at = now() - interval '1 second' where id = ${expiring.id}`
  t.equal((await call(app, cy, 'POST', '/api/invites/accept', { token: expiring.token })).json().code, 'INVITE_INVALID', 'an expired invite')

  const otherFamily = familyOf(cy)
  const foreign = (await call(app, cy, 'POST', `/api/families/${otherFamily}/invites`, { email: 'z@example.org', role: 'member' })).json()
  const wrongFamily = await call(app, owner, 'DELETE', `/api/families/${family}/invites/${foreign.id}`)
  t.equal(wrongFamily.statusCode, 404, 'another family\'s invite is a 404')
  t.equal((await call(app, owner, 'DELETE', `/api/families/${family}/invites/999999`)).statusCode, 404)
})

t.test('accepting while already a member leaves the invite open', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const bea = await register(app)
  const family = familyOf(owner)
  const invite = (await call(app, owner, 'POST', `/api/families/${family}/invites`, { email: bea.user.email, role: 'member' })).json()
  await app.sql`insert into family_members (family_id, user_id, role) values (${family}, ${bea.user.id}, 'viewer')`
  const res = await call(app, bea, 'POST', '/api/invites/accept', { token: invite.token })
  t.equal(res.statusCode, 409)
  t.equal(res.json().code, 'ALREADY_MEMBER')
  const [row] = await app.sql`select used_at from invites where id = ${invite.id}`
  t.equal(row.used_at, null)
})

t.test('two accepts of one invite at once: exactly one succeeds', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const bea = await register(app)
  const beaAgain = await login(app, bea.user.email)
  const family = familyOf(owner)
  const invite = (await call(app, owner, 'POST', `/api/families/${family}/invites`, { email: bea.user.email, role: 'member' })).json()
  const results = await Promise.all([bea, beaAgain, bea, beaAgain].map(pair => call(app, pair, 'POST', '/api/invites/accept', { token: invite.token })))
  t.equal(results.filter(res => res.statusCode === 200).length, 1)
  t.ok(results.filter(res => res.statusCode !== 200).every(res => ['INVITE_INVALID', 'ALREADY_MEMBER'].includes(res.json().code)))
  const [{ n }] = await app.sql`select count(*) as n from family_members where family_id = ${family} and user_id = ${bea.user.id}`
  t.equal(n, 1)
})

t.test('accepting invites is rate limited before authentication', async t => {
  const app = await build(t, { env: { ...OPEN, AUTH_RATE_LIMIT_MAX: '2' } })
  const bea = await register(app)
  t.equal((await call(app, bea, 'POST', '/api/invites/accept', { token: 'x' })).statusCode, 400)
  t.equal((await app.inject({ method: 'POST', url: '/api/invites/accept', payload: { token: 'x' } })).statusCode, 401)
  const limited = await app.inject({ method: 'POST', url: '/api/invites/accept', payload: { token: 'x' } })
  t.equal(limited.statusCode, 429, 'even without a token')
  t.equal(limited.json().code, 'RATE_LIMITED')
})

t.test('an administrator gets no way into another family', async t => {
  const app = await build(t, { env: OPEN })
  const admin = await register(app)
  t.equal(admin.user.role, 'admin')
  const other = await register(app)
  const family = familyOf(other)
  for (const url of [`/api/families/${family}`, `/api/families/${family}/members`, `/api/families/${family}/invites`]) {
    t.equal((await call(app, admin, 'GET', url)).statusCode, 403, url)
  }
  t.notOk((await call(app, admin, 'GET', '/api/families')).json().data.some((f: any) => f.id === family))
})
