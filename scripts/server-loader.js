'use strict'
// dist/server.js, written by the build (scripts/bundle.js): it loads the
// bundled service, dist/start/server.js, and starts it.
//
// The build also loads the bundle as this file does, with the V8 flags of
// the systemd unit, and keeps V8's code of it in dist/start/server.cache
// after the bundle's SHA-256 (scripts/code-cache.js): the code of the whole
// bundle's top level and of every function that loading its modules ran. A
// start then reads that code instead of parsing and compiling it. V8 refuses
// code made by another Node.js or with other flags; a cache made for another
// bundle is not offered. Either way the bundle is compiled as any module is,
// and only the time is lost.
const { createHash } = require('node:crypto')
const { readFileSync } = require('node:fs')
const Module = require('node:module')
const path = require('node:path')
const vm = require('node:vm')

const BUNDLE = path.join(__dirname, 'start', 'server.js')
const CACHE = path.join(__dirname, 'start', 'server.cache')
const HASH_BYTES = 32

/** The bundle's SHA-256, which heads its cache. */
function hashOf (source) {
  return createHash('sha256').update(source).digest()
}

/** The cache's code, when it was made for this bundle. */
function cachedCode (source) {
  let cache
  try {
    cache = readFileSync(CACHE)
  } catch (error) {
    if (error.code === 'ENOENT') return { state: 'missing' }
    throw error
  }
  if (cache.length <= HASH_BYTES || !cache.subarray(0, HASH_BYTES).equals(hashOf(source))) return { state: 'stale' }
  return { state: 'offered', code: cache.subarray(HASH_BYTES) }
}

/**
 * Loads the bundle as the module dist/start/server.js, with V8's code of it
 * when `cachedData` is given: its modules load, and it starts nothing.
 */
function load (source, cachedData) {
  const script = new vm.Script(Module.wrap(source.toString('utf8')), {
    filename: BUNDLE,
    cachedData,
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER
  })
  const bundle = new Module(BUNDLE, module)
  bundle.filename = BUNDLE
  bundle.paths = Module._nodeModulePaths(path.dirname(BUNDLE))
  Module._cache[BUNDLE] = bundle
  script.runInThisContext()(bundle.exports, Module.createRequire(BUNDLE), bundle, BUNDLE, path.dirname(BUNDLE))
  bundle.loaded = true
  return { script, service: bundle.exports }
}

if (require.main === module) {
  const source = readFileSync(BUNDLE)
  const cached = cachedCode(source)
  const { script, service } = load(source, cached.code)
  /** What became of the cache, for a probe to read: used, refused by V8, stale or missing. */
  module.exports.codeCache = cached.state === 'offered' ? (script.cachedDataRejected === true ? 'refused' : 'used') : cached.state
  service.start()
} else {
  module.exports = { BUNDLE, CACHE, hashOf, load }
}
