import t, { type Test } from 'tap'
import { build, call, familyOf, register, type App, type Pair } from './helper'
import { exported, importArchive, richFamily } from './import-helpers'

// A list's meta.total is kept as its rows are written, not counted when it
// is read: it must stay the number of rows through every way of writing them.

const OPEN = { REGISTRATION: 'open' }
const LISTS: Array<[string, string]> = [
  ['measurements', 'measurements'], ['visits', 'visits'], ['medical-events', 'medical_events'],
  ['illnesses', 'illnesses'], ['attachments', 'attachments']
]

async function total (app: App, pair: Pair, url: string): Promise<number> {
  const res = await call(app, pair, 'GET', url)
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`)
  return res.json().meta.total
}

/** Every list of a child: its total as answered, and its rows as counted. */
async function checkChild (t: Test, app: App & { db: { sql: App['sql'] } }, pair: Pair, childId: number): Promise<void> {
  for (const [path, table] of LISTS) {
    const [{ n }] = await app.db.sql.unsafe(`select count(*)::int as n from ${table} where child_id = $1`, [childId])
    t.equal(await total(app, pair, `/api/children/${childId}/${path}`), n, `${path} of child ${childId}: ${n}`)
    // A filtered list counts what it selects.
    if (path === 'measurements') {
      const [{ m }] = await app.db.sql`select count(*)::int as m from measurements where child_id = ${childId} and measured_at >= '2024-02-01'`
      t.equal(await total(app, pair, `/api/children/${childId}/measurements?from=2024-02-01`), m, 'a filtered list counts its rows')
    }
  }
}

async function checkFamily (t: Test, app: App & { db: { sql: App['sql'] } }, pair: Pair, familyId: number): Promise<void> {
  const [{ n }] = await app.db.sql`select count(*)::int as n from children where family_id = ${familyId}`
  t.equal(await total(app, pair, `/api/children?familyId=${familyId}`), n, `children of family ${familyId}: ${n}`)
  const [{ all }] = await app.db.sql`
    select count(*)::int as all from children where family_id in (select family_id from family_members where user_id = ${pair.user.id})
  `
  t.equal(await total(app, pair, '/api/children'), all, 'children of all the user\'s families')
}

async function child (app: App, pair: Pair, name: string, familyId?: number): Promise<number> {
  const res = await call(app, pair, 'POST', '/api/children', { name, dateOfBirth: '2023-01-01', sex: 'male', ...(familyId === undefined ? {} : { familyId }) })
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json().id
}

t.test('totals follow concurrent creates and deletes, a child\'s deletion and a CSV import', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const first = await child(app, owner, 'Ada')
  const second = await child(app, owner, 'Ben')
  const created = await Promise.all(Array.from({ length: 40 }, (_, i) => call(app, owner, 'POST', `/api/children/${i % 2 === 0 ? first : second}/measurements`, {
    measuredAt: `2024-0${1 + (i % 3)}-1${i % 10}`, weightKg: 10 + i / 10
  })))
  t.ok(created.every(res => res.statusCode === 201), 'every create answered 201')
  await Promise.all(Array.from({ length: 12 }, (_, i) => call(app, owner, 'POST', `/api/children/${first}/visits`, { date: '2024-01-02', type: i % 2 === 0 ? 'wellness' : 'sick', doctorName: 'Dr. Lee' })))
  // Deletes run beside creates.
  const doomed = created.slice(0, 16).map(res => res.json().id)
  const mixed = await Promise.all([
    ...doomed.map(id => call(app, owner, 'DELETE', `/api/measurements/${id}`)),
    ...Array.from({ length: 8 }, () => call(app, owner, 'POST', `/api/children/${second}/measurements`, { measuredAt: '2024-02-20', weightKg: 11 }))
  ])
  t.ok(mixed.every(res => res.statusCode === 204 || res.statusCode === 201), 'every delete and create went through')
  await checkChild(t, app, owner, first)
  await checkChild(t, app, owner, second)

  const csv = ['measuredAt,weightKg', ...Array.from({ length: 300 }, (_, i) => `2024-03-${String(1 + (i % 28)).padStart(2, '0')},${(12 + i / 1000).toFixed(3)}`)].join('\n')
  const dry = await call(app, owner, 'POST', `/api/children/${first}/measurements/import?dryRun=true`, csv, { 'content-type': 'text/csv' })
  t.equal(dry.statusCode, 200, dry.body)
  const wet = await call(app, owner, 'POST', `/api/children/${first}/measurements/import`, csv, { 'content-type': 'text/csv' })
  t.equal(wet.statusCode, 201, wet.body)
  await checkChild(t, app, owner, first)

  const third = await child(app, owner, 'Cy')
  await checkFamily(t, app, owner, familyId)
  t.equal((await call(app, owner, 'DELETE', `/api/children/${first}`)).statusCode, 204)
  await checkFamily(t, app, owner, familyId)
  await checkChild(t, app, owner, second)
  const [{ left }] = await app.db.sql`select count(*)::int as left from tallies where child_id = ${first} and kind <> 'changes'`
  t.equal(left, 0, 'a deleted child\'s totals go with it')
  // The family's ETag still moves: the deleted child's changes still count in the family's.
  const [{ kept, counted }] = await app.db.sql`select family_changes(${familyId})::int as kept, (select count(*)::int from changes where family_id = ${familyId}) as counted`
  t.equal(kept, counted, 'the family\'s count of changes follows its log')
  await checkChild(t, app, owner, third)
})

t.test('totals of an imported family are its rows; a deleted family leaves no totals', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const familyId = await richFamily(app, owner)
  const archive = await exported(app, owner, familyId)
  const res = await importArchive(app, owner, archive)
  t.equal(res.statusCode, 201, res.body)
  const imported = res.json().family.id
  const children = (await call(app, owner, 'GET', `/api/children?familyId=${imported}`)).json().data
  t.ok(children.length > 0)
  for (const { id } of children) await checkChild(t, app, owner, id)
  await checkFamily(t, app, owner, imported)

  await app.db.sql.begin(async tx => {
    await tx`select begin_change(null, null)`
    await tx`delete from children where family_id = ${imported}`
    await tx`delete from families where id = ${imported}`
  })
  const [{ left }] = await app.db.sql`select count(*)::int as left from tallies where family_id = ${imported}`
  t.equal(left, 0, 'the family\'s tallies went with it')
  await checkFamily(t, app, owner, familyId)
})

t.test('recount_tallies repairs the totals after rows written with change tracking off', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const first = await child(app, owner, 'Dee')
  await app.db.sql.begin(async tx => {
    await tx`select set_config('app.tracking', 'off', true)`
    await tx`insert into measurements (child_id, measured_at, weight_kg) select ${first}, date '2024-01-01' + i, 12 from generate_series(1, 50) i`
  })
  const [{ kept }] = await app.db.sql`select child_rows(${first}, 'measurements')::int as kept`
  t.equal(kept, 0, 'rows written untracked are not counted')
  const [{ before }] = await app.db.sql`select family_changes(${familyId})::int as before`
  await app.db.sql`select recount_tallies()`
  await checkChild(t, app, owner, first)
  await checkFamily(t, app, owner, familyId)
  const [{ after }] = await app.db.sql`select family_changes(${familyId})::int as after`
  t.equal(after, before, 'the count of changes stays what the log holds')
})

t.test('folding a key\'s tallies keeps its totals and leaves one row, for a child\'s key and a family\'s', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const first = await child(app, owner, 'Eve')
  await child(app, owner, 'Fay')
  for (let i = 0; i < 30; i++) {
    const res = await call(app, owner, 'POST', `/api/children/${first}/measurements`, { measuredAt: '2024-03-01', weightKg: 11 })
    t.equal(res.statusCode, 201)
  }
  const [{ gone }] = await app.db.sql`select id as gone from measurements where child_id = ${first} limit 1`
  t.equal((await call(app, owner, 'DELETE', `/api/measurements/${gone}`)).statusCode, 204)
  const sums = async () => (await app.db.sql`
    select kind, child_id as "childId", sum(delta)::int as delta, sum(changes)::int as changes, count(*)::int as rows
    from tallies where family_id = ${familyId} group by kind, child_id order by kind, child_id
  `).map(row => ({ ...row }))
  // The triggers fold one statement in 16 at random: a row of no delta makes sure there is more than one to fold.
  await app.db.sql`insert into tallies (family_id, child_id, kind, delta, changes) values (${familyId}, ${first}, 'measurements', 0, 0)`
  const before = await sums()
  // The triggers name a key's kind as the table's name, of type name: its collation must not keep the fold from its rows.
  await app.db.sql`select fold_tallies(${familyId}, ${first}, 'measurements'::name)`
  await app.db.sql`select fold_tallies(${familyId}, null, 'children'::name)`
  await app.db.sql`select fold_tallies(${familyId}, null, 'changes'::name)`
  const after = await sums()
  t.same(after.map(({ rows: _rows, ...sum }) => sum), before.map(({ rows: _rows, ...sum }) => sum), 'every key\'s sums are what they were')
  const rowsOf = (list: typeof after, kind: string, childId: number | null) => list.find(row => row.kind === kind && row.childId === childId)?.rows
  t.equal(rowsOf(after, 'measurements', first), 1, 'the child\'s measurements fold into one row')
  t.equal(rowsOf(after, 'children', null), 1, 'the family\'s children fold into one row')
  t.equal(rowsOf(after, 'changes', null), 1, 'the family\'s own changes fold into one row')
  t.ok((rowsOf(before, 'measurements', first) ?? 0) > 1, 'there was more than one row to fold')
  await checkChild(t, app, owner, first)
  await checkFamily(t, app, owner, familyId)
})
