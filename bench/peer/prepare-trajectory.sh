#!/usr/bin/env bash
# Makes a built Trajectory v0.6.0 backend for `npm run bench:peer`:
#   bench/peer/prepare-trajectory.sh <git repository or work tree> <out dir>
# A git repository (bare or not) gives the tree of its tag v0.6.0; a plain
# folder is taken as the checkout itself. Then, in <out dir>/backend, as its
# Dockerfile does: npm ci, the production build (tsc), and the development
# dependencies pruned. Prints the TRAJECTORY_DIR to use.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 <git repository or work tree> <out dir>" >&2
  exit 2
fi
source_dir=$1
out=$2
tag=v0.6.0

if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "$out exists and is not empty" >&2
  exit 1
fi
mkdir -p "$out"

if git -C "$source_dir" rev-parse --git-dir >/dev/null 2>&1 && git -C "$source_dir" rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
  git -C "$source_dir" archive "$tag" | tar -x -C "$out"
elif [ -f "$source_dir/backend/package.json" ]; then
  (cd "$source_dir" && tar -c --exclude=node_modules --exclude=dist --exclude=.git .) | tar -x -C "$out"
else
  echo "$source_dir is neither a git repository with the tag $tag nor a checkout with backend/" >&2
  exit 1
fi

cd "$out/backend"
# A .env here would be read at every start (dotenv): the bench sets all it needs.
rm -f .env
npm ci --no-audit --no-fund
npm run build
npm prune --omit=dev --no-audit --no-fund
test -f dist/index.js
echo "Built Trajectory's backend from $source_dir."
echo "TRAJECTORY_DIR=$(pwd)"
