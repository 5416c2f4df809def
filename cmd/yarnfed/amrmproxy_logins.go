//go:build !ipcrelay

package main

import "github.com/yarnfed/yarnfed/amrmproxy"

// wireAMLogins decides how the proxy verifies AM logins. The design of
// record relays each AM's DIGEST-MD5 login to the home RM (hadoopipc's
// TokenRelay); until that lands in internal/hadoopipc, every login is
// refused with a message saying so: a proxy must never accept a login it
// cannot verify. Plugging the relay in is this one function (see
// amrmproxy/DESIGN.md, "Plugging in the relay"): once internal/hadoopipc has
// the relay, delete this file and the build tag of amrmproxy_logins_relay.go.
func wireAMLogins(cfg *amrmproxy.Config) {
	cfg.Secrets = amrmproxy.NoRelaySecrets{}
}
