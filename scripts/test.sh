#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine with Go:
#   installs what the tests need (GNU tar, zstd), checks formatting and vet,
#   then runs every test with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v zstd >/dev/null 2>&1 || need+=(zstd)
command -v tar >/dev/null 2>&1 || need+=(tar)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  fi
fi

echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then
  echo "gofmt would change:"; echo "$bad"; exit 1
fi
echo "== go vet"
go vet ./...
echo "== go test -race"
go test -race -timeout 15m ./...
