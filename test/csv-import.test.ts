import t, { type Test } from 'tap'
import { bearer, build, call, familyOf, join, members, register, type App, type Pair } from './helper'

const OPEN = { REGISTRATION: 'open' }
const BIRTH = '2015-03-15'
const HEADER = 'measuredAt,heightCm,weightKg,headCircumferenceCm,notes'

function importCsv (app: App, pair: Pair | null, childId: number, csv: string | Buffer, options: { query?: string, type?: string | null } = {}) {
  const type = options.type === undefined ? 'text/csv' : options.type
  return app.inject({
    method: 'POST',
    url: `/api/children/${childId}/measurements/import${options.query === undefined ? '' : `?${options.query}`}`,
    headers: { ...(pair === null ? {} : bearer(pair.accessToken)), ...(type === null ? {} : { 'content-type': type }) },
    payload: csv
  })
}

async function setup (t: Test) {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: BIRTH, sex: 'female' })).json()
  return { app, owner, child }
}

/** What the database holds of a child's measurements and the family's changes: equal before and after a refused import. */
async function stateOf (app: App, childId: number): Promise<{ measurements: number, changes: number }> {
  const [row] = await app.sql`
    select (select count(*)::int from measurements where child_id = ${childId}) as measurements,
           (select count(*)::int from changes c join children k on k.family_id = c.family_id where k.id = ${childId}) as changes
  `
  return row as { measurements: number, changes: number }
}

interface Expected {
  measuredAt: string
  heightCm: number | null
  weightKg: number | null
  headCircumferenceCm: number | null
  notes: string | null
}

/** A day after the child's birth. */
function day (n: number): string {
  return new Date(Date.parse(`${BIRTH}T00:00:00Z`) + n * 86400000).toISOString().slice(0, 10)
}

function manyRows (count: number): Expected[] {
  return Array.from({ length: count }, (_, i) => ({
    measuredAt: day(1 + (i % 3000)),
    heightCm: i % 7 === 0 ? null : (5000 + i % 1000) / 100,
    weightKg: (3000 + i % 997) / 1000,
    headCircumferenceCm: i % 3 === 0 ? (350 + i % 50) / 10 : null,
    notes: i % 5 === 0 ? `row ${i}` : null
  }))
}

function csvOf (rows: Expected[], newline = '\n'): string {
  const cell = (value: number | string | null) => value === null ? '' : String(value)
  return [HEADER, ...rows.map(row => [row.measuredAt, row.heightCm, row.weightKg, row.headCircumferenceCm, row.notes].map(cell).join(','))].join(newline) + newline
}

function pick (record: Record<string, unknown>): Expected {
  const { measuredAt, heightCm, weightKg, headCircumferenceCm, notes } = record as unknown as Expected
  return { measuredAt, heightCm, weightKg, headCircumferenceCm, notes }
}

