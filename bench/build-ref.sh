#!/usr/bin/env bash
# Builds another commit of the service into a scratch directory, for a before/after comparison in one
# benchmark run:  npm run bench -- --against "$(bash bench/build-ref.sh HEAD~1)"
# Prints the directory. Uses this checkout's node_modules (same dependencies assumed).
set -euo pipefail
ref=${1:-HEAD}
root=$(git rev-parse --show-toplevel)
sha=$(git rev-parse --short "$ref")
dir=${TMPDIR:-/tmp}/petstore-ref-$sha
if [ ! -f "$dir/dist/src/main.js" ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  git -C "$root" archive "$sha" | tar -x -C "$dir"
  ln -s "$root/node_modules" "$dir/node_modules"
  # scripts/build.mjs where the commit has it (it also writes dist/openapi.json), else tsc alone.
  (cd "$dir" && if [ -f scripts/build.mjs ]; then node scripts/build.mjs >&2; else npx tsc -p . >&2; fi || true)
  [ -f "$dir/dist/src/main.js" ] || { echo "build of $ref failed" >&2; exit 1; }
fi
echo "$dir"
