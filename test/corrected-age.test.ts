import t, { type Test } from 'tap'
import { copyFileSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { migrate, migrationFiles, MIGRATIONS_DIR } from '../db/migrate'
import { issuesOf } from './fhir-validate'
import { build, call, growthDir, register, tempDir, testDatabase, type App, type Pair } from './helper'

// The WHO tables are read at run time from the run's table folder; no value of theirs is written here.
const TABLES = growthDir()
const OPEN = { REGISTRATION: 'open' }

interface Lms { l: number, m: number, s: number }

/** A row of a WHO 2006 table by day, as the file has it, read by hand. */
function row (file: string, sex: 'female' | 'male', day: number): Lms {
  const code = sex === 'male' ? '1' : '2'
  const lines = readFileSync(path.join(TABLES, file), 'utf8').split(/\r?\n/).slice(1).map(line => line.split('\t'))
  const cells = lines.find(cells => cells[0] === code && Number(cells[1]) === day)
  if (cells === undefined) throw new Error(`no row ${sex} ${day} in ${file}`)
  return { l: Number(cells[2]), m: Number(cells[3]), s: Number(cells[4]) }
}

const zOf = (x: number, { l, m, s }: Lms): number => ((x / m) ** l - 1) / (l * s)
const round2 = (x: number): number => Math.round(x * 100) / 100

/** Φ, by the series of erf, precise far beyond the percentile's one decimal. */
function phi (z: number): number {
  const x = z / Math.SQRT2
  let term = x
  let sum = x
  for (let n = 1; n < 200; n++) {
    term *= -x * x / n
    sum += term / (2 * n + 1)
  }
  return 0.5 * (1 + 2 / Math.sqrt(Math.PI) * sum)
}

const weightForAge = (sex: 'female' | 'male', day: number, kg: number) => zOf(kg, row('weianthro.txt', sex, day))
const lengthForAge = (sex: 'female' | 'male', day: number, cm: number) => zOf(cm, row('lenanthro.txt', sex, day))

function dayAfter (date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * 86400000).toISOString().slice(0, 10)
}

const BIRTH = '2022-01-10'

interface Setup { app: App, owner: Pair }

async function setup (t: Test): Promise<Setup> {
  const app = await build(t, { env: OPEN })
  return { app, owner: await register(app) }
}

/** A child with measurements on the given days of age; answers its id and its growth points by day. */
async function measured (
  { app, owner }: Setup, child: Record<string, unknown>, days: Array<[number, Record<string, number>]>
): Promise<{ id: number, points: Map<number, any>, growth: any }> {
  const res = await call(app, owner, 'POST', '/api/children', { name: 'Noor', dateOfBirth: BIRTH, sex: 'female', ...child })
  if (res.statusCode !== 201) throw new Error(`create answered ${res.statusCode}: ${res.body}`)
  const id = res.json().id
  for (const [day, values] of days) {
    const made = await call(app, owner, 'POST', `/api/children/${id}/measurements`, { measuredAt: dayAfter(BIRTH, day), ...values })
    if (made.statusCode !== 201) throw new Error(`measurement answered ${made.statusCode}: ${made.body}`)
  }
  const growth = (await call(app, owner, 'GET', `/api/children/${id}/growth`)).json()
  return { id, growth, points: new Map(growth.points.map((point: any) => [point.ageDays, point])) }
}