t.test('5,000 lines import in one request, read back equal, each with one created change of the user', async t => {
  const { app, owner, child } = await setup(t)
  const rows = manyRows(5000)
  const started = Date.now()
  const res = await importCsv(app, owner, child.id, csvOf(rows))
  const took = Date.now() - started
  t.equal(res.statusCode, 201, res.body.slice(0, 300))
  t.ok(took < 5000, `imported in ${took} ms`)
  const body = res.json()
  t.equal(body.dryRun, false)
  t.equal(body.count, 5000)
  t.equal(body.data.length, 5000)
  t.same(body.data.map(pick), rows, 'the answer lists the rows in the order of the file')
  t.ok(body.data.every((m: any) => m.childId === child.id && m.version === 1 && m.visitId === null), 'as measurements of the child, version 1')
  const ids = body.data.map((m: any) => m.id as number)
  t.same(ids, [...ids].sort((a, b) => a - b), 'ids follow the file')

  const read: Record<string, unknown>[] = []
  for (let offset = 0; offset < 5000; offset += 1000) {
    const page = await call(app, owner, 'GET', `/api/children/${child.id}/measurements?sort=createdAt&limit=1000&offset=${offset}`)
    t.equal(page.statusCode, 200)
    t.equal(page.json().meta.total, 5000)
    read.push(...page.json().data)
  }
  t.same(read.map(pick), rows, 'GET reads back the same values, count and order')
  t.same(read.map(m => m.id), ids)
  t.same(body.data, read, 'the answer holds each measurement as GET answers it, every field')

  const [changes] = await app.sql`
    select count(*)::int as n, count(distinct record_id)::int as records,
           count(*) filter (where user_id = ${owner.user.id} and op = 'created' and kind = 'measurement')::int as created
    from changes where kind = 'measurement' and record_id in ${app.sql(ids)}
  `
  t.same(changes, { n: 5000, records: 5000, created: 5000 }, 'exactly one created change each, by the user')
  const feed = await call(app, owner, 'GET', `/api/families/${child.familyId}/changes?limit=1000`)
  t.ok(feed.json().data.some((change: any) => change.kind === 'measurement' && change.op === 'created' && change.userId === owner.user.id && change.id === ids[0]),
    'the changes feed shows them')
})

t.test('a bad line anywhere writes nothing and is named by its line and column', async t => {
  const { app, owner, child } = await setup(t)
  const rows = manyRows(300)
  const before = await stateOf(app, child.id)
  for (const index of [0, 150, 299]) {
    const bad = rows.map((row, i) => i === index ? { ...row, heightCm: 300 } : row)
    const res = await importCsv(app, owner, child.id, csvOf(bad))
    t.equal(res.statusCode, 400, `row ${index}`)
    t.same(res.json(), {
      error: 'The CSV file is not valid',
      code: 'VALIDATION_ERROR',
      details: { issues: [{ path: `/line/${index + 2}/heightCm`, message: 'must be <= 250' }] }
    })
    t.same(await stateOf(app, child.id), before, 'nothing written, no change recorded')
  }
})

t.test('the database refusing a row of a later batch writes nothing: the batches are one transaction', async t => {
  const { app, owner, child } = await setup(t)
  const before = await stateOf(app, child.id)
  // Row 3,501 goes in the fourth statement of 1,000; the three before it are already sent.
  await app.db.sql.unsafe(`
    create function refuse_row() returns trigger language plpgsql as $$
    begin
      if new.notes = 'refused' then raise exception 'refused'; end if;
      return new;
    end $$;
    create trigger refuse_row before insert on measurements for each row execute function refuse_row();
  `)
  const rows = manyRows(5000).map((row, i) => i === 3500 ? { ...row, notes: 'refused' } : row)
  const failed = await importCsv(app, owner, child.id, csvOf(rows))
  t.equal(failed.statusCode, 500, 'the import fails')
  t.equal(failed.json().code, 'INTERNAL_ERROR')
  t.same(await stateOf(app, child.id), before, 'nothing written, no change recorded')
  await app.db.sql.unsafe('drop trigger refuse_row on measurements')
  const after = await importCsv(app, owner, child.id, csvOf(manyRows(2500)))
  t.equal(after.statusCode, 201, 'the next import goes through')
  t.equal((await stateOf(app, child.id)).measurements, before.measurements + 2500)
})

