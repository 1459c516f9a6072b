import t, { type Test } from 'tap'
import { build, call, changesSince, familyOf, got, made, register, type App, type Pair } from './helper'

// Early flags worked out again only within the course's window after a change.

type Json = any

const HOUR = 3600_000
const BASE = Date.parse('2024-03-01T00:00:00Z')
const at = (hours: number): string => new Date(BASE + hours * HOUR).toISOString()

interface Rule { minIntervalHours: number, maxDosesPer24h: number | null }
interface Dose { id: number, givenAt: string }

/** The doses in the course's order: by givenAt, then by id. */
function ordered (doses: Dose[]): Dose[] {
  return [...doses].sort((a, b) => Date.parse(a.givenAt) - Date.parse(b.givenAt) || a.id - b.id)
}

/** The moment the next dose is allowed after the first `count` doses of `sorted`, in the course's order: the rule as the contract states it. */
function allowedAfter (sorted: Dose[], count: number, rule: Rule): number {
  const last = sorted[count - 1]
  const nth = rule.maxDosesPer24h === null ? undefined : sorted[count - rule.maxDosesPer24h]
  return Math.max(
    last === undefined ? -Infinity : Date.parse(last.givenAt) + rule.minIntervalHours * HOUR,
    nth === undefined ? -Infinity : Date.parse(nth.givenAt) + 24 * HOUR
  )
}

/** Every dose's early flag worked out from scratch. */
function referenceFlags (doses: Dose[], rule: Rule): Map<number, boolean> {
  const sorted = ordered(doses)
  return new Map(sorted.map((dose, i) => [dose.id, Date.parse(dose.givenAt) < allowedAfter(sorted, i, rule)]))
}

function nextAllowed (doses: Dose[], rule: Rule): string | null {
  return doses.length === 0 ? null : new Date(allowedAfter(ordered(doses), doses.length, rule)).toISOString()
}

async function setup (t: Test, rule: Rule) {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const child = await made(app, owner, '/api/children', { name: 'Kim Lee', dateOfBirth: '2020-01-01', sex: 'female', familyId })
  const course = await made(app, owner, `/api/children/${child.id}/medicine-courses`, { name: 'Ibuprofen', doseAmount: 5, doseUnit: 'ml', startDate: '2024-03-01', ...rule })
  return { app, owner, familyId, course, doses: `/api/medicine-courses/${course.id}/doses` }
}

async function listed (app: App, owner: Pair, url: string): Promise<Json[]> {
  const all: Json[] = []
  for (let offset = 0; ; offset += 100) {
    const page = await got(app, owner, `${url}?limit=100&offset=${offset}`)
    all.push(...page.data)
    if (all.length >= page.meta.total) return all
  }
}

/** Sets a dose's stored flag behind the service's back (change tracking off, as a restore writes): a probe of which doses a write works out again. */
async function plant (app: App, id: number, early: boolean): Promise<void> {
  await app.sql.begin(async tx => {
    await tx`select set_config('app.tracking', 'off', true)`
    await tx`update medicine_doses set early = ${early} where id = ${id}`
  })
}

/** The stored flags of a course's doses, read from the database: a probe changes no answer's ETag. */
async function flags (app: App, courseId: number): Promise<Map<number, boolean>> {
  const rows = await app.sql<Array<{ id: number, early: boolean }>>`select id, early from medicine_doses where course_id = ${courseId} order by given_at, id`
  return new Map(rows.map(row => [row.id, row.early]))
}

