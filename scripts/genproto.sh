#!/usr/bin/env bash
# Regenerates Go code from every .proto in the tree with the pinned tools:
# protoc-gen-go and protoc-gen-go-grpc come from go.mod's tool directives, and
# protoc must be the version named in PROTOC_VERSION (Debian bookworm's).
set -euo pipefail
cd "$(dirname "$0")/.."

PROTOC_VERSION="3.21.12"
have=$(protoc --version 2>/dev/null | awk '{print $2}') || true
if [ "$have" != "$PROTOC_VERSION" ]; then
  echo "genproto: need protoc $PROTOC_VERSION (apt-get install protobuf-compiler), have '${have:-none}'" >&2
  exit 1
fi

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
# With the image's build flags (the Makefile's STATIC, STATIC_FLAGS): a cold CI
# run then compiles the standard library and protobuf once for both.
CGO_ENABLED=0 go build -trimpath -buildvcs=false -gcflags=all=-dwarf=false -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
CGO_ENABLED=0 go build -trimpath -buildvcs=false -gcflags=all=-dwarf=false -o "$bin/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc

# Each proto root is compiled with itself as the only include path, so import
# lines and registered file names are relative to the root.
for root in internal/yarnpb statestore/storepb; do
  [ -d "$root" ] || continue
  files=$(cd "$root" && find . -name '*.proto' | sed 's|^\./||' | sort)
  [ -n "$files" ] || continue
  find "$root" -name '*.pb.go' -delete
  # Hadoop's services are Hadoop IPC, not gRPC: yarnpb keeps their descriptors
  # (the router checks it serves every method) but gets no gRPC stubs.
  grpc=(--plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" --go-grpc_out=. --go-grpc_opt=paths=source_relative)
  [ "$root" = internal/yarnpb ] && grpc=()
  (cd "$root" && protoc -I . \
    --plugin=protoc-gen-go="$bin/protoc-gen-go" \
    --go_out=. --go_opt=paths=source_relative \
    "${grpc[@]}" $files)
done
