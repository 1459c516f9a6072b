// Puts beside the compiled code what the built service reads at run time: the
// migrations (db/migrate.js finds them at ../migrations) and today's SQL
// functions (at ./functions), CDC's growth charts
// (io/growth-cdc.js finds them at ../growth/cdc), the vaccine schedules
// (io/schedules.js finds them at ../schedules) and a package.json that
// gives the version and keeps dist/ a CommonJS package.
const { cpSync, rmSync, writeFileSync } = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
const dist = path.join(root, 'dist')
const { name, version } = require(path.join(root, 'package.json'))

rmSync(path.join(dist, 'migrations'), { recursive: true, force: true })
cpSync(path.join(root, 'migrations'), path.join(dist, 'migrations'), { recursive: true })
rmSync(path.join(dist, 'db', 'functions'), { recursive: true, force: true })
cpSync(path.join(root, 'db', 'functions'), path.join(dist, 'db', 'functions'), { recursive: true })
rmSync(path.join(dist, 'growth', 'cdc'), { recursive: true, force: true })
cpSync(path.join(root, 'growth', 'cdc'), path.join(dist, 'growth', 'cdc'), { recursive: true })
rmSync(path.join(dist, 'schedules'), { recursive: true, force: true })
cpSync(path.join(root, 'schedules'), path.join(dist, 'schedules'), { recursive: true })
writeFileSync(path.join(dist, 'package.json'), JSON.stringify({ name, version, private: true, type: 'commonjs' }, null, 2) + '\n')
