import t from 'tap'
import type { Sql } from '../db/client'
import { orderBy } from '../sql/list'
import { activeSessionCount } from '../sql/admin'
import { listBody } from '../sql/records'
import { measurementKind } from '../kinds/measurements'
import { visitKind } from '../kinds/visits'
import { bearer, build, familyOf, register } from './helper'

/**
 * What a request reads must not grow with the data around it: a list's page
 * reads the rows it returns through the index of its order, and its total is
 * read from the child's kept tally, never by reading every row of the child;
 * a filtered list counts what it selects from an index.
 */

const MANY = 20_000

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  'Scan Direction'?: string
  'Actual Rows': number
  'Actual Loops': number
  'Heap Fetches'?: number
  Plans?: PlanNode[]
}

function nodes (plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)]
}

/**
 * Tables as on a server that has run a while: statistics and the visibility
 * map set. A vacuum that meets a snapshot older than the rows (the service's
 * own background reads) leaves pages unmarked: it runs again, as autovacuum would.
 */
async function settled (sql: Sql, tables: string[]): Promise<void> {
  for (let round = 0; round < 20; round++) {
    await sql`vacuum (analyze) ${sql.unsafe(tables.join(', '))}`
    const [{ unmarked }] = await sql`select sum(relpages - relallvisible)::int as unmarked from pg_class where relname in ${sql(tables)}`
    if (unmarked === 0) return
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

t.test('the first page of a child with many rows reads through the index only what it returns, and its total is kept', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const headers = bearer(owner.accessToken)
  const created = await app.inject({ method: 'POST', url: '/api/children', headers, payload: { name: 'Daily', dateOfBirth: '2000-01-01', sex: 'female', familyId } })
  const childId = created.json().id as number
  const other = await app.inject({ method: 'POST', url: '/api/children', headers, payload: { name: 'Other', dateOfBirth: '2000-01-01', sex: 'male', familyId } })
  // Seeded in bulk, the change log paused as a restore pauses it, before any
  // read; as a restore loads its backup's tallies, the seed adds its rows' own.
  const { sql } = app.db
  await sql.begin(async tx => {
    await tx`select set_config('app.tracking', 'off', true)`
    await tx`insert into measurements (child_id, measured_at, weight_kg) select ${childId}, date '2000-01-01' + i, 3 + (i % 500) * 0.01 from generate_series(1, ${MANY}) i`
    // The child's rows are a tenth of the table, as one child among many.
    await tx`insert into measurements (child_id, measured_at, weight_kg) select ${other.json().id as number}, date '1900-01-01' + i / 10, 4 from generate_series(1, ${9 * MANY}) i`
    await tx`insert into visits (child_id, date, type) select ${childId}, date '2000-01-01' + i, (array['wellness', 'sick', 'dental'])[1 + i % 3] from generate_series(1, ${MANY}) i`
    await tx`
      insert into tallies (family_id, child_id, kind, delta)
      values (${familyId}, ${childId}, 'measurements', ${MANY}), (${familyId}, ${other.json().id as number}, 'measurements', ${9 * MANY}),
             (${familyId}, ${childId}, 'visits', ${MANY})
    `
  })
  await settled(sql, ['measurements', 'visits'])

  const res = await app.inject({ method: 'GET', url: `/api/children/${childId}/measurements?limit=100`, headers })
  t.equal(res.statusCode, 200)
  const page = res.json()
  t.equal(page.data.length, 100)
  t.equal(page.meta.total, MANY, 'the total counts every measurement of the child')
  t.equal(page.data[0].measuredAt > page.data[99].measuredAt, true, 'newest first')

  const explain = async (body: ReturnType<typeof listBody>): Promise<PlanNode[]> => {
    const [row] = await sql`explain (analyze, format json) select ${body} as body`
    return nodes((row['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan)
  }

  const measured = await explain(listBody(sql, measurementKind, childId, [], orderBy(sql, measurementKind.defaultSort, measurementKind.sorts), 100, 0))
  const scans = measured.filter(node => node['Relation Name'] === 'measurements')
  t.equal(scans.length, 1, 'the measurements are read once, for the page')
  const [pageScan] = scans.filter(node => node['Node Type'] === 'Index Scan')
  t.ok(pageScan !== undefined, `the page is an index scan (${scans.map(node => node['Node Type']).join(', ')})`)
  t.equal(pageScan['Index Name'], 'measurements_child_measured_idx', 'through the index of its order')
  t.equal(pageScan['Scan Direction'], 'Backward', 'read backwards for newest first')
  t.equal(pageScan['Actual Rows'] * pageScan['Actual Loops'], 100, 'reading the 100 rows it returns and no more')
  // What child_rows reads (an aggregate: the function is not inlined in a plan).
  const measuredTotal = await explain(sql`(select coalesce(sum(delta), 0) from tallies where child_id = ${childId} and kind = 'measurements')`)
  const tally = measuredTotal.find(node => node['Relation Name'] === 'tallies')
  t.ok(tally !== undefined && tally['Node Type'] !== 'Seq Scan', `the total reads the child's tally by index (${tally?.['Node Type']})`)
  t.ok((tally?.['Actual Rows'] ?? Infinity) <= 16, 'a few rows of deltas, not a row a measurement')
  t.notOk(measured.some(node => node['Node Type'] === 'Sort' || node['Node Type'] === 'WindowAgg' || node['Node Type'].startsWith('Bitmap')), 'no sort, no window, no bitmap scan')

  const typeFilter = [sql`and type = ${'wellness'}`]
  const visits = await explain(listBody(sql, visitKind, childId, typeFilter, orderBy(sql, '-date', visitKind.sorts), 100, 0))
  const visitPage = visits.find(node => node['Relation Name'] === 'visits' && node['Node Type'] === 'Index Scan')
  t.ok(visitPage !== undefined, 'the visits of one type are read by an index scan')
  t.equal(visitPage?.['Index Name'], 'visits_child_type_idx', 'through the index of the child, the type and the date')
  t.equal((visitPage?.['Actual Rows'] ?? 0) * (visitPage?.['Actual Loops'] ?? 0), 100, 'reading only the rows it returns')
  const [countScan] = visits.filter(node => node['Relation Name'] === 'visits' && node !== visitPage)
  t.equal(countScan?.['Node Type'], 'Index Only Scan', 'the filtered total counts from the index alone')
  const wellness = Math.floor(MANY / 3)
  t.equal(countScan?.['Actual Rows'], wellness, 'one entry a visit of that type of the child')
  const filtered = await app.inject({ method: 'GET', url: `/api/children/${childId}/visits?type=wellness&limit=5`, headers })
  t.equal(filtered.json().meta.total, wellness, 'and answers their number')
})

t.test('the statistics count the active sessions from their index alone, personal access tokens left out', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const owner = await register(app)
  const { sql } = app.db
  // Many sign-ins of a server that has run a while: half of them ended, a tenth of them tokens.
  await sql`
    insert into sessions (user_id, expires_at, revoked_at, token_hash, token_name, token_scope)
    select ${owner.user.id}, now() + case when i % 4 = 0 then interval '-1 day' else interval '30 days' end,
           case when i % 4 = 1 then now() end,
           case when i % 10 = 2 then 'hash-' || i end, case when i % 10 = 2 then 'token ' || i end, case when i % 10 = 2 then 'read' end
    from generate_series(1, ${MANY}) i
  `
  await settled(sql, ['sessions'])
  const [row] = await sql`explain (analyze, format json) ${activeSessionCount(sql)}`
  const scans = nodes((row['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan).filter(node => node['Relation Name'] === 'sessions')
  t.same(scans.map(node => [node['Node Type'], node['Index Name']]), [['Index Only Scan', 'sessions_active_idx']], 'one scan of the index of active sessions')
  const [{ count }] = await sql`select (${activeSessionCount(sql)})::int as count`
  // Of every four, one expired and one revoked; of the other two in ten, the tokens; and the owner's own sign-in.
  t.equal(count, 1 + MANY / 2 - MANY / 20)
  const admin = await app.inject({ method: 'GET', url: '/api/admin/stats', headers: bearer(owner.accessToken) })
  t.equal(admin.statusCode, 200, 'the first user is the administrator')
  t.equal(admin.json().activeSessions, count, 'and the statistics say as many')
})
