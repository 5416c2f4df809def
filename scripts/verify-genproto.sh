#!/usr/bin/env bash
# Fails when the committed generated code differs from what the .proto files
# produce (modelled on etcd's verify_genproto.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/genproto.sh
if ! git diff --exit-code -- '*.pb.go' >/dev/null || [ -n "$(git status --porcelain -- '*.pb.go')" ]; then
  echo "verify-generate: generated code is stale; run 'make generate' and commit:" >&2
  git status --porcelain -- '*.pb.go' >&2
  exit 1
fi
