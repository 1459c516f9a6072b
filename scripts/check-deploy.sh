#!/usr/bin/env bash
# Checks the deployment files: the systemd units with `systemd-analyze verify`
# and `systemd-analyze security --offline=true` (overall exposure at most
# 1.5), the paths they run after a build, the settings they give the service,
# and the Containerfile through its test. Needs no network once systemd-analyze
# is installed. Says what it checked; exits non-zero when anything fails.
set -uo pipefail
cd "$(dirname "$0")/.."

MAX_EXPOSURE=1.5
INSTALL_DIR=/opt/child-health
SERVICES=(deploy/child-health.service deploy/child-health-backup.service deploy/child-health@.service)
UNITS=("${SERVICES[@]}" deploy/child-health-backup.timer)
# A template is checked as one of its instances.
instance_of () { local name; name=$(basename "$1"); echo "${name/@./@3001.}"; }
failures=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pass () { echo "ok: $*"; }
fail () { echo "FAILED: $*"; failures=$((failures + 1)); }

if ! command -v systemd-analyze >/dev/null; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "== installing systemd for systemd-analyze"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd >/dev/null
  fi
fi
if ! command -v systemd-analyze >/dev/null; then
  echo "FAILED: systemd-analyze is missing (install the systemd package)"
  echo "check:deploy: 1 failed"
  exit 1
fi
echo "== $(systemd-analyze --version | head -n 1)"

echo "== npm run build"
if npm run --silent build; then pass "the build produced dist/"; else fail "npm run build"; fi

echo "== the paths the units and deploy/child-health-cli run, after the build"
for file in "${SERVICES[@]}" deploy/child-health-cli; do
  for target in $(grep -vE '^\s*#' "$file" | grep -E '^Exec[A-Za-z]*=|/usr/bin/node' | grep -oE "$INSTALL_DIR/[^ ]+"); do
    local_path=${target#"$INSTALL_DIR"/}
    if [ -f "$local_path" ]; then pass "$file runs $target, and $local_path exists"; else fail "$file runs $target, but $local_path does not exist"; fi
  done
done
if sh -n deploy/child-health-cli; then pass "deploy/child-health-cli is a valid sh script"; else fail "deploy/child-health-cli has a syntax error"; fi

echo "== the settings the units and deploy/child-health.env.example give the service"
node --import tsx scripts/check-unit-settings.ts || failures=$((failures + 1))

# verify checks that each Exec*= program exists on this machine. The units name
# /usr/bin/node (Debian's nodejs package); where node lives elsewhere, the copy
# verified names this machine's node instead, and nothing else differs.
echo "== systemd-analyze verify"
node_path=$(command -v node)
for unit in "${UNITS[@]}"; do
  sed "s#/usr/bin/node #$node_path #g" "$unit" > "$work/$(basename "$unit")"
done
[ "$node_path" = /usr/bin/node ] || echo "note: node is at $node_path here, so the verified copies name it instead of /usr/bin/node"
# verify exits 0 on unknown or misspelled settings, so any word about our units counts as a failure.
names=()
for unit in "${UNITS[@]}"; do names+=("$(instance_of "$unit")"); done
verify=$(cd "$work" && systemd-analyze verify "${names[@]}" 2>&1)
verified=$?
complaints=$(grep -E 'child-health' <<<"$verify")
[ -z "$verify" ] || echo "$verify"
if [ "$verified" -eq 0 ] && [ -z "$complaints" ]; then
  pass "systemd-analyze verify ${UNITS[*]}: no complaint"
else
  fail "systemd-analyze verify ${UNITS[*]}"
fi

echo "== systemd-analyze security --offline=true"
for unit in "${SERVICES[@]}"; do
  report=$(cd "$work" && systemd-analyze security --offline=true "$(instance_of "$unit")" 2>&1)
  exposure=$(sed -nE 's/.*Overall exposure level for [^:]+: ([0-9.]+).*/\1/p' <<<"$report")
  if [ -z "$exposure" ]; then
    echo "$report"
    fail "$unit: no exposure level in the report"
  elif awk -v e="$exposure" -v max="$MAX_EXPOSURE" 'BEGIN { exit !(e <= max) }'; then
    pass "$unit: overall exposure $exposure (at most $MAX_EXPOSURE)"
  else
    echo "$report"
    fail "$unit: overall exposure $exposure is above $MAX_EXPOSURE"
  fi
done

echo "== Containerfile (test/containerfile.test.ts)"
# Run by node itself, not through npm test: the file needs neither the test
# database nor WHO's growth tables, so it needs no network either.
if TAP_TIMEOUT=240 node --import tsx test/containerfile.test.ts >"$work/containerfile.log" 2>&1; then
  pass "the Containerfile check: $(grep -E '^# \{ total' "$work/containerfile.log" | tail -n 1 | sed 's/^# //')"
else
  cat "$work/containerfile.log"
  fail "the Containerfile check (test/containerfile.test.ts)"
fi

if [ "$failures" -eq 0 ]; then
  echo "check:deploy: every check passed"
  exit 0
fi
echo "check:deploy: $failures check(s) failed"
exit 1
