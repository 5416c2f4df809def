// Package testenv decides what a test does when something it needs is not on
// the machine (a JDK, a KDC, a browser, a second loopback address): on a
// developer's machine it skips, saying what is missing; in CI it fails, so a
// test that cannot run is never counted as passed.
//
// CI is recognised by CI=true (what CI sets for .ci/run) or by the area's own
// *_REQUIRED variable set to 1, which a developer can set to check that a
// machine really runs everything.
//
// `make deadcode` lists the functions only tests call: the bench binary
// links this package through krbtest; they are kept on purpose.
package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"testing"
)

// Required reports whether a missing prerequisite must fail the test:
// in CI, or when envVar (e.g. YARNFED_KRB_REQUIRED) is 1.
func Required(envVar string) bool {
	if os.Getenv("CI") == "true" {
		return true
	}
	return envVar != "" && os.Getenv(envVar) == "1"
}

// Missing ends the test because a prerequisite is missing: t.Fatal when
// Required(envVar), else t.Skip naming what to install and the variable that
// turns the skip into a failure.
func Missing(t testing.TB, envVar, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required(envVar) {
		t.Fatalf("%s (required here: CI=true or %s=1)", msg, envVar)
	}
	if envVar != "" {
		msg += "; set " + envVar + "=1 to fail instead"
	}
	t.Skip(msg)
}

// SecondLoopback returns 127.0.0.2, for tests that need a client from
// another address than 127.0.0.1, after checking that this machine can bind
// it (Linux routes all of 127/8 to lo; some sandboxes and macOS do not).
// When it cannot, the test ends through Missing. Use it only for that
// check: an error of a later dial from the address is the test's own
// failure, never a reason to skip.
func SecondLoopback(t testing.TB) net.IP {
	t.Helper()
	ip := net.IPv4(127, 0, 0, 2)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		Missing(t, "", "cannot bind %s on this machine: %v", ip, err)
	}
	ln.Close()
	return ip
}

// FreeLoopbackAddrs returns n distinct 127.0.0.1 addresses whose ports were
// free a moment ago, for a server process the test starts later. The ports
// are drawn below the kernel's ephemeral range (ip_local_port_range), where
// the kernel never hands a port to an outgoing connection or a ":0" bind, so
// between our check and the server's bind only another test picking ports
// the same way could take one: rare, and a caller that sees a bind failure
// picks again.
func FreeLoopbackAddrs(t testing.TB, n int) []string {
	t.Helper()
	lo := ephemeralLow()
	var out []string
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			t.Fatalf("no free loopback port below %d after %d tries", lo, tries)
		}
		port := 10000 + rand.IntN(lo-10000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	return out
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default 32768 where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(string(b), &lo, &hi); err == nil && lo > 11000 {
			return lo
		}
	}
	return 32768
}
