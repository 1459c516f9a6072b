import { readFileSync, rmSync } from 'node:fs'
import { createSql } from '../../db/client'
import { alive } from '../../db/embedded'
import { STATE_FILE, type TestDbState } from './state'

/** Drops the run's databases and stops its embedded server. */
async function main (): Promise<void> {
  let state: TestDbState
  try {
    state = JSON.parse(readFileSync(STATE_FILE, 'utf8'))
  } catch {
    return
  }
  const admin = createSql(state.adminUrl, { max: 1 })
  try {
    const leftovers = await admin<{ datname: string }[]>`
      select datname from pg_database
      where datname = ${state.template} or datname like ${state.template + '\\_%'}
    `
    for (const { datname } of leftovers) await admin.unsafe(`drop database if exists ${datname} with (force)`)
  } finally {
    await admin.end()
  }
  if (state.daemonPid !== null && alive(state.daemonPid)) {
    process.kill(state.daemonPid, 'SIGTERM')
    for (let waited = 0; alive(state.daemonPid) && waited < 30000; waited += 100) {
      await new Promise(resolve => setTimeout(resolve, 100))
    }
  }
  if (state.dir !== null) rmSync(state.dir, { recursive: true, force: true })
  rmSync(STATE_FILE, { force: true })
}

main().catch(error => {
  console.error(error)
  process.exit(1)
})