t.test('500 doses in one atomic batch, each earlier than the others: the flags, versions and changes of doses written one by one', async t => {
  const rule = { minIntervalHours: 4, maxDosesPer24h: 3 }
  const { app, owner, familyId, course, doses } = await setup(t, rule)
  const gaps = [1, 5, 2, 4, 3, 12, 1, 1, 24, 6, 4, 0.5, 20, 8]
  const times: number[] = []
  for (let i = 0, hours = 9000; i < 500; i++) times.push(hours -= gaps[i % gaps.length])
  const mark = await changesSince(app, owner, familyId, null)
  const res = await call(app, owner, 'POST', `/api/families/${familyId}/batch`, {
    atomic: true,
    operations: times.map(hours => ({ method: 'POST', path: doses, body: { givenAt: at(hours) } }))
  })
  t.equal(res.statusCode, 200, res.body.slice(0, 300))
  const results = res.json().results as Json[]
  t.ok(results.every(result => result.status === 201), 'every dose written')

  // The same doses written one by one, worked out from scratch after each.
  const written: Dose[] = []
  const flips = new Map<number, number>()
  let previous = new Map<number, boolean>()
  let moves = 0
  let next: string | null = null
  const firstFlags: boolean[] = []
  for (const result of results) {
    written.push({ id: result.body.id, givenAt: result.body.givenAt })
    const now = referenceFlags(written, rule)
    firstFlags.push(now.get(result.body.id) as boolean)
    for (const [id, early] of previous) if (now.get(id) !== early) flips.set(id, (flips.get(id) ?? 0) + 1)
    previous = now
    const moved = nextAllowed(written, rule)
    if (moved !== next) moves++
    next = moved
  }
  t.same(results.map(result => result.body.early), firstFlags, 'each dose answered the flag the doses before it gave it')
  const final = [...referenceFlags(written, rule).values()]
  t.ok(flips.size > 0 && final.includes(true) && final.includes(false), 'later doses became early, and some stayed on time')

  const stored = await listed(app, owner, doses)
  t.same(new Map(stored.map((dose: Json) => [dose.id, dose.early])), referenceFlags(written, rule), 'the stored flags are those worked out from scratch')
  t.same(stored.map((dose: Json) => [dose.id, dose.version]), ordered(written).map(dose => [dose.id, 1 + (flips.get(dose.id) ?? 0)]), 'a dose\'s version moved once a flip')
  t.equal((await got(app, owner, `/api/medicine-courses/${course.id}`)).nextDoseAllowedAt, next)

  const changes: Json[] = []
  for (let since = mark.next; ;) {
    const page = await changesSince(app, owner, familyId, since)
    changes.push(...page.data)
    if (page.data.length < 1000) break
    since = page.next
  }
  const count = (kind: string, op: string, id: number): number => changes.filter(change => change.kind === kind && change.op === op && change.id === id).length
  t.ok(written.every(dose => count('medicineDose', 'created', dose.id) === 1), 'a change for each dose created')
  t.same(written.map(dose => count('medicineDose', 'updated', dose.id)), written.map(dose => flips.get(dose.id) ?? 0), 'an updated change for each flip of its flag')
  t.equal(count('medicineCourse', 'updated', course.id), moves, 'an updated change of the course each time its next dose moved')
  t.equal(changes.length, 500 + [...flips.values()].reduce((a, b) => a + b, 0) + moves, 'and nothing else')
  const last = new Map(changes.filter(change => change.kind === 'medicineDose').map(change => [change.id, change.record]))
  t.same(stored.map((dose: Json) => last.get(dose.id)), stored, 'each dose\'s last change carries it as its GET answers')
})

