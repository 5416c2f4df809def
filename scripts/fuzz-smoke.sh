#!/usr/bin/env bash
# Runs every fuzz target in the module briefly (FUZZTIME, default 1000x).
# The seed corpora already run as ordinary tests; this smoke adds a short burst
# of coverage-guided mutation per target so a decoder regression shows in CI.
#
# The budget is a count of executions, not a duration: with a wall-clock
# -fuzztime, Go 1.26's fuzz coordinator can fail a run at the deadline with a
# bare "context deadline exceeded" and no crasher when the machine is loaded
# (golang/go#75804, fixed in Go 1.27). A count never races a deadline.
#
# -parallel=1: one fuzz worker, not one per core. The budget is a count, so a
# second worker adds no executions, only its own start and baseline coverage
# run per target. No DWARF in the 68 instrumented test binaries: -ldflags=-w
# takes a quarter off each link and -gcflags=all=-dwarf=false 10% off the
# compile; nothing here reads it.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-1000x}
count=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  for name in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    echo "fuzz-smoke: ./$dir $name ($fuzztime)"
    go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" -parallel=1 -ldflags=-w -gcflags=all=-dwarf=false "./$dir"
    count=$((count + 1))
  done
done < <(grep -rlE --include='*_test.go' '^func Fuzz' . | sed 's|^\./||' | sort)
echo "fuzz-smoke: $count targets"
