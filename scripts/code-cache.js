// A step of `npm run build`, after the bundle: loads dist/start/server.js as
// dist/server.js does (scripts/server-loader.js), with the V8 flags the
// systemd unit and the Containerfile start the service with, but starts
// nothing, and writes V8's code of it to dist/start/server.cache after the
// bundle's SHA-256: the top level and every function that loading the
// bundle's modules compiled. V8 takes the code only with the flags and the
// Node.js it was made with.
'use strict'
const { spawnSync } = require('node:child_process')
const { readFileSync, writeFileSync } = require('node:fs')
const path = require('node:path')
const { unitFlags } = require('./unit-flags')

const root = path.join(__dirname, '..')

const flags = unitFlags()
if (process.execArgv.join(' ') !== flags.join(' ')) {
  const again = spawnSync(process.execPath, [...flags, __filename], { stdio: 'inherit' })
  process.exit(again.status ?? 1)
}

const { BUNDLE, CACHE, hashOf, load } = require(path.join(root, 'dist', 'server.js'))
const source = readFileSync(BUNDLE)
const { script, service } = load(source, undefined)
if (typeof service.start !== 'function') throw new Error('the bundle does not export start()')
const code = script.createCachedData()
writeFileSync(CACHE, Buffer.concat([hashOf(source), code]))
process.stdout.write(`loaded the bundle with ${flags.join(' ') || 'no flags'}: ${Math.round(code.length / 1024)} KB of V8's code in dist/start/server.cache\n`)
// Nothing of the loaded service is to run.
process.exit(0)