t.test('every bad line is listed, each cell that is wrong', async t => {
  const { app, owner, child } = await setup(t)
  const csv = [
    HEADER,
    `${day(10)},60,5,,fine`,
    `${day(11)},300,5,,height out of range`,
    `${day(12)},60,5.1234,,too many decimals`,
    '2022-13-01,60,5,,no such month',
    `${day(14)},,,,no values at all`,
    `${day(15)},1e3,0x10,Infinity,not plain decimals`,
    `${day(16)},10,300,90,three out of range`,
    `${day(17)},60.125,5,,`,
    `${day(18)},"1.234,5","1 000",-3,thousands and spaces`,
    `${day(20)},60,5,,fine again`
  ].join('\n')
  const before = await stateOf(app, child.id)
  const res = await importCsv(app, owner, child.id, csv)
  t.equal(res.statusCode, 400)
  t.same(res.json().details.issues, [
    { path: '/line/3/heightCm', message: 'must be <= 250' },
    { path: '/line/4/weightKg', message: 'must have at most 3 decimal places' },
    { path: '/line/5/measuredAt', message: 'must be a date YYYY-MM-DD' },
    { path: '/line/6', message: 'must have at least one of heightCm, weightKg, headCircumferenceCm' },
    { path: '/line/7/heightCm', message: 'must be number,null' },
    { path: '/line/7/weightKg', message: 'must be number,null' },
    { path: '/line/7/headCircumferenceCm', message: 'must be number,null' },
    { path: '/line/8/heightCm', message: 'must be >= 20' },
    { path: '/line/8/weightKg', message: 'must be <= 250' },
    { path: '/line/8/headCircumferenceCm', message: 'must be <= 80' },
    { path: '/line/9/heightCm', message: 'must have at most 2 decimal places' },
    { path: '/line/10/heightCm', message: 'must be number,null' },
    { path: '/line/10/weightKg', message: 'must be number,null' },
    { path: '/line/10/headCircumferenceCm', message: 'must be >= 15' }
  ])
  t.same(await stateOf(app, child.id), before)
})

t.test('each row is checked as the body of a create: the same rules, worded the same', async t => {
  const { app, owner, child } = await setup(t)
  const cases: Array<[string, Record<string, unknown>]> = [
    [`${day(1)},19.99,,,`, { measuredAt: day(1), heightCm: 19.99 }],
    [`${day(1)},,0.1,,`, { measuredAt: day(1), weightKg: 0.1 }],
    [`${day(1)},,3.1415,,`, { measuredAt: day(1), weightKg: 3.1415 }],
    [`${day(1)},,,80.5,`, { measuredAt: day(1), headCircumferenceCm: 80.5 }],
    ['2022-02-30,50,,,', { measuredAt: '2022-02-30', heightCm: 50 }],
    ['22-01-01,50,,,', { measuredAt: '22-01-01', heightCm: 50 }],
    [`${day(1)},,,,only notes`, { measuredAt: day(1), notes: 'only notes' }],
    [`${day(1)},50,,,"${'x'.repeat(10001)}"`, { measuredAt: day(1), heightCm: 50, notes: 'x'.repeat(10001) }],
    [',50,,,', { heightCm: 50 }],
    ['2015-03-14,50,,,', { measuredAt: '2015-03-14', heightCm: 50 }],
    ['2999-01-01,50,,,', { measuredAt: '2999-01-01', heightCm: 50 }]
  ]
  for (const [line, body] of cases) {
    const json = await call(app, owner, 'POST', `/api/children/${child.id}/measurements`, body)
    t.equal(json.statusCode, 400, `POST refuses ${JSON.stringify(body).slice(0, 80)}`)
    const res = await importCsv(app, owner, child.id, `${HEADER}\n${line}\n`)
    t.equal(res.statusCode, 400, `the import refuses ${line.slice(0, 80)}`)
    const expected = json.json().details.issues.map((issue: { path: string, message: string }) => ({ ...issue, path: issue.path.replace(/^\/body/, '/line/2') }))
    t.same(res.json().details.issues, expected, `${line.slice(0, 40)}: the issues of POST, on line 2`)
  }
  t.equal((await stateOf(app, child.id)).measurements, 0)
})

