package hadoopipc

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"
)

// ClassAuthorization is the exception a Hadoop server sends (FATAL,
// FATAL_UNAUTHORIZED) when a connection's real user may not act for its
// effective user; Java clients rethrow it as an AccessControlException
// subclass.
const ClassAuthorization = "org.apache.hadoop.security.authorize.AuthorizationException"

// ProxyUserRule is one superuser's hadoop.proxyuser.<name>.{hosts,users,groups}.
// Users and Groups are comma lists of whom the superuser may act for ("*":
// anyone); Hosts is a comma list of IP addresses, CIDR ranges and host
// names it may connect from ("*": anywhere). An empty Hosts allows no
// host, so a rule without one authorizes nothing.
type ProxyUserRule struct {
	Hosts  string `json:"hosts"`
	Users  string `json:"users"`
	Groups string `json:"groups"`
}

// ProxyUsers authorizes connections whose real user differs from their
// effective user (a SIMPLE context with realUser, a Kerberos login acting
// for someone else), with the semantics of Hadoop's
// DefaultImpersonationProvider: the real user's short name selects the
// rule, the effective user must be listed by name or by one of its groups,
// and the peer's address must be in the rule's hosts. A superuser without
// a rule may impersonate no one. TOKEN logins are never checked: the token
// already names whom it stands for.
type ProxyUsers struct {
	rules  map[string]proxyRule
	groups GroupMapping
	// lookupAddr is the reverse lookup used for host-name entries
	// (replaced in tests).
	lookupAddr func(ctx context.Context, addr string) ([]string, error)
}

type proxyRule struct {
	anyone bool
	users  []string
	groups []string
	hosts  machineList
}

// NewProxyUsers builds the checker from rules keyed by superuser short
// name. groups resolves the effective user's groups (nil: UnixGroups).
func NewProxyUsers(rules map[string]ProxyUserRule, groups GroupMapping) (*ProxyUsers, error) {
	if groups == nil {
		groups = UnixGroups{}
	}
	p := &ProxyUsers{rules: make(map[string]proxyRule, len(rules)), groups: groups, lookupAddr: net.DefaultResolver.LookupAddr}
	for name, r := range rules {
		if name == "" || strings.ContainsAny(name, ". ") {
			return nil, fmt.Errorf("proxy user %q: not a user short name", name)
		}
		hosts, err := parseMachineList(r.Hosts)
		if err != nil {
			return nil, fmt.Errorf("proxy user %s hosts: %w", name, err)
		}
		users, groups := splitList(r.Users), splitList(r.Groups)
		pr := proxyRule{users: users, groups: groups, hosts: hosts}
		// As Hadoop's AccessControlList: "*" as either list allows all.
		pr.anyone = strings.TrimSpace(r.Users) == "*" || strings.TrimSpace(r.Groups) == "*"
		if !pr.anyone && (slices.Contains(users, "*") || slices.Contains(groups, "*")) {
			return nil, fmt.Errorf("proxy user %s: \"*\" must stand alone", name)
		}
		p.rules[name] = pr
	}
	return p, nil
}

// ShortName is the name Hadoop's default auth_to_local rule gives a
// principal: "router/host.example.com@REALM" -> "router".
func ShortName(principal string) string {
	if i := strings.IndexAny(principal, "/@"); i >= 0 {
		return principal[:i]
	}
	return principal
}

// IsProxied reports whether u is a connection acting for another user,
// the case Hadoop's Server.authorizeConnection sends to ProxyUsers.
func (u User) IsProxied() bool {
	return u.AuthMethod != authMethodToken && u.RealUser != "" && u.RealUser != u.Name
}

// AuthorizeConnection is a ServerConfig.AuthorizeConnection: it refuses a
// proxied connection its rule does not allow, with Hadoop's
// AuthorizationException and message, and allows every other one.
func (p *ProxyUsers) AuthorizeConnection(ctx context.Context, u User, remote net.Addr) error {
	if !u.IsProxied() {
		return nil
	}
	// Messages name the real user as Hadoop's UGI.getUserName does: the
	// full principal of a Kerberos login.
	realName := u.RealUser
	if u.Principal != "" {
		realName = u.Principal
	}
	r, ok := p.rules[ShortName(u.RealUser)]
	if !ok || !r.allowsUser(ShortName(u.Name), p.groups) {
		return fatal(fatalUnauthorized, ClassAuthorization, "User: %s is not allowed to impersonate %s", realName, u.Name)
	}
	ip := addrIP(remote)
	if ip == nil || !r.hosts.includes(ctx, ip, p.lookupAddr) {
		return fatal(fatalUnauthorized, ClassAuthorization, "Unauthorized connection for super-user: %s from IP %s", realName, ipString(ip, remote))
	}
	return nil
}

func (r proxyRule) allowsUser(name string, gm GroupMapping) bool {
	if r.anyone || slices.Contains(r.users, name) {
		return true
	}
	if len(r.groups) == 0 {
		return false
	}
	for _, g := range gm.Groups(name) {
		if slices.Contains(r.groups, g) {
			return true
		}
	}
	return false
}

// machineList is Hadoop's MachineList: "*", IP addresses, CIDR ranges and
// host names. Host names match a peer whose reverse lookup names them, or
// whose address they resolved to when the list was built.
type machineList struct {
	all   bool
	ips   []net.IP
	cidrs []*net.IPNet
	names []string
}

func parseMachineList(s string) (machineList, error) {
	var m machineList
	for _, e := range splitList(s) {
		switch {
		case e == "*":
			m.all = true
		case strings.Contains(e, "/"):
			_, n, err := net.ParseCIDR(e)
			if err != nil {
				return machineList{}, fmt.Errorf("%q: %w", e, err)
			}
			m.cidrs = append(m.cidrs, n)
		case net.ParseIP(e) != nil:
			m.ips = append(m.ips, net.ParseIP(e))
		default:
			m.names = append(m.names, canonicalHostName(e))
			// Resolve once now as well, so "localhost" or a name without
			// reverse DNS still matches; a name that does not resolve is
			// kept for the reverse-lookup match only.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			addrs, err := net.DefaultResolver.LookupIPAddr(ctx, e)
			cancel()
			if err == nil {
				for _, a := range addrs {
					m.ips = append(m.ips, a.IP)
				}
			}
		}
	}
	return m, nil
}

func (m machineList) includes(ctx context.Context, ip net.IP, lookup func(context.Context, string) ([]string, error)) bool {
	if m.all {
		return true
	}
	for _, x := range m.ips {
		if x.Equal(ip) {
			return true
		}
	}
	for _, n := range m.cidrs {
		if n.Contains(ip) {
			return true
		}
	}
	if len(m.names) == 0 || lookup == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	names, err := lookup(ctx, ip.String())
	if err != nil {
		return false
	}
	for _, n := range names {
		if slices.Contains(m.names, canonicalHostName(n)) {
			return true
		}
	}
	return false
}

func canonicalHostName(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func addrIP(a net.Addr) net.IP {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP
	case nil:
		return nil
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return nil
	}
	return net.ParseIP(host)
}

func ipString(ip net.IP, a net.Addr) string {
	if ip != nil {
		return ip.String()
	}
	if a == nil {
		return "unknown"
	}
	return a.String()
}
