import t, { type Test } from 'tap'
import sharp from 'sharp'
import { build, call, familyOf, register, type App, type Pair } from './helper'
import { form } from './multipart'

// What the database cannot hold is refused by validation, naming the field:
// NUL characters in text, years outside 0001–9999. Integers in paths, query
// strings and multipart fields are plain decimal digits.

const NUL_MESSAGE = 'must not contain a NUL character (U+0000)'
const DATE_MESSAGE = 'must be a date from 0001-01-01 to 9999-12-31'
const TIME_MESSAGE = 'must be a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z'
const INTEGER_MESSAGE = 'must be an integer in plain decimal digits'

interface Operation {
  parameters?: Array<{ in: string, name: string, schema: { type?: unknown } }>
  requestBody?: { content?: Record<string, unknown> }
}

async function setup (t: Test): Promise<{ app: App, admin: Pair, childId: number }> {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const admin = await register(app)
  const child = await call(app, admin, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2021-06-01', sex: 'female', familyId: familyOf(admin) })
  return { app, admin, childId: child.json().id }
}

function refused (t: Test, res: { statusCode: number, json: () => any }, issues: Array<{ path: string, message: string }>, label: string): void {
  t.equal(res.statusCode, 400, label)
  t.equal(res.json().code, 'VALIDATION_ERROR', label)
  t.same(res.json().details.issues, issues, label)
}

t.test('a NUL character is refused where it is sent, by its field', async t => {
  const { app, admin, childId } = await setup(t)
  refused(t, await call(app, admin, 'POST', '/api/children', { name: 'Ki\u0000m', dateOfBirth: '2021-06-01', sex: 'female' }),
    [{ path: '/body/name', message: NUL_MESSAGE }], 'a child\'s name')
  refused(t, await call(app, admin, 'POST', `/api/children/${childId}/measurements`, { measuredAt: '2022-01-01', weightKg: 9.5, notes: 'fine\u0000' }),
    [{ path: '/body/notes', message: NUL_MESSAGE }], 'a record\'s notes')
  refused(t, await call(app, admin, 'POST', '/api/visits', { childId, date: '2022-01-01', type: 'sick', provider: '\u0000' }),
    [{ path: '/body/provider', message: NUL_MESSAGE }], 'a NUL alone is not trimmed away')
  refused(t, await call(app, admin, 'GET', '/api/admin/users?q=a%00b'), [{ path: '/query/q', message: NUL_MESSAGE }], 'the admin search')
  refused(t, await call(app, admin, 'PATCH', '/api/me', { name: 'A\u0000' }), [{ path: '/body/name', message: NUL_MESSAGE }], 'one\'s own name')

  const csv = await call(app, admin, 'POST', `/api/children/${childId}/measurements/import`,
    'measuredAt,weightKg,notes\n2022-01-01,9.5,ok\n2022-02-01,9.8,bad\u0000\n', { 'content-type': 'text/csv' })
  t.equal(csv.statusCode, 400, 'a CSV line')
  t.same(csv.json().details.issues, [{ path: '/line/3/notes', message: NUL_MESSAGE }])

  const fine = await call(app, admin, 'POST', `/api/children/${childId}/measurements`, { measuredAt: '2022-01-01', weightKg: 9.5, notes: 'ü \u0001 tab\tend' })
  t.equal(fine.statusCode, 201, 'other characters are kept')
  const [{ count }] = await app.sql`select count(*)::int as count from measurements`
  t.equal(count, 1, 'nothing refused was written')
})

t.test('dates and times outside the years the database holds', async t => {
  const { app, admin, childId } = await setup(t)
  refused(t, await call(app, admin, 'POST', '/api/children', { name: 'Old', dateOfBirth: '0000-01-01', sex: 'female' }),
    [{ path: '/body/dateOfBirth', message: DATE_MESSAGE }], 'dateOfBirth 0000-01-01')
  refused(t, await call(app, admin, 'GET', `/api/children/${childId}/measurements?from=0000-01-01&to=9999-12-31`),
    [{ path: '/query/from', message: DATE_MESSAGE }], 'from 0000-01-01')
  const widest = await call(app, admin, 'GET', `/api/children/${childId}/measurements?from=0001-01-01&to=9999-12-31`)
  t.equal(widest.statusCode, 200, 'the first and the last day the database holds are taken')
  refused(t, await call(app, admin, 'GET', `/api/measurements?childId=${childId}&to=0000-12-31`),
    [{ path: '/query/to', message: DATE_MESSAGE }], 'to 0000-12-31')
  refused(t, await call(app, admin, 'PATCH', `/api/children/${childId}`, { dateOfBirth: '0000-02-29' }),
    [{ path: '/body/dateOfBirth', message: DATE_MESSAGE }], 'in a PATCH')
  refused(t, await call(app, admin, 'PATCH', `/api/children/${childId}`, { dateOfBirth: '2021-13-01' }),
    [{ path: '/body/dateOfBirth', message: 'must be a date YYYY-MM-DD' }], 'a date that does not exist keeps its own message')

  const illness = await call(app, admin, 'POST', `/api/children/${childId}/illnesses`, { startDate: '2022-01-01' })
  t.equal(illness.statusCode, 201)
  const temperatures = `/api/illnesses/${illness.json().id}/temperatures`
  for (const takenAt of ['0000-06-01T08:00:00Z', '0001-01-01T00:30:00+01:00', '9999-12-31T23:00:00-14:00']) {
    refused(t, await call(app, admin, 'POST', temperatures, { takenAt, temperatureC: 38.5 }), [{ path: '/body/takenAt', message: TIME_MESSAGE }], takenAt)
  }
  const taken = await call(app, admin, 'POST', temperatures, { takenAt: '2022-01-02T08:00:00+02:00', temperatureC: 38.5 })
  t.equal(taken.statusCode, 201, 'an ordinary time is taken')
})

t.test('ids and other integers in paths and query strings are plain decimal digits', async t => {
  const { app, admin, childId } = await setup(t)
  t.equal(childId, 1, 'the first child has id 1')
  t.equal((await call(app, admin, 'GET', '/api/children/1')).statusCode, 200)
  for (const written of ['0x1', '+1', '%201', '1%20', '01', '1e0', '1.0', '0b1', '%091']) {
    refused(t, await call(app, admin, 'GET', `/api/children/${written}`), [{ path: '/params/id', message: INTEGER_MESSAGE }], `/api/children/${written}`)
  }
  refused(t, await call(app, admin, 'GET', '/api/children/1e2'), [{ path: '/params/id', message: INTEGER_MESSAGE }], '1e2 is not child 100')
  refused(t, await call(app, admin, 'GET', '/api/children/1.5'), [{ path: '/params/id', message: 'must be integer' }], 'a fraction')
  refused(t, await call(app, admin, 'GET', '/api/children/01/measurements'), [{ path: '/params/childId', message: INTEGER_MESSAGE }], 'a child\'s records')
  refused(t, await call(app, admin, 'DELETE', '/api/children/0x1'), [{ path: '/params/id', message: INTEGER_MESSAGE }], 'a delete')
  t.equal((await call(app, admin, 'GET', '/api/children/1')).statusCode, 200, 'the child is still there')

  for (const written of ['0x10', '+10', '%2010', '010', '1e1', '10.0']) {
    refused(t, await call(app, admin, 'GET', `/api/children?limit=${written}`), [{ path: '/query/limit', message: INTEGER_MESSAGE }], `?limit=${written}`)
  }
  refused(t, await call(app, admin, 'GET', '/api/children?offset=00'), [{ path: '/query/offset', message: INTEGER_MESSAGE }], '?offset=00')
  refused(t, await call(app, admin, 'GET', '/api/measurements?childId=0x1'), [{ path: '/query/childId', message: INTEGER_MESSAGE }], '?childId=0x1')
  refused(t, await call(app, admin, 'GET', '/api/children?familyId=0x1&limit=+5'), [
    { path: '/query/limit', message: INTEGER_MESSAGE },
    { path: '/query/familyId', message: INTEGER_MESSAGE }
  ], 'every parameter is named')
  const listed = await call(app, admin, 'GET', `/api/children?limit=10&offset=0&familyId=${familyOf(admin)}`)
  t.equal(listed.statusCode, 200, 'plain integers are taken')
  t.same(listed.json().meta, { total: 1, limit: 10, offset: 0 })
  t.equal((await call(app, admin, 'GET', '/api/children?limit=')).json().meta.limit, 50, 'an empty parameter is still absent')
  t.equal((await call(app, admin, 'GET', '/api/children?limit=-1')).json().details.issues[0].message, 'must be >= 1', 'a negative one meets its range')
})

t.test('every integer parameter of every route is checked', async t => {
  const app = await build(t)
  const doc = app.swagger() as { paths: Record<string, Record<string, Operation>> }
  const parameters: Array<{ method: string, path: string, where: string, name: string, body: string | undefined }> = []
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const body = Object.keys(operation.requestBody?.content ?? {}).find(type => type !== 'application/json')
      for (const parameter of operation.parameters ?? []) {
        const type = parameter.schema?.type
        if (type === 'integer' || (Array.isArray(type) && type.includes('integer'))) parameters.push({ method, path, where: parameter.in, name: parameter.name, body })
      }
    }
  }
  // A body other than JSON is read before validation (bodies come first): these get one.
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: { r: 1, g: 2, b: 3 } } }).png().toBuffer()
  const upload = form([{ name: 'file', value: png, filename: 'a.png', type: 'image/png' }])
  t.ok(parameters.length > 50, `${parameters.length} integer parameters`)
  const admin = await register(app)
  for (const { method, path, where, name, body } of parameters) {
    let url = path.replace(/\{([^}]+)\}/g, (_all, param: string) => param === name && where === 'path' ? '0x1' : '1')
    if (where === 'query') url += `?${name}=0x1`
    const res = body === 'multipart/form-data'
      ? await call(app, admin, method.toUpperCase(), url, upload.payload, upload.headers)
      : body === 'text/csv'
        ? await call(app, admin, method.toUpperCase(), url, 'measuredAt,weightKg\n2022-01-01,9\n', { 'content-type': 'text/csv' })
        : await call(app, admin, method.toUpperCase(), url)
    const part = where === 'path' ? 'params' : 'query'
    const named = res.statusCode === 400 && (res.json().details.issues ?? []).some((issue: { path: string, message: string }) => issue.path === `/${part}/${name}` && issue.message === INTEGER_MESSAGE)
    t.ok(named, `${method.toUpperCase()} ${url}: 400 naming /${part}/${name} (${res.statusCode})`)
  }
})

t.test('multipart integer fields are plain decimal digits too', async t => {
  const { app, admin, childId } = await setup(t)
  const visit = (await call(app, admin, 'POST', `/api/children/${childId}/visits`, { date: '2022-01-10', type: 'sick' })).json()
  const pdf = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n')
  const upload = (visitId: string) => {
    const body = form([{ name: 'visitId', value: visitId }, { name: 'file', value: pdf, filename: 'scan.pdf', type: 'application/pdf' }])
    return call(app, admin, 'POST', `/api/children/${childId}/attachments`, body.payload, body.headers)
  }
  t.equal(visit.id, 1)
  for (const written of ['0x1', '+1', ' 1', '1 ', '01', '1e0', '1.0']) {
    const res = await upload(written)
    t.equal(res.statusCode, 400, JSON.stringify(written))
    t.same(res.json().details.issues, [{ path: '/body/visitId', message: 'must be integer' }], JSON.stringify(written))
  }
  const linked = await upload('1')
  t.equal(linked.statusCode, 201)
  t.equal(linked.json().visitId, 1)
  const [{ count }] = await app.sql`select count(*)::int as count from attachments`
  t.equal(count, 1, 'only the plain one was stored')
})