t.test('a girl born at 30 weeks is scored at her corrected age until 24 months', async t => {
  const s = await setup(t)
  const { growth, points } = await measured(s, { gestationalAgeAtBirthWeeks: 30, gestationalAgeAtBirthDays: 0 }, [
    [183, { weightKg: 5.6, heightCm: 60.1 }],
    [730, { weightKg: 10.4 }],
    [731, { weightKg: 10.4 }],
    [761, { weightKg: 10.6, heightCm: 84.2 }]
  ])
  t.equal(growth.gestationalAgeAtBirthWeeks, 30)
  t.equal(growth.gestationalAgeAtBirthDays, 0)

  const early = points.get(183)
  t.equal(early.ageDays, 183, 'ageDays stays chronological')
  t.equal(early.ageMonths, round2(183 / 30.4375))
  t.equal(early.correctedAgeDays, 113, '183 − (280 − 210)')
  t.equal(early.scoredAt, 'corrected')
  const z = weightForAge('female', 113, 5.6)
  t.equal(early.weightForAge.z, round2(z), 'weight-for-age from WHO\'s L, M and S at day 113')
  t.ok(Math.abs(early.weightForAge.percentile - 100 * phi(z)) <= 0.05 + 1e-9, 'its percentile is Φ of that z')
  t.not(early.weightForAge.z, round2(weightForAge('female', 183, 5.6)), 'not the score at 183 days')
  t.equal(early.heightForAge.z, round2(lengthForAge('female', 113, 60.1)), 'length-for-age at day 113 too')

  t.match(points.get(730), { correctedAgeDays: 660, scoredAt: 'corrected' }, 'day 730 is under 24 months (730.5 days)')
  t.equal(points.get(730).weightForAge.z, round2(weightForAge('female', 660, 10.4)))
  t.match(points.get(731), { correctedAgeDays: null, scoredAt: 'chronological' }, 'from day 731 the age is chronological')
  t.equal(points.get(731).weightForAge.z, round2(weightForAge('female', 731, 10.4)))

  const late = points.get(761)
  t.match(late, { ageDays: 761, correctedAgeDays: null, scoredAt: 'chronological' }, 'at 25 months she is scored at her age')
  t.equal(late.weightForAge.z, round2(weightForAge('female', 761, 10.6)))
})

t.test('only a child born before 37 weeks is corrected, by the days it was born early', async t => {
  const s = await setup(t)
  const at100 = [[100, { weightKg: 5 }]] as Array<[number, Record<string, number>]>
  const cases: Array<[string, Record<string, unknown>, number | null]> = [
    ['no gestational age', {}, null],
    ['a gestational age of null', { gestationalAgeAtBirthWeeks: null, gestationalAgeAtBirthDays: null }, null],
    ['39 weeks, at term', { gestationalAgeAtBirthWeeks: 39 }, null],
    ['37 weeks 0 days', { gestationalAgeAtBirthWeeks: 37, gestationalAgeAtBirthDays: 0 }, null],
    ['36 weeks 6 days, by 22 days', { gestationalAgeAtBirthWeeks: 36, gestationalAgeAtBirthDays: 6 }, 78],
    ['30 weeks 4 days, by 66 days', { gestationalAgeAtBirthWeeks: 30, gestationalAgeAtBirthDays: 4 }, 34],
    ['32 weeks without days, by 56 days', { gestationalAgeAtBirthWeeks: 32 }, 44]
  ]
  for (const [name, child, corrected] of cases) {
    const point = (await measured(s, child, at100)).points.get(100)
    t.equal(point.correctedAgeDays, corrected, name)
    t.equal(point.scoredAt, corrected === null ? 'chronological' : 'corrected', name)
    t.equal(point.weightForAge.z, round2(weightForAge('female', corrected ?? 100, 5)), `${name}: scored at day ${corrected ?? 100}`)
  }
})

t.test('before the term date nothing is scored; at the term date the scores start', async t => {
  const s = await setup(t)
  const { points } = await measured(s, { gestationalAgeAtBirthWeeks: 30 }, [
    [20, { weightKg: 1.6, heightCm: 45, headCircumferenceCm: 30 }],
    [70, { weightKg: 3, heightCm: 49 }]
  ])
  const before = points.get(20)
  t.match(before, { ageDays: 20, correctedAgeDays: -50, scoredAt: 'corrected', bmi: round2(1.6 / 0.45 ** 2) })
  t.same([before.weightForAge, before.heightForAge, before.headCircumferenceForAge, before.bmiForAge, before.weightForHeight],
    [null, null, null, null, null], 'every score is null')
  const term = points.get(70)
  t.match(term, { correctedAgeDays: 0, scoredAt: 'corrected' })
  t.equal(term.weightForAge.z, round2(weightForAge('female', 0, 3)), 'day 0 of the references')
})

