#!/bin/sh
# The runtime folder: all a production host or the Docker image needs to run Parley. It holds the bundle
# (packages/server/dist, from `pnpm build`) and the few packages the bundle still loads from node_modules
# at run time:
#   @electric-sql/pglite, @electric-sql/pglite-pgvector   the embedded database (scripts/build.mjs leaves
#       them external: they load their WebAssembly and data files from beside their own modules)
# They are copied, symlinks followed, from the versions the lockfile installed. Nothing else of
# node_modules is needed: `node <dir>/dist/parley.mjs` runs every command and role.
#
# From the repository root, after `pnpm install --frozen-lockfile && pnpm build`:
#   sh scripts/assemble-runtime.sh /opt/parley/releases/2026-11-24
# Used by the Dockerfile, docs/deploy.md and scripts/docker-build-check.sh (CI checks the result runs).
set -eu
out=${1:?usage: sh scripts/assemble-runtime.sh <new or empty directory>}
server=packages/server
if [ ! -f "$server/dist/parley.mjs" ]; then
  echo "assemble-runtime: $server/dist/parley.mjs is missing: run pnpm build first" >&2
  exit 1
fi
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ]; then
  echo "assemble-runtime: $out is not empty" >&2
  exit 1
fi
mkdir -p "$out/node_modules/@electric-sql"
cp -R "$server/dist" "$out/dist"
for module in @electric-sql/pglite @electric-sql/pglite-pgvector; do
  cp -RL "$server/node_modules/$module" "$out/node_modules/$module"
done
echo "assemble-runtime: $out ($(du -sh "$out" | cut -f1)): node $out/dist/parley.mjs --help"
