import t from 'tap'
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import sharp from 'sharp'
import openapiTS, { astToString } from 'openapi-typescript'
import { build } from './helper'

const CLIENT = path.join(__dirname, 'client')

t.test('a client generated from the document compiles and drives a whole session', async t => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const baseUrl = `http://127.0.0.1:${port}`

  const doc = await (await fetch(`${baseUrl}/api/openapi.json`)).json()
  mkdirSync(path.join(CLIENT, '.generated'), { recursive: true })
  writeFileSync(path.join(CLIENT, '.generated', 'api.d.ts'), astToString(await openapiTS(doc as Parameters<typeof openapiTS>[0])))

  const tsc = require.resolve('typescript/bin/tsc')
  const compiled = await promisify(execFile)(process.execPath, [tsc, '-p', path.join(CLIENT, 'tsconfig.json')]).then(
    () => '',
    (error: { stdout?: string }) => error.stdout ?? String(error)
  )
  t.equal(compiled, '', 'the client compiles against the generated types')

  const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#c33' } }).png().toBuffer()
  // Loaded by path: the flow is type-checked above, against the generated types only.
  const { runFlow } = await import(path.join(CLIENT, 'flow')) as { runFlow: (url: string, files: { png: ArrayBuffer }) => Promise<Array<{ name: string, status: number }>> }
  const steps = await runFlow(baseUrl, { png: png.buffer.slice(png.byteOffset, png.byteOffset + png.byteLength) as ArrayBuffer })
  t.same(steps.map(step => step.name), [
    'register', 'me', 'invite', 'register with the invite', 'members', 'create child', 'add measurement', 'add measurement',
    'visit with a measurement', 'list with filter and sort', 'upload attachment', 'growth', 'list not modified', 'stale write refused',
    'write with the current version', 'changes', 'changes since the cursor', 'refresh', 'logout', 'refused after logout'
  ])
  t.equal(steps.find(step => step.name === 'list not modified')?.status, 304, 'a current ETag gives 304')
  t.equal(steps.find(step => step.name === 'stale write refused')?.status, 412, 'a stale If-Match gives 412')
  t.equal(steps[steps.length - 1].status, 401, 'the session is over after logout')
})

t.test('a client generated with @hey-api/openapi-ts compiles under --strict and works', async t => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const baseUrl = `http://127.0.0.1:${port}`

  const dir = path.join(__dirname, 'hey-client')
  const generated = path.join(dir, '.generated')
  rmSync(generated, { recursive: true, force: true })
  mkdirSync(generated, { recursive: true })
  const input = path.join(generated, 'openapi.json')
  writeFileSync(input, await (await fetch(`${baseUrl}/api/openapi.json`)).text())
  const generator = path.join(path.dirname(require.resolve('@hey-api/openapi-ts/package.json')), 'bin', 'run.js')
  await promisify(execFile)(process.execPath, [generator, '-i', input, '-o', generated, '-c', '@hey-api/client-fetch', '--no-log-file', '--silent'], { cwd: dir })
  t.ok(existsSync(path.join(generated, 'sdk.gen.ts')), 'the SDK is generated')

  const tsc = require.resolve('typescript/bin/tsc')
  const compiled = await promisify(execFile)(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')]).then(
    () => '',
    (error: { stdout?: string }) => error.stdout ?? String(error)
  )
  t.equal(compiled, '', 'the SDK and a session written against it compile with --strict')

  const { runHeyFlow } = await import(path.join(dir, 'flow')) as { runHeyFlow: (url: string) => Promise<unknown> }
  t.same(await runHeyFlow(baseUrl), {
    names: ['Hey', 'Robin'],
    weights: [9.125, 9.5],
    replayed: { header: 'true', sameId: true },
    batch: { statuses: [201, 200], rolledBack: false }
  }, 'the SDK drives the service: a write replayed by its key, and a batch')
  const [{ n }] = await app.db.sql<{ n: number }[]>`select count(*)::int as n from measurements`
  t.equal(n, 2, 'the create sent twice with one key was written once')
  const [patched] = await app.db.sql<{ notes: string }[]>`select notes from measurements where weight_kg = 9.125`
  t.equal(patched.notes, 'from the batch')
})