t.test('dates before the birth or in the future are refused after the family scope, as on POST', async t => {
  const { app, owner, child } = await setup(t)
  const viewer = await register(app)
  await join(app, owner, familyOf(owner), viewer, 'viewer')
  const csv = `${HEADER}\n${day(1)},50,,,\n2015-03-14,50,,,\n2999-01-01,51,,,\n`
  const res = await importCsv(app, owner, child.id, csv)
  t.equal(res.statusCode, 400)
  t.same(res.json().details.issues, [
    { path: '/line/3/measuredAt', message: `must not be before the child's date of birth (${BIRTH})` },
    { path: '/line/4/measuredAt', message: 'must not be in the future' }
  ])
  t.equal((await importCsv(app, viewer, child.id, csv)).statusCode, 403, 'a viewer\'s well-formed file is a 403, as a POST is')
  const tomorrow = new Date(Date.now() + 86400000).toISOString().slice(0, 10)
  t.equal((await importCsv(app, owner, child.id, `${HEADER}\n${tomorrow},50,,,\n`)).statusCode, 201, 'a day of slack for time zones')
})

t.test('more than 100 problems: the first 100 are listed', async t => {
  const { app, owner, child } = await setup(t)
  const rows = manyRows(400).map(row => ({ ...row, heightCm: 10 }))
  const res = await importCsv(app, owner, child.id, csvOf(rows))
  t.equal(res.statusCode, 400)
  const body = res.json()
  t.equal(body.details.issues.length, 100)
  t.match(body.error, /first 100/)
  t.same(body.details.issues[0], { path: '/line/2/heightCm', message: 'must be >= 20' })
  t.same(body.details.issues[99], { path: '/line/101/heightCm', message: 'must be >= 20' })
  t.equal((await stateOf(app, child.id)).measurements, 0)
})

t.test('semicolons, decimal commas, a BOM and CRLF', async t => {
  const { app, owner, child } = await setup(t)
  const csv = '\uFEFFmeasuredAt;heightCm;weightKg;headCircumferenceCm;notes\r\n' +
    `${day(30)};52,5;3,456;36,25;with, a comma\r\n` +
    '\r\n' +
    `${day(31)};53;3,5;;"quoted; ""semi"""\r\n` +
    ' ; ; ; ; \r\n' +
    `${day(32)};54.75;;;\r\n`
  const res = await importCsv(app, owner, child.id, csv, { type: 'text/csv; charset=utf-8' })
  t.equal(res.statusCode, 201, res.body.slice(0, 300))
  t.same(res.json().data.map(pick), [
    { measuredAt: day(30), heightCm: 52.5, weightKg: 3.456, headCircumferenceCm: 36.25, notes: 'with, a comma' },
    { measuredAt: day(31), heightCm: 53, weightKg: 3.5, headCircumferenceCm: null, notes: 'quoted; "semi"' },
    { measuredAt: day(32), heightCm: 54.75, weightKg: null, headCircumferenceCm: null, notes: null }
  ])
  const bad = '\uFEFFmeasuredAt;heightCm\r\n\r\n' + `${day(30)};52,555\r\n`
  t.same((await importCsv(app, owner, child.id, bad)).json().details.issues, [{ path: '/line/3/heightCm', message: 'must have at most 2 decimal places' }], 'blank lines keep their numbers')
  const quotedComma = `measuredAt,weightKg\n${day(40)},"4,25"\n`
  t.same((await importCsv(app, owner, child.id, quotedComma)).json().data.map(pick), [{ measuredAt: day(40), heightCm: null, weightKg: 4.25, headCircumferenceCm: null, notes: null }],
    'a quoted decimal comma in a file of commas')
})

t.test('quoted cells with separators, quotes and line breaks; the lines after keep their numbers', async t => {
  const { app, owner, child } = await setup(t)
  const notes = 'first line, with a comma\nsecond "quoted" line\n\nafter a blank line'
  const csv = [
    HEADER,
    `${day(50)},60,,,"first line, with a comma\nsecond ""quoted"" line\n\nafter a blank line"`,
    `${day(51)},61,,,"  spaces around  "`,
    `${day(52)},300,,,`
  ].join('\n')
  const bad = await importCsv(app, owner, child.id, csv)
  t.equal(bad.statusCode, 400)
  t.same(bad.json().details.issues, [{ path: '/line/7/heightCm', message: 'must be <= 250' }], 'the line as a spreadsheet numbers it')
  const res = await importCsv(app, owner, child.id, csv.replace(',300,', ',62,'))
  t.equal(res.statusCode, 201)
  t.same(res.json().data.map((m: any) => m.notes), [notes, 'spaces around', null], 'notes kept whole, trimmed as a JSON body is')
})