const bad: Array<[string, Record<string, unknown>, string]> = [
  ['21 weeks', { gestationalAgeAtBirthWeeks: 21 }, '/body/gestationalAgeAtBirthWeeks'],
  ['45 weeks', { gestationalAgeAtBirthWeeks: 45 }, '/body/gestationalAgeAtBirthWeeks'],
  ['a fraction of a week', { gestationalAgeAtBirthWeeks: 30.5 }, '/body/gestationalAgeAtBirthWeeks'],
  ['weeks as a string', { gestationalAgeAtBirthWeeks: '30' }, '/body/gestationalAgeAtBirthWeeks'],
  ['7 days', { gestationalAgeAtBirthWeeks: 30, gestationalAgeAtBirthDays: 7 }, '/body/gestationalAgeAtBirthDays'],
  ['−1 days', { gestationalAgeAtBirthWeeks: 30, gestationalAgeAtBirthDays: -1 }, '/body/gestationalAgeAtBirthDays'],
  ['days without weeks', { gestationalAgeAtBirthDays: 3 }, '/body/gestationalAgeAtBirthDays'],
  ['days with weeks null', { gestationalAgeAtBirthWeeks: null, gestationalAgeAtBirthDays: 3 }, '/body/gestationalAgeAtBirthDays']
]

t.test('a gestational age out of range, of the wrong type or days without weeks is a 400, and nothing is written', async t => {
  const { app, owner } = await setup(t)
  const base = { name: 'Noor', dateOfBirth: BIRTH, sex: 'female' }
  // Without a gestational age, so that a PATCH of days alone leaves days without weeks.
  const child = (await call(app, owner, 'POST', '/api/children', base)).json()
  t.equal(child.version, 1)
  for (const [name, fields, at] of bad) {
    for (const [method, url] of [['POST', '/api/children'], ['PUT', `/api/children/${child.id}`], ['PATCH', `/api/children/${child.id}`]]) {
      const res = await call(app, owner, method, url, method === 'PATCH' ? fields : { ...base, ...fields })
      t.equal(res.statusCode, 400, `${method} ${name}`)
      t.equal(res.json().code, 'VALIDATION_ERROR')
      t.ok(res.json().details.issues.some((issue: { path: string }) => issue.path === at), `${method} ${name}: ${at}`)
    }
  }
  const list = (await call(app, owner, 'GET', '/api/children')).json()
  t.equal(list.meta.total, 1, 'no child was created')
  t.match((await call(app, owner, 'GET', `/api/children/${child.id}`)).json(), { version: 1, gestationalAgeAtBirthWeeks: null, gestationalAgeAtBirthDays: null }, 'nor changed')
  const [row] = await app.sql`select count(*)::int as n from changes where kind = 'child'`
  t.equal(row.n, 1, 'and no change recorded but the creation')
  const edge = await call(app, owner, 'POST', '/api/children', { ...base, gestationalAgeAtBirthWeeks: 44, gestationalAgeAtBirthDays: 6 })
  t.equal(edge.statusCode, 201, '44 weeks 6 days is the longest')
  const shortest = await call(app, owner, 'POST', '/api/children', { ...base, gestationalAgeAtBirthWeeks: 22, gestationalAgeAtBirthDays: 0 })
  t.equal(shortest.statusCode, 201, '22 weeks 0 days the shortest')
})

