import t, { type Test } from 'tap'
import { build, call, familyOf, join, PASSWORD, register, type App, type Pair } from './helper'

const INVALID = { error: 'The invite is not valid', code: 'INVITE_INVALID', details: {} }

/** An administrator, an owner who makes invites, and a second owner of the same family. */
async function setup (t: Test, env: Record<string, string> = { REGISTRATION: 'open' }) {
  const app = await build(t, { env })
  const admin = await register(app)
  const maker = await register(app)
  const family = familyOf(maker)
  const coOwner = await register(app)
  await join(app, maker, family, coOwner, 'owner')
  return { app, admin, maker, family, coOwner }
}

async function invite (app: App, owner: Pair, family: number, email: string, role = 'owner'): Promise<{ id: number, token: string }> {
  const res = await call(app, owner, 'POST', `/api/families/${family}/invites`, { email, role })
  if (res.statusCode !== 201) throw new Error(`invite answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

function registerWith (app: App, email: string, inviteToken: string) {
  return app.inject({ method: 'POST', url: '/api/auth/register', payload: { email, password: PASSWORD, name: 'Invited', inviteToken } })
}

async function usedAt (app: App, inviteId: number): Promise<Date | null> {
  const [row] = await app.sql`select used_at from invites where id = ${inviteId}`
  return row.used_at
}

/** Each way an invite's maker stops being an owner of the family, done through the real routes. */
const endings: Array<[string, (s: Awaited<ReturnType<typeof setup>>) => Promise<number>]> = [
  ['demoted to viewer by another owner', async ({ app, maker, family, coOwner }) =>
    (await call(app, coOwner, 'PATCH', `/api/families/${family}/members/${maker.user.id}`, { role: 'viewer' })).statusCode],
  ['demoted to member by another owner', async ({ app, maker, family, coOwner }) =>
    (await call(app, coOwner, 'PATCH', `/api/families/${family}/members/${maker.user.id}`, { role: 'member' })).statusCode],
  ['removed from the family by an administrator', async ({ app, admin, maker, family }) =>
    (await call(app, admin, 'DELETE', `/api/admin/families/${family}/members/${maker.user.id}`)).statusCode],
  ['removed from the family by another owner', async ({ app, maker, family, coOwner }) =>
    (await call(app, coOwner, 'DELETE', `/api/families/${family}/members/${maker.user.id}`)).statusCode],
  ['gone from the family by leaving it', async ({ app, maker, family }) =>
    (await call(app, maker, 'DELETE', `/api/families/${family}/members/${maker.user.id}`)).statusCode],
  ['deleted with their account by an administrator', async ({ app, admin, maker }) =>
    (await call(app, admin, 'DELETE', `/api/admin/users/${maker.user.id}`)).statusCode],
  ['disabled by an administrator', async ({ app, admin, maker }) =>
    (await call(app, admin, 'PATCH', `/api/admin/users/${maker.user.id}`, { disabled: true })).statusCode]
]

for (const [how, end] of endings) {
  t.test(`an invite whose maker was ${how} is not valid`, async t => {
    const s = await setup(t)
    const { app, family, maker, coOwner } = s
    const existing = await register(app)
    const forExisting = await invite(app, maker, family, existing.user.email)
    const forNew = await invite(app, maker, family, 'newcomer@example.org')
    const fromOther = await invite(app, coOwner, family, 'other@example.org', 'member')

    t.ok([200, 204].includes(await end(s)), 'the maker is no longer an owner')

    const accepted = await call(app, existing, 'POST', '/api/invites/accept', { token: forExisting.token })
    t.equal(accepted.statusCode, 400, 'accepting')
    t.same(accepted.json(), INVALID)
    const registered = await registerWith(app, 'newcomer@example.org', forNew.token)
    t.equal(registered.statusCode, 400, 'registering')
    t.same(registered.json(), INVALID)
    t.equal((await call(app, existing, 'GET', `/api/families/${family}`)).statusCode, 403, 'nobody joined')
    t.equal((await app.sql`select 1 from users where lower(email) = 'newcomer@example.org'`).length, 0, 'no account was made')
    t.equal(await usedAt(app, forExisting.id), null, 'the invites are not used up')
    t.equal(await usedAt(app, forNew.id), null)

    const other = await registerWith(app, 'other@example.org', fromOther.token)
    t.equal(other.statusCode, 201, 'an invite of an owner who still is one is valid')
    t.same((await call(app, coOwner, 'GET', `/api/families/${family}/members`)).json().data
      .filter((m: { email: string }) => m.email === 'other@example.org').map((m: { role: string }) => m.role), ['member'])
  })
}

t.test('an invite counts again while its maker is an owner again: the check is made when it is accepted', async t => {
  const { app, maker, family, coOwner } = await setup(t)
  const bea = await register(app)
  const made = await invite(app, maker, family, bea.user.email, 'member')
  await call(app, coOwner, 'PATCH', `/api/families/${family}/members/${maker.user.id}`, { role: 'viewer' })
  t.equal((await call(app, bea, 'POST', '/api/invites/accept', { token: made.token })).statusCode, 400)
  await call(app, coOwner, 'PATCH', `/api/families/${family}/members/${maker.user.id}`, { role: 'owner' })
  const accepted = await call(app, bea, 'POST', '/api/invites/accept', { token: made.token })
  t.equal(accepted.statusCode, 200)
  t.same(accepted.json(), { familyId: family, familyName: accepted.json().familyName, role: 'member' })
})

t.test('a demotion that commits while an acceptance waits for the family is seen by it', async t => {
  const { app, maker, family } = await setup(t)
  const bea = await register(app)
  const made = await invite(app, maker, family, bea.user.email, 'owner')

  let commit!: () => void
  const committing = new Promise<void>(resolve => { commit = resolve })
  let demoting!: () => void
  const demoted = new Promise<void>(resolve => { demoting = resolve })
  // A writer of the family's members, as every one does: the family's clock first, then the row.
  const demotion = app.sql.begin(async tx => {
    await tx`select begin_change(${family}::integer, null)`
    await tx`update family_members set role = 'viewer' where family_id = ${family} and user_id = ${maker.user.id}`
    demoting()
    await committing
  })
  await demoted
  const accepting = call(app, bea, 'POST', '/api/invites/accept', { token: made.token })
  // The acceptance found the invite valid, as the demotion is not committed, and now waits for the family's clock.
  const until = Date.now() + 10_000
  while ((await app.sql`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`).length === 0) {
    if (Date.now() > until) throw new Error('the acceptance never waited for the family')
    await new Promise(resolve => setTimeout(resolve, 10))
  }
  commit()
  await demotion
  const accepted = await accepting
  t.equal(accepted.statusCode, 400)
  t.same(accepted.json(), INVALID)
  t.equal(await usedAt(app, made.id), null)
})

t.test('an address taken up after the invite was made does not make the invite one\'s own', async t => {
  const { app, maker, family } = await setup(t)
  const mallory = await register(app)
  const made = await invite(app, maker, family, 'Kim@example.org')

  const patched = await call(app, mallory, 'PATCH', '/api/me', { email: 'kim@EXAMPLE.org' })
  t.equal(patched.statusCode, 200, 'the address was free')
  const taken = await call(app, mallory, 'POST', '/api/invites/accept', { token: made.token })
  t.equal(taken.statusCode, 400)
  t.same(taken.json(), INVALID)
  t.equal((await call(app, mallory, 'GET', `/api/families/${family}`)).statusCode, 403, 'not a member')
  t.equal(await usedAt(app, made.id), null, 'the invite stays open')

  t.equal((await call(app, mallory, 'PATCH', '/api/me', { email: mallory.user.email })).statusCode, 200, 'the address is given back')
  const kim = await registerWith(app, 'kim@example.org', made.token)
  t.equal(kim.statusCode, 201, 'whoever registers with the address may use the invite')
  t.equal((await call(app, kim.json(), 'GET', `/api/families/${family}`)).json().role, 'owner')
})

t.test('an address an administrator gives to a user after the invite does not count either', async t => {
  const { app, admin, maker, family } = await setup(t)
  const user = await register(app)
  const made = await invite(app, maker, family, 'lee@example.org', 'member')
  t.equal((await call(app, admin, 'PATCH', `/api/admin/users/${user.user.id}`, { email: 'lee@example.org' })).statusCode, 200)
  const res = await call(app, user, 'POST', '/api/invites/accept', { token: made.token })
  t.equal(res.statusCode, 400)
  t.same(res.json(), INVALID)

  const later = await invite(app, maker, family, 'lee@example.org', 'viewer')
  t.equal((await call(app, user, 'POST', '/api/invites/accept', { token: later.token })).statusCode, 200, 'an invite made once the user holds the address is theirs')
})

t.test('whoever held the address when the invite was made may accept it', async t => {
  const { app, maker, family } = await setup(t)
  const early = await register(app)
  t.equal((await call(app, early, 'PATCH', '/api/me', { email: 'early@example.org' })).statusCode, 200, 'an address changed before the invite')
  const neverChanged = await register(app)
  const forEarly = await invite(app, maker, family, 'early@example.org', 'member')
  const forNeverChanged = await invite(app, maker, family, neverChanged.user.email, 'viewer')

  t.equal((await call(app, early, 'PATCH', '/api/me', { email: 'EARLY@example.org' })).statusCode, 200, 'the same address in other letters')
  t.equal((await call(app, early, 'POST', '/api/invites/accept', { token: forEarly.token })).statusCode, 200)
  t.equal((await call(app, neverChanged, 'POST', '/api/invites/accept', { token: forNeverChanged.token })).statusCode, 200)
})

t.test('email_changed_at moves when the address changes, not with its case or other fields', async t => {
  const { app, admin } = await setup(t)
  const user = await register(app)
  const changedAt = async () => (await app.sql`select email_changed_at from users where id = ${user.user.id}`)[0].email_changed_at
  t.equal(await changedAt(), null, 'null for the address the account was made with')
  await call(app, user, 'PATCH', '/api/me', { name: 'Renamed' })
  await call(app, user, 'PATCH', '/api/me', { email: user.user.email.toUpperCase() })
  await call(app, admin, 'PATCH', `/api/admin/users/${user.user.id}`, { name: 'Again' })
  t.equal(await changedAt(), null, 'a name, or the case of the address')
  await call(app, user, 'PATCH', '/api/me', { email: 'moved@example.org' })
  const first = await changedAt()
  t.ok(first instanceof Date, 'set by PATCH /api/me')
  await call(app, admin, 'PATCH', `/api/admin/users/${user.user.id}`, { email: 'moved-again@example.org' })
  t.ok((await changedAt()) > first, 'and by an administrator')
})
