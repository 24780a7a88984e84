#!/usr/bin/env bash
# Native Postgres for the test suite's `postgres` project (vitest.config.ts): Debian's Postgres 15 and
# pgvector 0.8.6 built from vendor/ (Debian has no pgvector package). Idempotent: installs only what is
# missing; the compiled extension is cached in ~/.cache/parley (PARLEY_CACHE_DIR) so a rerun only copies
# it into place. Needs root (or sudo) to install; the suite itself runs the server as an unprivileged user.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_VERSION=15
PGVECTOR=pgvector-0.8.6
PG_CONFIG="/usr/lib/postgresql/$PG_VERSION/bin/pg_config"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

server_headers() { [ -x "$PG_CONFIG" ] && [ -f "$("$PG_CONFIG" --includedir-server)/postgres.h" ]; }
if [ ! -x "/usr/lib/postgresql/$PG_VERSION/bin/postgres" ] || ! server_headers || ! command -v make >/dev/null 2>&1 || ! command -v gcc >/dev/null 2>&1; then
  $SUDO apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    "postgresql-$PG_VERSION" "postgresql-server-dev-$PG_VERSION" build-essential
fi

control="$("$PG_CONFIG" --sharedir)/extension/vector.control"
if [ ! -f "$control" ]; then
  cache="${PARLEY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/parley}/$PGVECTOR-pg$PG_VERSION"
  if [ ! -f "$cache/vector.so" ]; then
    rm -rf "$cache"
    mkdir -p "$(dirname "$cache")"
    tmp="$(mktemp -d)"
    tar -xzf "vendor/$PGVECTOR.tar.gz" -C "$tmp"
    make -s -C "$tmp/$PGVECTOR" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" -j "$(nproc)" >/dev/null
    mv "$tmp/$PGVECTOR" "$cache"
    rm -rf "$tmp"
  fi
  $SUDO make -s -C "$cache" PG_CONFIG="$PG_CONFIG" install >/dev/null
fi
echo "native Postgres: $("$PG_CONFIG" --version), pgvector $(sed -n "s/^default_version = '\(.*\)'/\1/p" "$control")"
