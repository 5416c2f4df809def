// Command coredns is CoreDNS (github.com/coredns/coredns, the version go.mod
// pins) with only the plugins deploy/test/kubenode's cluster DNS uses, in
// CoreDNS's own order: what upstream's plugin.cfg mechanism produces for that
// list, without the cloud back ends (route53, azure, clouddns, etcd, nomad,
// ...) whose dependencies would triple the build. The server is upstream's
// coremain, unchanged. scripts/kube-binaries.sh builds it in the same go
// build as the Kubernetes binaries, against Kubernetes' versions of the
// modules they share (hack/kube/go.mod says why).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins, each registering itself with the server.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives is upstream's core/dnsserver/zdirectives.go order restricted to
// the plugins above (the order a Corefile's plugins run in is this list's,
// not the file's).
var directives = []string{"bind", "ready", "health", "errors", "log", "cache", "kubernetes"}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
