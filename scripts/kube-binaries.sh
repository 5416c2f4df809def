#!/usr/bin/env bash
# Builds the real Kubernetes binaries yarnfed's tests start, from the Go module
# proxy, into a cache directory that CI and developers reuse:
#
#   ${YARNFED_CACHE:-$HOME/.cache/yarnfed}/kube/<kubernetes version>/
#     kube-apiserver etcd              internal/kubetest (an API server alone)
#     kube-controller-manager kube-scheduler kubelet kube-proxy
#                                      deploy/kubenode (a one-node cluster)
#   ${YARNFED_CACHE:-$HOME/.cache/yarnfed}/coredns/<coredns version>/
#     coredns                          deploy/kubenode's cluster DNS
#
# The versions are those pinned by the nested module hack/kube (go.mod and
# go.sum; its `tool` block names the six commands). A directory whose stamp
# matches that module (and the Go version) is reused as it is; anything else is
# rebuilt, so the cache is an optimisation, never a requirement. The directory
# is printed as the last line of output.
#
# All six are built by ONE `go build` invocation: the packages they share
# (client-go, apiserver, the api types: most of the work) are compiled once and
# the links run in parallel. Measured times: deploy/DESIGN.md.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${YARNFED_CACHE:-$HOME/.cache/yarnfed}

# CoreDNS: its own nested module (hack/coredns: upstream's server with the
# plugins the cluster uses), its own directory and stamp, the same scheme.
# It is small next to the kube build, and a separate module: its client-go
# is CoreDNS's version, not Kubernetes'.
build_coredns() {
  local mod=hack/coredns version dest stamp tmp start
  version=$(awk '$1 == "require" && $2 == "github.com/coredns/coredns" {print $3}' "$mod/go.mod")
  if [ -z "$version" ]; then
    echo "kube-binaries: no 'require github.com/coredns/coredns' line in $mod/go.mod" >&2
    exit 1
  fi
  dest=$cache/coredns/$version
  stamp=$(cat "$mod/go.mod" "$mod/go.sum" "$mod/main.go" <(go env GOVERSION) | sha256sum | cut -d' ' -f1)
  if [ -x "$dest/coredns" ] && [ "$(cat "$dest/.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "kube-binaries: reusing $dest" >&2
    return
  fi
  echo "kube-binaries: building coredns ($version) into $dest" >&2
  mkdir -p "$cache/coredns"
  tmp=$(mktemp -d "$cache/coredns/.build.XXXXXX")
  chmod 755 "$tmp"
  start=$SECONDS
  if ! (cd "$mod" && go mod download && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/coredns" .); then
    rm -rf "$tmp"
    exit 1
  fi
  echo "kube-binaries: coredns built in $((SECONDS - start)) s ($(($(stat -c %s "$tmp/coredns") / 1048576)) MB)" >&2
  echo "$stamp" >"$tmp/.stamp"
  rm -rf "$dest.old"
  [ -e "$dest" ] && mv "$dest" "$dest.old"
  mv "$tmp" "$dest"
  rm -rf "$dest.old"
}
build_coredns

mod=hack/kube
version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$mod/go.mod")
if [ -z "$version" ]; then
  echo "kube-binaries: no 'require k8s.io/kubernetes' line in $mod/go.mod" >&2
  exit 1
fi
dest=$cache/kube/$version
stamp=$(cat "$mod/go.mod" "$mod/go.sum" <(go env GOVERSION) | sha256sum | cut -d' ' -f1)
# Output name <- package. `go build -o DIR/` names a binary after the last
# element of its import path, skipping a major-version suffix: etcd's
# go.etcd.io/etcd/server/v3 comes out as "server" and is renamed.
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy etcd)
pkgs=(
  k8s.io/kubernetes/cmd/kube-apiserver
  k8s.io/kubernetes/cmd/kube-controller-manager
  k8s.io/kubernetes/cmd/kube-scheduler
  k8s.io/kubernetes/cmd/kubelet
  k8s.io/kubernetes/cmd/kube-proxy
  go.etcd.io/etcd/server/v3
)

complete() {
  local b
  for b in "${binaries[@]}"; do
    [ -x "$dest/$b" ] || return 1
  done
  [ "$(cat "$dest/.stamp" 2>/dev/null)" = "$stamp" ]
}

if complete; then
  echo "kube-binaries: reusing $dest" >&2
  echo "$dest"
  exit 0
fi

echo "kube-binaries: building ${binaries[*]} ($version) into $dest" >&2
mkdir -p "$cache/kube"
tmp=$(mktemp -d "$cache/kube/.build.XXXXXX")
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT

start=$SECONDS
(cd "$mod" && go mod download)
echo "kube-binaries: modules downloaded in $((SECONDS - start)) s" >&2

# Static binaries (CGO_ENABLED=0: the kubelet too, as its release build does);
# the version stamp makes /version and the Node's kubeletVersion report the
# real release (a plain go build reports v0.0.0-master). etcd does not link
# that package, so the flag is a no-op for it.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version"
start=$SECONDS
(cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}")
elapsed=$((SECONDS - start))
mv "$tmp/server" "$tmp/etcd"
for b in "${binaries[@]}"; do
  [ -x "$tmp/$b" ] || { echo "kube-binaries: go build left no $b" >&2; exit 1; }
done
echo "kube-binaries: ${#pkgs[@]} binaries built in one go build invocation in $elapsed s:" >&2
(cd "$tmp" && ls -l "${binaries[@]}" | awk '{printf "kube-binaries:   %-24s %4d MB\n", $NF, $5 / 1048576}' >&2)
echo "$stamp" >"$tmp/.stamp"

# Swap in whole: a reader never sees half a directory.
rm -rf "$dest.old"
[ -e "$dest" ] && mv "$dest" "$dest.old"
mv "$tmp" "$dest"
rm -rf "$dest.old"
trap - EXIT
echo "$dest"
