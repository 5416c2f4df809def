#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd that gpg/kube's tests start
# (gpg/kube/kubetest), from the Go module proxy, into a cache directory that
# CI and developers reuse:
#
#   ${YARNFED_CACHE:-$HOME/.cache/yarnfed}/kube/<kubernetes version>/{kube-apiserver,etcd}
#
# The versions are those pinned by the nested module hack/kube (go.mod and
# go.sum). A directory whose stamp matches that module (and the Go version) is
# reused as it is; anything else is rebuilt, so the cache is an optimisation,
# never a requirement. The directory is printed as the last line of output.
#
# Cold (empty module and build caches, 2 cores): see gpg/kube/DESIGN.md.
set -euo pipefail
cd "$(dirname "$0")/.."

mod=hack/kube
version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$mod/go.mod")
if [ -z "$version" ]; then
  echo "kube-binaries: no 'require k8s.io/kubernetes' line in $mod/go.mod" >&2
  exit 1
fi
cache=${YARNFED_CACHE:-$HOME/.cache/yarnfed}
dest=$cache/kube/$version
stamp=$(cat "$mod/go.mod" "$mod/go.sum" <(go env GOVERSION) | sha256sum | cut -d' ' -f1)

if [ -x "$dest/kube-apiserver" ] && [ -x "$dest/etcd" ] && [ "$(cat "$dest/.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "kube-binaries: reusing $dest" >&2
  echo "$dest"
  exit 0
fi

echo "kube-binaries: building kube-apiserver $version and etcd into $dest" >&2
mkdir -p "$cache/kube"
tmp=$(mktemp -d "$cache/kube/.build.XXXXXX")
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT

# Static binaries; the version stamp makes /version report the real release
# (a plain go build reports v0.0.0-master).
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version"
start=$SECONDS
(cd "$mod" && go mod download)
echo "kube-binaries: modules downloaded in $((SECONDS - start)) s" >&2
start=$SECONDS
(cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
echo "kube-binaries: kube-apiserver built in $((SECONDS - start)) s" >&2
start=$SECONDS
(cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3)
echo "kube-binaries: etcd built in $((SECONDS - start)) s" >&2
echo "$stamp" >"$tmp/.stamp"

# Swap in whole: a reader never sees half a directory.
rm -rf "$dest.old"
[ -e "$dest" ] && mv "$dest" "$dest.old"
mv "$tmp" "$dest"
rm -rf "$dest.old"
trap - EXIT
echo "$dest"
