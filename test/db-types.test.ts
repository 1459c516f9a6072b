import t from 'tap'
import { Type } from '@sinclair/typebox'
import { IsoDate } from '../lib/schemas'
import { build, type App } from './helper'

const ZONES = ['Pacific/Kiritimati', 'Pacific/Pago_Pago']
const DATES = ['2024-01-01', '2023-12-31', '2024-02-29', '2020-06-15', '1999-12-31']

/** A route of the test's own that stores a child and answers what the database returns. */
function childRoute (app: App): void {
  app.post('/api/test/children', {
    schema: {
      body: Type.Object({ dateOfBirth: IsoDate, weightKg: Type.Number() }, { additionalProperties: false }),
      response: { 200: Type.Object({ id: Type.Integer(), dateOfBirth: IsoDate, weightKg: Type.Number(), total: Type.Number() }) }
    }
  }, async request => {
    const { dateOfBirth, weightKg } = request.body as { dateOfBirth: string; weightKg: number }
    return app.sql.begin(async tx => {
      const [family] = await tx`insert into families (name) values ('Tz') returning id`
      const [child] = await tx`
        insert into children (family_id, name, date_of_birth, sex)
        values (${family.id}, 'Kim', ${dateOfBirth}, 'female')
        returning id, date_of_birth
      `
      const [measurement] = await tx`
        insert into measurements (child_id, measured_at, weight_kg)
        values (${child.id}, ${dateOfBirth}, ${weightKg})
        returning weight_kg
      `
      const [{ total }] = await tx`select count(*) as total from measurements`
      return { id: child.id, dateOfBirth: child.date_of_birth, weightKg: measurement.weight_kg, total }
    })
  })
}

for (const zone of ZONES) {
  t.test(`dates never shift with the process and database in ${zone}`, async t => {
    const before = process.env.TZ
    process.env.TZ = zone
    t.teardown(() => { process.env.TZ = before })
    t.equal(new Date('2024-01-01T00:00:00Z').getTimezoneOffset() !== 0, true, 'the process runs in the zone')

    const app = await build(t, { timezone: zone, routes: childRoute })
    const [{ timezone }] = await app.sql`select current_setting('TimeZone') as timezone`
    t.equal(timezone, zone, 'the database session runs in the zone')

    for (const date of DATES) {
      const res = await app.inject({ method: 'POST', url: '/api/test/children', payload: { dateOfBirth: date, weightKg: 3.456 } })
      t.equal(res.statusCode, 200)
      t.equal(res.json().dateOfBirth, date, `${date} comes back unchanged`)
      const [row] = await app.sql`select date_of_birth, date_of_birth::text as text from children where id = ${res.json().id}`
      t.equal(row.date_of_birth, date, 'the query layer returns the date as text')
      t.equal(row.text, date, 'the database stored that very date')
    }
  })
}

t.test('numeric values round-trip as JSON numbers, counts and ids as numbers', async t => {
  const app = await build(t, { routes: childRoute })
  const res = await app.inject({ method: 'POST', url: '/api/test/children', payload: { dateOfBirth: '2024-03-01', weightKg: 3.456 } })
  t.equal(res.statusCode, 200)
  t.match(res.body, /"weightKg":3\.456[,}]/, 'written as the number 3.456, not a string')
  t.equal(res.json().weightKg, 3.456)
  t.equal(typeof res.json().id, 'number')
  t.equal(res.json().total, 1, 'a bigint count is a number')

  const [row] = await app.sql`select weight_kg, count(*) over () as n, 0.1::numeric + 0.2::numeric as sum from measurements`
  t.equal(row.weight_kg, 3.456)
  t.equal(row.n, 1)
  t.equal(row.sum, 0.3, 'decimal arithmetic stays exact')
})
