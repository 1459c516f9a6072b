'use strict'
// postgres.js 3.4 can write to a connection whose socket is already gone,
// from a setImmediate callback, which throws past every caller and ends the
// process (porsager/postgres#1154, #1208). Until a release fixes it, the
// write settles the pending queries with CONNECTION_CLOSED instead.
// Runs after every install; it fails loudly when the code it mends changes.
const fs = require('node:fs')
const path = require('node:path')

const ORIGINAL = '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)\n'
const GUARDED = '  function nextWrite(fn) {\n' +
  '    if (!socket) {\n' +
  '      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n' +
  '      chunk = nextWriteTimer = null\n' +
  "      error(Errors.connection('CONNECTION_CLOSED', options))\n" +
  '      return false\n' +
  '    }\n' +
  '    const x = socket.write(chunk, fn)\n'

let root = path.dirname(require.resolve('postgres'))
while (!fs.existsSync(path.join(root, 'package.json'))) root = path.dirname(root)
for (const file of ['cjs/src/connection.js', 'src/connection.js']) {
  const target = path.join(root, file)
  if (!fs.existsSync(target)) continue
  const text = fs.readFileSync(target, 'utf8')
  if (text.includes(GUARDED)) continue
  if (!text.includes(ORIGINAL)) {
    console.error(`patch-postgres: ${target} has changed; check whether the nextWrite guard is still needed`)
    process.exit(1)
  }
  fs.writeFileSync(target, text.replace(ORIGINAL, GUARDED))
}