t.test('a dose written at t works out the flags of the doses from t to t + the window, 24 hours with a daily limit, and no further', async t => {
  const rule = { minIntervalHours: 4, maxDosesPer24h: 3 }
  const { app, owner, course, doses } = await setup(t, rule)
  const all: Dose[] = []
  const give = async (hours: number): Promise<Json> => {
    const dose = await made(app, owner, doses, { givenAt: at(hours) })
    all.push({ id: dose.id, givenAt: dose.givenAt })
    return dose
  }
  await give(0)
  t.equal((await give(4)).early, false, 'exactly minIntervalHours after the last dose is not early')
  t.equal((await give(8)).early, false)
  t.equal((await give(24)).early, false, 'exactly 24 h after the oldest of three in 24 h is not early')
  t.equal((await give(28)).early, false, 'a dose exactly 24 h before no longer counts')
  t.equal((await give(31.5)).early, true, 'before the last + minIntervalHours is early')
  const inside = await give(123)
  const beyond = await give(124.5)
  t.same(await flags(app, course.id), referenceFlags(all, rule))

  // Probes: flags set wrong behind the service's back show which doses a write works out again.
  await plant(app, inside.id, true)
  await plant(app, beyond.id, false)
  await give(100)
  const after = await flags(app, course.id)
  t.equal(after.get(inside.id), false, 'a dose 23 h after the new one is worked out again')
  t.equal(after.get(beyond.id), false, 'a dose 24.5 h after it is not even read')
  await plant(app, beyond.id, true)
  t.same(await flags(app, course.id), referenceFlags(all, rule))

  const edge = await give(27.5)
  t.equal(edge.early, true, 'half an hour before both rules allow a dose is early')
  t.same(await flags(app, course.id), referenceFlags(all, rule), 'and the doses after it are worked out again: 28 and 31.5')
})

t.test('moving or deleting a dose works out both windows it touches; changing the rule works out all', async t => {
  const rule = { minIntervalHours: 6, maxDosesPer24h: null as number | null }
  const { app, owner, course, doses } = await setup(t, rule)
  const all: Dose[] = []
  for (const hours of [0, 5, 10, 16, 40, 44, 100, 104, 150]) {
    const dose = await made(app, owner, doses, { givenAt: at(hours) })
    all.push({ id: dose.id, givenAt: dose.givenAt })
  }
  const id = (hours: number): number => (all.find(dose => dose.givenAt === at(hours)) as Dose).id
  t.same(await flags(app, course.id), referenceFlags(all, rule))

  await plant(app, id(44), true)
  await plant(app, id(104), false)
  await plant(app, id(150), true)
  const moved = await call(app, owner, 'PATCH', `/api/medicine-doses/${id(40)}`, { givenAt: at(101) })
  t.equal(moved.statusCode, 200)
  t.equal(moved.json().early, true, 'the moved dose answers its flag at its new place')
  all[4].givenAt = at(101)
  let now = await flags(app, course.id)
  t.equal(now.get(id(44)), false, 'the dose it left, 4 h after its old place, is worked out again')
  t.equal(now.get(id(104)), true, 'the dose 3 h after its new place is worked out again')
  t.equal(now.get(id(150)), true, 'a dose 49 h after it is not read: without a daily limit the window is minIntervalHours')
  await plant(app, id(150), false)
  t.same(await flags(app, course.id), referenceFlags(all, rule))

  await plant(app, id(16), true)
  await plant(app, id(150), true)
  t.equal((await call(app, owner, 'DELETE', `/api/medicine-doses/${id(10)}`)).statusCode, 204)
  all.splice(2, 1)
  now = await flags(app, course.id)
  t.equal(now.get(id(16)), false, 'the dose 6 h after a deleted one is worked out again')
  t.equal(now.get(id(150)), true, 'one far after it is not')

  const daily = await call(app, owner, 'PATCH', `/api/medicine-courses/${course.id}`, { maxDosesPer24h: 2 })
  t.equal(daily.statusCode, 200)
  const withLimit = { minIntervalHours: 6, maxDosesPer24h: 2 }
  t.same(await flags(app, course.id), referenceFlags(all, withLimit), 'a new daily limit works out every flag, the far one too')
  t.equal(daily.json().nextDoseAllowedAt, nextAllowed(all, withLimit))
  await plant(app, id(0), true)
  const shorter = await call(app, owner, 'PATCH', `/api/medicine-courses/${course.id}`, { minIntervalHours: 3.5 })
  const last = { minIntervalHours: 3.5, maxDosesPer24h: 2 }
  t.same(await flags(app, course.id), referenceFlags(all, last), 'a new interval works out every flag, from the first dose on')
  t.equal(shorter.json().nextDoseAllowedAt, nextAllowed(all, last))
})
