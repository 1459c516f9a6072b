/**
 * Makes the pictures of the printable report shown in the README: a made-up
 * child measured over two years, on CDC's charts (public domain; WHO's
 * tables are never drawn into a committed file), rendered by pdftoppm
 * (Debian's poppler-utils) into docs/report-first-page.png and
 * docs/report-chart.png.
 *
 *   node --import tsx scripts/report-picture.ts
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { request } from '../bench/lib/api'
import { onServer, scratchApp } from '../bench/lib/scratch'

const DOCS = path.join(__dirname, '..', 'docs')
const MEASUREMENTS: Array<[string, number, number, number]> = [
  ['2024-03-02', 3.35, 49.8, 34.2], ['2024-04-02', 4.4, 54.1, 36.9], ['2024-05-06', 5.5, 57.9, 38.6], ['2024-07-03', 6.6, 62.8, 40.8],
  ['2024-09-04', 7.4, 66.5, 42.4], ['2024-12-03', 8.3, 70.6, 44.0], ['2025-03-04', 9.0, 74.2, 45.1], ['2025-09-02', 10.1, 80.1, 46.6],
  ['2026-03-03', 11.3, 85.9, 47.5]
]

async function main (): Promise<void> {
  await onServer(async serverUrl => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'child-health-picture-'))
    const { origin, drop } = await scratchApp(serverUrl, 'picture', { GROWTH_DATA_DIR: path.join(work, 'no-who-tables') })
    try {
      const parent = await request(origin, 'POST', '/api/auth/register', null, { email: 'parent@example.org', password: 'a long enough password', name: 'Parent' })
      const familyId = (await request(origin, 'GET', '/api/me', parent.accessToken)).families[0].id
      const child = await request(origin, 'POST', '/api/children', parent.accessToken, { name: 'Mia Example', dateOfBirth: '2024-03-02', sex: 'female', familyId, growthReference: 'cdc' })
      for (const [measuredAt, weightKg, heightCm, headCircumferenceCm] of MEASUREMENTS) {
        await request(origin, 'POST', `/api/children/${child.id}/measurements`, parent.accessToken, { measuredAt, weightKg, heightCm, headCircumferenceCm })
      }
      for (const [date, name, doseNumber] of [['2024-05-06', 'DTaP', 1], ['2024-07-03', 'DTaP', 2], ['2025-03-04', 'MMR', 1]] as const) {
        await request(origin, 'POST', `/api/children/${child.id}/medical-events`, parent.accessToken, { type: 'vaccine', name, date, doseNumber })
      }
      const res = await fetch(`${origin}/api/children/${child.id}/report.pdf?reference=cdc&units=imperial`, { headers: { authorization: `Bearer ${parent.accessToken}` } })
      if (res.status !== 200) throw new Error(`the report answered ${res.status}`)
      const file = path.join(work, 'report.pdf')
      writeFileSync(file, Buffer.from(await res.arrayBuffer()))
      for (const [page, name] of [[1, 'report-first-page'], [3, 'report-chart']] as const) {
        execFileSync('pdftoppm', ['-png', '-r', '60', '-f', String(page), '-l', String(page), '-singlefile', file, path.join(work, name)])
        renameSync(path.join(work, `${name}.png`), path.join(DOCS, `${name}.png`))
      }
    } finally {
      rmSync(work, { recursive: true, force: true })
      await drop()
    }
  })
}

main().catch(error => {
  console.error(error)
  process.exit(1)
})