t.test('PUT, PATCH and every answer of a child carry the gestational age', async t => {
  const { app, owner } = await setup(t)
  const base = { name: 'Noor', dateOfBirth: BIRTH, sex: 'female' }
  const plain = await call(app, owner, 'POST', '/api/children', base)
  t.match(plain.json(), { gestationalAgeAtBirthWeeks: null, gestationalAgeAtBirthDays: null }, 'present and null when unknown')
  const id = plain.json().id
  const url = `/api/children/${id}`

  const set = await call(app, owner, 'PATCH', url, { gestationalAgeAtBirthWeeks: 31, gestationalAgeAtBirthDays: 5 })
  t.equal(set.statusCode, 200)
  t.match(set.json(), { gestationalAgeAtBirthWeeks: 31, gestationalAgeAtBirthDays: 5, version: 2 })
  t.match((await call(app, owner, 'PATCH', url, { name: 'Noor B.' })).json(), { gestationalAgeAtBirthWeeks: 31, gestationalAgeAtBirthDays: 5 }, 'omitted is kept')
  t.match((await call(app, owner, 'PATCH', url, { gestationalAgeAtBirthDays: 2 })).json(), { gestationalAgeAtBirthWeeks: 31, gestationalAgeAtBirthDays: 2 }, 'days alone, with the weeks kept')
  const orphan = await call(app, owner, 'PATCH', url, { gestationalAgeAtBirthWeeks: null })
  t.equal(orphan.statusCode, 400, 'clearing the weeks would leave the days alone')
  t.same(orphan.json().details.issues.map((issue: { path: string }) => issue.path), ['/body/gestationalAgeAtBirthDays'])
  t.match((await call(app, owner, 'PATCH', url, { gestationalAgeAtBirthDays: null })).json(), { gestationalAgeAtBirthWeeks: 31, gestationalAgeAtBirthDays: null }, 'null clears the days')
  t.match((await call(app, owner, 'PATCH', url, { gestationalAgeAtBirthWeeks: null })).json(), { gestationalAgeAtBirthWeeks: null, gestationalAgeAtBirthDays: null }, 'and then the weeks')

  t.match((await call(app, owner, 'PUT', url, { ...base, gestationalAgeAtBirthWeeks: 28, gestationalAgeAtBirthDays: 3 })).json(), { gestationalAgeAtBirthWeeks: 28, gestationalAgeAtBirthDays: 3 })
  t.match((await call(app, owner, 'GET', url)).json(), { gestationalAgeAtBirthWeeks: 28, gestationalAgeAtBirthDays: 3 })
  t.match((await call(app, owner, 'GET', '/api/children')).json().data[0], { gestationalAgeAtBirthWeeks: 28, gestationalAgeAtBirthDays: 3 })
  const [stored] = await app.sql`select gestational_age_weeks, gestational_age_days from children where id = ${id}`
  t.same(stored, { gestational_age_weeks: 28, gestational_age_days: 3 }, 'stored as numbers')

  const familyId = plain.json().familyId
  const changes = (await call(app, owner, 'GET', `/api/families/${familyId}/changes`)).json().data.filter((change: any) => change.kind === 'child')
  t.match(changes.at(-1).record, { id, gestationalAgeAtBirthWeeks: 28, gestationalAgeAtBirthDays: 3 }, 'the changes feed records it')
  t.match(changes[0].record, { gestationalAgeAtBirthWeeks: null, gestationalAgeAtBirthDays: null })
  const history = (await call(app, owner, 'GET', `${url}/history`)).json().data
  t.same(history[0].fields.gestationalAgeAtBirthWeeks, { from: null, to: 28 }, 'the history names the change')
  t.same(history[0].fields.gestationalAgeAtBirthDays, { from: null, to: 3 })

  t.match((await call(app, owner, 'PUT', url, base)).json(), { gestationalAgeAtBirthWeeks: null, gestationalAgeAtBirthDays: null }, 'PUT without them clears them')

  const json = (await call(app, owner, 'GET', `/api/children/${id}/export?format=json`)).json()
  t.match(json.child, { gestationalAgeAtBirthWeeks: null, gestationalAgeAtBirthDays: null }, 'the JSON export carries them')
})

t.test('a changed gestational age changes the growth answer and its ETag', async t => {
  const { app, owner } = await setup(t)
  const { id } = await measured({ app, owner }, { gestationalAgeAtBirthWeeks: 39 }, [[183, { weightKg: 5.6 }]])
  const url = `/api/children/${id}/growth`
  const first = await call(app, owner, 'GET', url)
  const etag = first.headers.etag as string
  t.equal(first.json().points[0].scoredAt, 'chronological')
  t.equal((await call(app, owner, 'GET', url, undefined, { 'if-none-match': etag })).statusCode, 304, 'unchanged: 304')

  t.equal((await call(app, owner, 'PATCH', `/api/children/${id}`, { gestationalAgeAtBirthWeeks: 30 })).statusCode, 200)
  const second = await call(app, owner, 'GET', url, undefined, { 'if-none-match': etag })
  t.equal(second.statusCode, 200, 'the old ETag no longer matches')
  t.not(second.headers.etag, etag)
  t.match(second.json().points[0], { correctedAgeDays: 113, scoredAt: 'corrected' })
  t.equal(second.json().points[0].weightForAge.z, round2(weightForAge('female', 113, 5.6)))

  const exported = (await call(app, owner, 'GET', `/api/children/${id}/export?format=json`)).json()
  t.match(exported.growth.points[0], { correctedAgeDays: 113, scoredAt: 'corrected' }, 'the export\'s growth scores the same way')
  t.equal(exported.growth.gestationalAgeAtBirthWeeks, 30)
})

