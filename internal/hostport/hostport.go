// Package hostport reads the address lists the federation state store
// keeps for a sub-cluster's RM: a comma-separated host:port list, one
// entry per RM of an HA pair or group, in the RMs' order.
package hostport

import "strings"

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