t.test('columns in any order, some left out', async t => {
  const { app, owner, child } = await setup(t)
  const csv = `notes,weightKg,measuredAt\nhello,4.5,${day(60)}\n,5,${day(61)}\n`
  const res = await importCsv(app, owner, child.id, csv)
  t.equal(res.statusCode, 201)
  t.same(res.json().data.map(pick), [
    { measuredAt: day(60), heightCm: null, weightKg: 4.5, headCircumferenceCm: null, notes: 'hello' },
    { measuredAt: day(61), heightCm: null, weightKg: 5, headCircumferenceCm: null, notes: null }
  ])
})

t.test('a wrong header is named: an unknown, duplicated or missing column', async t => {
  const { app, owner, child } = await setup(t)
  const cases: Array<[string, Array<{ path: string, message: string }>]> = [
    [`measuredAt,heightCm,visitId\n${day(1)},50,1\n`, [{ path: '/header/visitId', message: 'is not allowed: the columns are measuredAt, heightCm, weightKg, headCircumferenceCm, notes' }]],
    [`measuredAt,height\n${day(1)},50\n`, [{ path: '/header/height', message: 'is not allowed: the columns are measuredAt, heightCm, weightKg, headCircumferenceCm, notes' }]],
    [`MeasuredAt,heightCm\n${day(1)},50\n`, [
      { path: '/header/MeasuredAt', message: 'is not allowed: the columns are measuredAt, heightCm, weightKg, headCircumferenceCm, notes' },
      { path: '/header/measuredAt', message: 'is required' }
    ]],
    [`measuredAt,heightCm,heightCm\n${day(1)},50,51\n`, [{ path: '/header/heightCm', message: 'appears more than once' }]],
    [`heightCm,weightKg\n50,4\n`, [{ path: '/header/measuredAt', message: 'is required' }]],
    [`measuredAt,heightCm,\n${day(1)},50,\n`, [{ path: '/header/', message: 'column 3 has no name' }]]
  ]
  for (const [csv, issues] of cases) {
    const res = await importCsv(app, owner, child.id, csv)
    t.equal(res.statusCode, 400, csv.split('\n')[0])
    t.same(res.json(), { error: 'The CSV file is not valid', code: 'VALIDATION_ERROR', details: { issues } }, csv.split('\n')[0])
  }
  const spaced = await importCsv(app, owner, child.id, ` measuredAt , heightCm \n${day(1)},50\n`)
  t.equal(spaced.statusCode, 201, 'spaces around the names are trimmed')
})

