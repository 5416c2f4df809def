package subclusteragent

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/yarnfed/yarnfed/internal/config"
)

// Hadoop's default RM ports.
const (
	DefaultClientRMPort = 8032
	DefaultAMRMPort     = 8030
	DefaultAdminPort    = 8033
	DefaultWebPort      = 8088
)

// ParseRMEndpoint reads one --rm flag value: either a bare host (every
// service on Hadoop's default port) or a comma-separated key=host:port
// list with keys clientrm, amrm, admin, web; keys left out get the default
// port on the host of the first one given.
func ParseRMEndpoint(s string) (RMEndpoint, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return RMEndpoint{}, fmt.Errorf("empty RM endpoint")
	}
	if !strings.Contains(s, "=") {
		if strings.ContainsAny(s, ":,/[] \t") {
			return RMEndpoint{}, fmt.Errorf("RM endpoint %q: a bare value must be a host name; use clientrm=host:port,... for ports", s)
		}
		return withDefaults(RMEndpoint{}, s), nil
	}
	var ep RMEndpoint
	host := ""
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || v == "" {
			return RMEndpoint{}, fmt.Errorf("RM endpoint %q: %q is not key=host:port", s, kv)
		}
		h, p, err := net.SplitHostPort(v)
		if err != nil || h == "" {
			return RMEndpoint{}, fmt.Errorf("RM endpoint %q: %s=%q: want host:port", s, k, v)
		}
		if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
			return RMEndpoint{}, fmt.Errorf("RM endpoint %q: %s: bad port %q", s, k, p)
		}
		if host == "" {
			host = h
		}
		var dst *string
		switch k {
		case "clientrm":
			dst = &ep.ClientRM
		case "amrm":
			dst = &ep.AMRM
		case "admin":
			dst = &ep.Admin
		case "web":
			dst = &ep.Web
		default:
			return RMEndpoint{}, fmt.Errorf("RM endpoint %q: unknown key %q (want clientrm, amrm, admin, web)", s, k)
		}
		if *dst != "" {
			return RMEndpoint{}, fmt.Errorf("RM endpoint %q: %s given twice", s, k)
		}
		*dst = v
	}
	ep = withDefaults(ep, host)
	for _, a := range []string{ep.ClientRM, ep.AMRM, ep.Admin, ep.Web} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return RMEndpoint{}, fmt.Errorf("RM endpoint %q: %q is not host:port", s, a)
		}
	}
	return ep, nil
}

func withDefaults(ep RMEndpoint, host string) RMEndpoint {
	def := func(dst *string, port int) {
		if *dst == "" {
			*dst = net.JoinHostPort(host, strconv.Itoa(port))
		}
	}
	def(&ep.ClientRM, DefaultClientRMPort)
	def(&ep.AMRM, DefaultAMRMPort)
	def(&ep.Admin, DefaultAdminPort)
	def(&ep.Web, DefaultWebPort)
	return ep
}

// RMList is a sub-cluster's RMs. As a flag (--rm, repeated) each value is
// read by ParseRMEndpoint and appended.
type RMList []RMEndpoint

// Set appends one --rm value (pflag.Value).
func (l *RMList) Set(s string) error {
	ep, err := ParseRMEndpoint(s)
	if err != nil {
		return err
	}
	*l = append(*l, ep)
	return nil
}

// String lists the endpoints in --rm syntax (pflag.Value).
func (l *RMList) String() string {
	var parts []string
	for _, e := range *l {
		parts = append(parts, fmt.Sprintf("clientrm=%s,amrm=%s,admin=%s,web=%s", e.ClientRM, e.AMRM, e.Admin, e.Web))
	}
	return strings.Join(parts, " ")
}

// Type names the flag type in help output (pflag.Value).
func (l *RMList) Type() string { return "rm" }

// UnmarshalJSON reads an RM of a config file: a string in --rm syntax
// ("rm1.example.com", "clientrm=h:8032,...") or an object with clientrm,
// amrm, admin and web. Unknown keys are errors.
func (e *RMEndpoint) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		ep, err := ParseRMEndpoint(s)
		if err != nil {
			return err
		}
		*e = ep
		return nil
	}
	type plain RMEndpoint // no methods: no recursion
	var p plain
	if err := config.Decode(b, &p); err != nil {
		return err
	}
	*e = RMEndpoint(p)
	return nil
}
