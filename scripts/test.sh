#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine with Go:
#   installs what the tests need (GNU tar, zstd, age, PostgreSQL, MariaDB, Chromium for
#   the web console's browser tests, and the versitygw S3 server the object-storage tape
#   tests run against), checks formatting and vet,
#   then runs every test with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v zstd >/dev/null 2>&1 || need+=(zstd)
command -v tar >/dev/null 2>&1 || need+=(tar)
# age: the stock-tool recipe of an encrypted saveset is tested with it.
command -v age >/dev/null 2>&1 || need+=(age)
# PostgreSQL: internal/pgtest starts a throwaway cluster with initdb/pg_ctl.
[ -n "${KURA_POSTGRES_BIN:-}" ] || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
# MariaDB: internal/mariadbtest starts a throwaway server (the mariadb plug-in's tests).
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server mariadb-backup)
# Chromium: the web console's browser tests (internal/console/browsertest).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  fi
fi

# versitygw (Apache-2.0), pinned: internal/tape/s3tape's tests start it on
# 127.0.0.1 over a temporary folder. Installed once into a cache folder
# (a minute or more to build); the tests find it through KURA_VERSITYGW.
versitygw_version=v1.8.0
gw_dir="${XDG_CACHE_HOME:-$HOME/.cache}/kura-test/versitygw-$versitygw_version"
if [ ! -x "$gw_dir/versitygw" ]; then
  echo "== go install versitygw@$versitygw_version into $gw_dir"
  mkdir -p "$gw_dir"
  GOBIN="$gw_dir" go install "github.com/versity/versitygw/cmd/versitygw@$versitygw_version"
fi
export KURA_VERSITYGW="$gw_dir/versitygw"

echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then
  echo "gofmt would change:"; echo "$bad"; exit 1
fi
echo "== go vet"
go vet ./...
echo "== go test -race"
go test -race -timeout 15m ./...
