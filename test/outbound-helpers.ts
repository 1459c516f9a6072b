import { lookup } from 'node:dns/promises'
import os from 'node:os'
import type { Test } from 'tap'
import { buildApp, type App } from '../app'
import { testConfig, type TestDatabase } from './helper'

/**
 * A name that resolves to 127.0.0.1 through the machine's own resolver, with
 * no mock: the machine's host name (in /etc/hosts, as most systems write it).
 * Its written form says nothing of loopback, so only a check of the
 * resolved address catches it.
 */
export async function loopbackName (t: Test): Promise<string> {
  const name = os.hostname()
  const found = await lookup(name, { all: true })
  t.ok(found.length > 0 && found.every(item => item.address === '127.0.0.1'), `${name} resolves to 127.0.0.1 alone: ${JSON.stringify(found)}`)
  return name
}

/** A second instance on the database of `strict` that allows private addresses (WEBHOOK_ALLOW_PRIVATE=true) and runs no worker; closed at teardown. */
export async function allowingTwin (t: Test, strict: { db: TestDatabase }, env: Record<string, string>): Promise<App> {
  const app = await buildApp(testConfig(t, strict.db.url, { ...env, JOB_WORKER: 'off', WEBHOOK_ALLOW_PRIVATE: 'true' }))
  t.teardown(() => app.close())
  await app.ready()
  return app
}