t.test('an empty file, a header alone, a malformed file, too many rows', async t => {
  const { app, owner, child } = await setup(t)
  const cases: Array<[string, string, { path: string, message: string }]> = [
    ['empty', '', { path: '/body', message: 'is empty: send a header row and at least one row' }],
    ['blank lines', '\r\n\n  \n', { path: '/body', message: 'is empty: send a header row and at least one row' }],
    ['header only', `${HEADER}\r\n`, { path: '/body', message: 'has no rows after the header' }],
    ['a quote never closed', `${HEADER}\n${day(1)},50,,,fine\n${day(2)},50,,,"open\n${day(3)},50,,,\n`, { path: '/line/3', message: 'opens a quote that is never closed' }],
    ['a cell too many', `${HEADER}\n${day(1)},50,,,\n${day(2)},50,,,,\n`, { path: '/line/3', message: 'has 6 cells; the header names 5 columns' }],
    ['a cell too few', `${HEADER}\n${day(1)},50,,\n`, { path: '/line/2', message: 'has 4 cells; the header names 5 columns' }],
    ['text after a closing quote', `${HEADER}\n${day(1)},50,,,"a"b\n`, { path: '/line/2', message: 'has text after the closing quote of a cell: put the whole cell in quotes and double the quotes inside' }]
  ]
  for (const [name, csv, issue] of cases) {
    const res = await importCsv(app, owner, child.id, csv)
    t.equal(res.statusCode, 400, name)
    t.same(res.json(), { error: 'The CSV file is not valid', code: 'VALIDATION_ERROR', details: { issues: [issue] } }, name)
  }
  const tooMany = `measuredAt,weightKg\n${`${day(1)},4\n`.repeat(10001)}`
  const res = await importCsv(app, owner, child.id, tooMany)
  t.equal(res.statusCode, 400)
  t.same(res.json().details.issues, [{ path: '/body', message: 'must have at most 10000 rows after the header' }])
  const long = await importCsv(app, owner, child.id, `${HEADER}\n${day(1)},50,,,"${'x'.repeat(70_000)}"\n`)
  t.equal(long.statusCode, 400, 'a record longer than its bound')
  t.same(long.json().details.issues, [{ path: '/line/2', message: 'is longer than 65536 characters' }])
  // Ten million empty cells on one line: refused once the line passes its bound, not after all are parsed.
  const hostile = await importCsv(app, owner, child.id, `${HEADER}\n${','.repeat(10 * 1024 * 1024 - 100)}\n`)
  t.equal(hostile.statusCode, 400, 'a line of millions of cells')
  t.same(hostile.json().details.issues, [{ path: '/line/2', message: 'is longer than 65536 characters' }])
  const most = await importCsv(app, owner, child.id, `measuredAt,weightKg\n${`${day(1)},4\n`.repeat(10000)}`, { query: 'dryRun=true' })
  t.equal(most.statusCode, 200, '10,000 rows are taken')
  t.equal((await stateOf(app, child.id)).measurements, 0)
})

t.test('dryRun=true answers the rows and writes nothing', async t => {
  const { app, owner, child } = await setup(t)
  const before = await stateOf(app, child.id)
  const csv = `${HEADER}\n${day(5)},50.5,3.25,,first\n${day(6)},,,34,\n`
  const res = await importCsv(app, owner, child.id, csv, { query: 'dryRun=true' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), {
    dryRun: true,
    count: 2,
    data: [
      { measuredAt: day(5), heightCm: 50.5, weightKg: 3.25, headCircumferenceCm: null, notes: 'first' },
      { measuredAt: day(6), heightCm: null, weightKg: null, headCircumferenceCm: 34, notes: null }
    ]
  })
  t.same(await stateOf(app, child.id), before, 'no measurement, no change')
  const bad = await importCsv(app, owner, child.id, csv.replace('50.5', '500'), { query: 'dryRun=true' })
  t.equal(bad.statusCode, 400, 'a dry run checks as the import does')
  t.same(bad.json().details.issues, [{ path: '/line/2/heightCm', message: 'must be <= 250' }])
  t.equal((await importCsv(app, owner, child.id, csv, { query: 'dryRun=maybe' })).statusCode, 400, 'dryRun is a boolean')
  const real = await importCsv(app, owner, child.id, csv, { query: 'dryRun=false' })
  t.equal(real.statusCode, 201)
  t.equal(real.json().dryRun, false)
  t.equal((await stateOf(app, child.id)).measurements, 2)
})