t.test('the FHIR export records the gestational age at birth as an Observation', async t => {
  const { app, owner } = await setup(t)
  const preterm = (await call(app, owner, 'POST', '/api/children', { name: 'Noor', dateOfBirth: BIRTH, sex: 'female', gestationalAgeAtBirthWeeks: 30, gestationalAgeAtBirthDays: 4 })).json()
  await call(app, owner, 'POST', `/api/children/${preterm.id}/measurements`, { measuredAt: dayAfter(BIRTH, 40), weightKg: 2.1 })
  const bundle = (await call(app, owner, 'GET', `/api/children/${preterm.id}/export?format=fhir`)).json()
  t.same(issuesOf(bundle), [], 'the bundle validates')
  const patient = bundle.entry.find((entry: any) => entry.resource.resourceType === 'Patient')
  const observations = bundle.entry.filter((entry: any) => entry.resource.code?.coding?.[0]?.code === '76516-4')
  t.equal(observations.length, 1, 'one Observation of gestational age')
  const observation = observations[0].resource
  t.same(issuesOf(observation), [], 'the Observation validates')
  t.match(observation, {
    resourceType: 'Observation',
    status: 'final',
    code: { coding: [{ system: 'http://loinc.org', code: '76516-4', display: 'Gestational age at birth' }] },
    subject: { reference: patient.fullUrl, type: 'Patient' },
    effectiveDateTime: BIRTH,
    valueQuantity: { value: 30.57, unit: 'wk', system: 'http://unitsofmeasure.org', code: 'wk' }
  })
  t.equal(bundle.entry[1].resource.id, observation.id, 'right after the Patient')

  const term = (await call(app, owner, 'POST', '/api/children', { name: 'Ila', dateOfBirth: BIRTH, sex: 'female' })).json()
  const plain = (await call(app, owner, 'GET', `/api/children/${term.id}/export?format=fhir`)).json()
  t.equal(plain.entry.filter((entry: any) => entry.resource.code?.coding?.[0]?.code === '76516-4').length, 0, 'none when it is unknown')
  await call(app, owner, 'PATCH', `/api/children/${term.id}`, { gestationalAgeAtBirthWeeks: 40 })
  const atTerm = (await call(app, owner, 'GET', `/api/children/${term.id}/export?format=fhir`)).json()
  t.match(atTerm.entry[1].resource, { valueQuantity: { value: 40, code: 'wk' } }, 'whole weeks without days')
  t.same(issuesOf(atTerm), [])
})

t.test('the migration keeps existing children, of unknown gestational age, and the database holds the rules', async t => {
  const { sql } = await testDatabase(t, { empty: true })
  const MINE = '20261124-161000-gestational-age.sql'
  const dir = tempDir(t)
  const earlier = (await migrationFiles()).filter(name => name < MINE)
  for (const name of earlier) copyFileSync(path.join(MIGRATIONS_DIR, name), path.join(dir, name))
  await migrate(sql, { dir })
  const [family] = await sql`insert into families (name) values ('Old') returning id`
  const [child] = await sql`insert into children (family_id, name, date_of_birth, sex) values (${family.id}, 'Kim', '2020-01-01', 'male') returning id`

  copyFileSync(path.join(MIGRATIONS_DIR, MINE), path.join(dir, MINE))
  t.same(await migrate(sql, { dir }), [MINE])
  const [row] = await sql`select gestational_age_weeks, gestational_age_days, version from children where id = ${child.id}`
  t.same(row, { gestational_age_weeks: null, gestational_age_days: null, version: 1 }, 'unknown, and not a change of the child')

  const refused = async (weeks: number | null, days: number | null): Promise<string | undefined> => {
    try {
      await sql`update children set gestational_age_weeks = ${weeks}, gestational_age_days = ${days} where id = ${child.id}`
      return undefined
    } catch (error) {
      return (error as { code?: string }).code
    }
  }
  t.equal(await refused(null, 3), '23514', 'days without weeks')
  t.equal(await refused(21, null), '23514', '21 weeks')
  t.equal(await refused(45, 0), '23514', '45 weeks')
  t.equal(await refused(30, 7), '23514', '7 days')
  t.equal(await refused(44, 6), undefined, '44 weeks 6 days')
  t.equal(await refused(22, null), undefined, '22 weeks')
})
