#!/usr/bin/env bash
# Builds the real Kubernetes binaries yarnfed's tests start, from the Go module
# proxy, into a cache directory that CI and developers reuse:
#
#   ${YARNFED_CACHE:-$HOME/.cache/yarnfed}/kube/<kubernetes version>/
#     kube-apiserver etcd              internal/kubetest (an API server alone)
#     kube-controller-manager kube-scheduler kubelet kube-proxy
#                                      deploy/kubenode (a one-node cluster)
#     coredns                          deploy/kubenode's cluster DNS
#
# The versions are those pinned by the nested module hack/kube (go.mod and
# go.sum; its `tool` block names the six Kubernetes commands, ./coredns is
# CoreDNS with the plugins the cluster uses). A directory whose stamp matches
# that module (and the Go version) is reused as it is; anything else is
# rebuilt, so the cache is an optimisation, never a requirement. The
# directory is printed as the last line of output.
#
# All seven are built by ONE `go build` invocation: the packages they share
# (client-go, apiserver, the api types, grpc: most of the work, and about
# 450 of CoreDNS's 550) are compiled once and the links run in parallel.
# Measured times: deploy/DESIGN.md.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${YARNFED_CACHE:-$HOME/.cache/yarnfed}

mod=hack/kube
version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$mod/go.mod")
if [ -z "$version" ]; then
  echo "kube-binaries: no 'require k8s.io/kubernetes' line in $mod/go.mod" >&2
  exit 1
fi
dest=$cache/kube/$version
stamp=$(cat "$mod/go.mod" "$mod/go.sum" "$mod/coredns/main.go" <(go env GOVERSION) | sha256sum | cut -d' ' -f1)
# Output name <- package. `go build -o DIR/` names a binary after the last
# element of its import path, skipping a major-version suffix: etcd's
# go.etcd.io/etcd/server/v3 comes out as "server" and is renamed.
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy etcd coredns)
kube_pkgs=(
  k8s.io/kubernetes/cmd/kube-apiserver
  k8s.io/kubernetes/cmd/kube-controller-manager
  k8s.io/kubernetes/cmd/kube-scheduler
  k8s.io/kubernetes/cmd/kubelet
  k8s.io/kubernetes/cmd/kube-proxy
  go.etcd.io/etcd/server/v3
)
pkgs=("${kube_pkgs[@]}" ./coredns)

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

# check_release_versions fails unless every module the six Kubernetes
# commands are built from has its release's version: the one Kubernetes'
# go.mod names (its staging modules, which that go.mod replaces with
# ./staging, at the published v0.<minor>.<patch>), or for a module only the
# etcd command uses, the one etcd's go.mod names. hack/kube's go.mod pins the
# modules CoreDNS would otherwise raise; this catches a pin missing after a
# version moves, before twenty minutes of compiling a Kubernetes nobody
# released.
check_release_versions() {
  local kgomod egomod staging have
  kgomod=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$version" | awk -F'"' '$2 == "GoMod" {print $4}')
  egomod=$(cd "$mod" && go mod download -json "go.etcd.io/etcd/server/v3@$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)" |
    awk -F'"' '$2 == "GoMod" {print $4}')
  if [ ! -f "$kgomod" ] || [ ! -f "$egomod" ]; then
    echo "kube-binaries: no go.mod for k8s.io/kubernetes@$version or its etcd server" >&2
    exit 1
  fi
  staging=v0.${version#v1.}
  have=$(cd "$mod" && CGO_ENABLED=0 go list -deps \
    -f '{{with .Module}}{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}{{end}}' \
    "${kube_pkgs[@]}" | sort -u)
  awk -v staging="$staging" '
    # The two go.mod files, Kubernetes first: a module Kubernetes names
    # keeps its version; etcd fills in only the others.
    FILENAME != last { last = FILENAME; file++; inreq = inrep = 0 }
    file <= 2 {
      if ($1 == "module") { if (file == 1) self[$2] = 1; next }
      if ($1 == "require" && $2 == "(") { inreq = 1; next }
      if ($1 == "replace" && $2 == "(") { inrep = 1; next }
      if ($1 == ")") { inreq = inrep = 0; next }
      if ($1 == "require" && NF >= 3) { if (!($2 in want)) want[$2] = $3; next }
      if (inreq && NF >= 2) { if (!($1 in want)) want[$1] = $2; next }
      if (file == 1 && inrep && $2 == "=>" && $3 ~ /^\.\//) want[$1] = staging
      next
    }
    $1 in self { next }
    !($1 in want) { printf "kube-binaries: %s %s is in neither Kubernetes'"'"' nor etcd'"'"'s go.mod\n", $1, $2; bad = 1; next }
    want[$1] != $2 { printf "kube-binaries: %s is %s, the release names %s: pin it in hack/kube/go.mod\n", $1, $2, want[$1]; bad = 1 }
    END { exit bad }
  ' "$kgomod" "$egomod" <(printf '%s\n' "$have") >&2 || {
    echo "kube-binaries: hack/kube would build Kubernetes $version from other versions than its release's" >&2
    exit 1
  }
}
check_release_versions

# Static binaries (CGO_ENABLED=0: the kubelet too, as its release build does);
# the version stamp makes /version and the Node's kubeletVersion report the
# real release (a plain go build reports v0.0.0-master). etcd does not link
# that package, so the flag is a no-op for it. -s -w strips DWARF from the
# binaries, so -gcflags=all=-dwarf=false only saves the compiler making it
# (10% of a cold compile, deploy/DESIGN.md) and matches the Makefile's
# STATIC_FLAGS, so the standard library compiled here serves those builds too.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version"
start=$SECONDS
(cd "$mod" && CGO_ENABLED=0 go build -trimpath -gcflags=all=-dwarf=false -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}")
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
