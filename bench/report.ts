/**
 * The printable report's time, from the request to its last byte, for a
 * child with 100 and with 1,000 measurements (weight, length and head
 * circumference each, over five years), in metric and English and in
 * imperial and German, with WHO's tables when they are beside the project.
 * Target: at most 1 s for 100 measurements.
 *
 *   npm run bench:report
 *
 * Uses DATABASE_URL's server when set (in a scratch database, dropped at the
 * end), otherwise an embedded PostgreSQL in a temporary directory.
 */
import { request } from './lib/api'
import { onServer, scratchApp } from './lib/scratch'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const SIZES = [100, 1000]

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

async function main (): Promise<void> {
  await onServer(async serverUrl => {
    const { app, origin, drop } = await scratchApp(serverUrl, 'report', {})
    try {
      const parent = await request(origin, 'POST', '/api/auth/register', null, { email: 'parent@example.org', password: 'a long enough password', name: 'Parent' })
      const familyId = parent.user.families?.[0]?.id ?? (await request(origin, 'GET', '/api/me', parent.accessToken)).families[0].id
      let over = true
      for (const size of SIZES) {
        const child = await request(origin, 'POST', '/api/children', parent.accessToken, { name: `Child of ${size}`, dateOfBirth: '2020-01-01', sex: 'female', familyId })
        // A smooth growth over five years, one measurement every 1,826 / size days.
        await app.sql`
          insert into measurements (child_id, measured_at, weight_kg, height_cm, head_circumference_cm)
          select ${child.id}, date '2020-01-01' + (i * 1826 / ${size})::integer,
                 round((3.3 + 15 * (1 - exp(-i::numeric / ${size} * 2.2)))::numeric, 3),
                 round((50 + 60 * (1 - exp(-i::numeric / ${size} * 1.6)))::numeric, 1),
                 round((34.5 + 16 * (1 - exp(-i::numeric / ${size} * 3)))::numeric, 1)
          from generate_series(0, ${size - 1}) i
        `
        for (const query of ['', '?units=imperial&lang=de']) {
          const times: number[] = []
          let bytes = 0
          for (let round = 0; round < ROUNDS + 1; round++) {
            const started = performance.now()
            const res = await fetch(`${origin}/api/children/${child.id}/report.pdf${query}`, { headers: { authorization: `Bearer ${parent.accessToken}` } })
            const body = Buffer.from(await res.arrayBuffer())
            if (res.status !== 200) throw new Error(`the report answered ${res.status}: ${body.toString()}`)
            bytes = body.length
            // The first request loads the PDF library and the font: reported, not counted.
            if (round === 0) console.log(`  first request (libraries loading): ${Math.round(performance.now() - started)} ms`)
            else times.push(performance.now() - started)
          }
          const ms = Math.round(median(times))
          if (size === 100 && ms > 1000) over = false
          console.log(`${size} measurements${query === '' ? ', metric, English' : ', imperial, German'}: median ${ms} ms, best ${Math.round(Math.min(...times))} ms (${times.map(Math.round).join(', ')}), ${Math.round(bytes / 1024)} KB`)
        }
      }
      console.log(`${over ? 'MET' : 'NOT MET'}   the report of 100 measurements in at most 1 s`)
    } finally {
      await drop()
    }
  })
}

main().catch(error => {
  console.error(error)
  process.exit(1)
})
