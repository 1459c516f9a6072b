'use strict'
// npm test: runs tap with a temporary folder of the run's own as TMPDIR, then
// checks that the tests left nothing in it. Arguments go to tap unchanged.
// Prints one line about the folder, `temp folder: clean` or `temp folder:
// N left behind`, and exits non-zero when tap failed or something was left.
const { spawn } = require('node:child_process')
const { chmodSync, mkdtempSync, readdirSync, rmSync } = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const run = mkdtempSync(path.join(os.tmpdir(), 'child-health-run-'))
// The embedded PostgreSQL runs as another user when the tests run as root.
chmodSync(run, 0o755)

const tap = path.join(path.dirname(require.resolve('tap/package.json')), 'dist', 'esm', 'run.mjs')
const child = spawn(process.execPath, [tap, ...process.argv.slice(2)], {
  stdio: 'inherit',
  // The tools' own compile caches would stay in the temp folder: tsx's, the
  // one under tap's TypeScript loader, and jiti's (used by a client generator).
  env: {
    ...process.env,
    TMPDIR: run,
    TMP: run,
    TEMP: run,
    TSX_DISABLE_CACHE: '1',
    DISABLE_V8_COMPILE_CACHE: '1',
    // Node 22 keeps a module compile cache of its own there too.
    NODE_DISABLE_COMPILE_CACHE: '1',
    JITI_FS_CACHE: 'false'
  }
})

let stopping = false
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    stopping = true
    child.kill(signal)
  })
}

child.on('exit', (code, signal) => {
  const left = readdirSync(run)
  rmSync(run, { recursive: true, force: true })
  if (left.length === 0) {
    process.stdout.write('temp folder: clean\n')
  } else {
    process.stdout.write(`temp folder: ${left.length} left behind: ${left.slice(0, 20).join(', ')}\n`)
  }
  if (signal !== null || stopping) process.exit(1)
  process.exit(code !== 0 ? code ?? 1 : left.length === 0 ? 0 : 1)
})