t.test('who may import: the rules of a create', async t => {
  const { app, owner, child } = await setup(t)
  const { member, viewer, stranger } = await members(app, owner, { member: 'member', viewer: 'viewer', stranger: null })
  const csv = `${HEADER}\n${day(1)},50,,,\n`
  const before = await stateOf(app, child.id)

  const none = await importCsv(app, null, child.id, 'not, a csv\n"')
  t.equal(none.statusCode, 401, 'no token: 401 before anything else')
  t.equal(none.headers['www-authenticate'], 'Bearer')
  t.equal((await importCsv(app, null, child.id, csv, { type: 'application/json' })).statusCode, 401)

  const byViewer = await importCsv(app, viewer, child.id, csv)
  t.equal(byViewer.statusCode, 403)
  t.same(byViewer.json(), { error: 'Access denied', code: 'FORBIDDEN', details: {} })
  t.equal((await importCsv(app, viewer, child.id, csv, { query: 'dryRun=true' })).statusCode, 403, 'a dry run too')
  t.equal((await importCsv(app, viewer, child.id, `${HEADER}\n${day(1)},500,,,\n`)).statusCode, 400, 'a viewer\'s malformed file is a 400, as for a create')

  const foreign = await importCsv(app, stranger, child.id, csv)
  t.equal(foreign.statusCode, 403, 'a child of another family')
  t.same(foreign.json(), { error: 'Access denied', code: 'FORBIDDEN', details: {} })
  const unknown = await importCsv(app, owner, 2147483647, csv)
  t.equal(unknown.statusCode, 404)
  t.same(unknown.json(), { error: 'Child not found', code: 'NOT_FOUND', details: {} })
  t.equal((await importCsv(app, owner, 0, csv)).statusCode, 400, 'an id out of range')
  t.same(await stateOf(app, child.id), before, 'no refused import wrote anything')

  const byMember = await importCsv(app, member, child.id, csv)
  t.equal(byMember.statusCode, 201, 'a member may')
  const [change] = await app.sql`select user_id from changes where kind = 'measurement' and record_id = ${byMember.json().data[0].id}`
  t.equal(change.user_id, member.user.id, 'the change names the member')
})

t.test('only a CSV body, at most 10 MiB', async t => {
  const { app, owner, child } = await setup(t)
  const csv = `${HEADER}\n${day(1)},50,,,\n`
  const json = await importCsv(app, owner, child.id, JSON.stringify({ measuredAt: day(1), heightCm: 50 }), { type: 'application/json' })
  t.equal(json.statusCode, 415)
  t.same(json.json(), { error: 'Content type application/json is not accepted here', code: 'UNSUPPORTED_MEDIA_TYPE', details: {} })
  t.equal((await importCsv(app, owner, child.id, csv, { type: 'text/plain' })).statusCode, 415)
  t.equal((await importCsv(app, owner, child.id, csv, { type: 'multipart/form-data; boundary=x' })).statusCode, 415)
  const untyped = await importCsv(app, owner, child.id, csv, { type: null })
  t.equal(untyped.statusCode, 415, 'no content type')
  t.equal(untyped.json().code, 'UNSUPPORTED_MEDIA_TYPE')
  const empty = await app.inject({ method: 'POST', url: `/api/children/${child.id}/measurements/import`, headers: bearer(owner.accessToken) })
  t.equal(empty.statusCode, 415, 'no body and no content type')
  t.equal(empty.json().code, 'UNSUPPORTED_MEDIA_TYPE')

  const large = `measuredAt,notes\n${`${day(1)},${'x'.repeat(1000)}\n`.repeat(10500)}`
  t.ok(Buffer.byteLength(large) > 10 * 1024 * 1024)
  const tooLarge = await importCsv(app, owner, child.id, large)
  t.equal(tooLarge.statusCode, 413)
  t.same(tooLarge.json(), { error: 'The body is larger than 10 MiB', code: 'PAYLOAD_TOO_LARGE', details: {} })
  const big = `measuredAt,weightKg,notes\n${`${day(1)},4,${'x'.repeat(900)}\n`.repeat(5000)}`
  t.ok(Buffer.byteLength(big) > 1024 * 1024, 'a file larger than a JSON body may be')
  t.equal((await importCsv(app, owner, child.id, big, { query: 'dryRun=true' })).statusCode, 200)
  t.equal((await stateOf(app, child.id)).measurements, 0)
})
