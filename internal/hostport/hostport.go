// Package hostport reads host:port forms: the address lists the federation
// state store keeps for a sub-cluster's RM (a comma-separated host:port
// list, one entry per RM of an HA pair or group, in the RMs' order), and
// the host a connection comes from (what per-address limits key on).
package hostport

import (
	"net"
	"strings"
)

// SplitList is the addresses of a comma-separated list, each trimmed of
// spaces, empty entries dropped; nil for a list with none.
func SplitList(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// IP is the host part of a connection's remote address: the IP without
// the port for TCP, the host of any other host:port form, else the whole
// address string (unix sockets, pipes). Per-address connection limits
// and gates key on it, so one client cannot dodge a limit by opening
// connections from many ports.
func IP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}
