'use strict'
// The V8 flags a systemd unit starts the service with: the words of its
// ExecStart= line that begin with `--`. The build compiles the bundle with
// those of deploy/child-health.service (scripts/code-cache.js), the bench
// starts the service with them, and the Containerfile's CMD repeats them.
const { readFileSync } = require('node:fs')
const path = require('node:path')

const ROOT = path.join(__dirname, '..')

/** The V8 flags of the unit's ExecStart= line; `unit` is relative to the project. */
function unitFlags (unit = path.join('deploy', 'child-health.service')) {
  const text = readFileSync(path.join(ROOT, unit), 'utf8')
  const start = /^ExecStart=(\S+)\s+(.*)$/m.exec(text)
  if (start === null) throw new Error(`${unit} has no ExecStart= line`)
  return start[2].split(/\s+/).filter(word => word.startsWith('--'))
}

module.exports = { unitFlags }
