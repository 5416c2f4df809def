#!/usr/bin/env bash
# Runs every fuzz target in the module for a short time (FUZZTIME, default 3s).
# The seed corpora already run as ordinary tests; this smoke adds a few seconds
# of coverage-guided mutation per target so a decoder regression shows in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-3s}
count=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  for name in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    echo "fuzz-smoke: ./$dir $name ($fuzztime)"
    go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "./$dir"
    count=$((count + 1))
  done
done < <(grep -rlE --include='*_test.go' '^func Fuzz' . | sed 's|^\./||' | sort)
echo "fuzz-smoke: $count targets"
