package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/statestore/store"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// fixedNow is the clock the CLI sees in tests; seeded heartbeats and
// creation times are relative to it so tables are byte-stable.
var fixedNow = time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)

// harness is one in-process single-replica state store (real Raft, real
// gRPC on loopback) and a way to run yarnfedctl against it.
type harness struct {
	t   *testing.T
	c   *storetest.Cluster
	env map[string]string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	// storetest replicas are plaintext: say so, as an operator of a test
	// federation must.
	return &harness{t: t, c: storetest.NewCluster(t, 1), env: map[string]string{"YARNFED_STORE_INSECURE": "1"}}
}

type result struct {
	out, err string
	code     int
}

// run runs one command line in-process, like the binary would.
func (h *harness) run(args ...string) result { return h.runIn("", args...) }

func (h *harness) runIn(stdin string, args ...string) result {
	h.t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--store", h.c.Nodes[0].Addr, "--timeout", "10s"}, args...)
	code := run(context.Background(), full, streams{in: strings.NewReader(stdin), out: &out, err: &errb},
		func(k string) string { return h.env[k] }, func() time.Time { return fixedNow })
	return result{out.String(), errb.String(), code}
}

// ok runs a command that must succeed and returns its stdout.
func (h *harness) ok(args ...string) string {
	h.t.Helper()
	r := h.run(args...)
	if r.code != exitOK {
		h.t.Fatalf("yarnfedctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.out, r.err)
	}
	return r.out
}

func (h *harness) store() *store.Store { return h.c.Nodes[h.c.Leader()].Store }

// propose writes a stamped command straight into Raft, so tests control
// the times the store would otherwise take from the leader's clock.
func (h *harness) propose(t store.CommandType, m proto.Message) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.store().Propose(ctx, t, m); err != nil {
		h.t.Fatalf("propose %d: %v", t, err)
	}
}

func (h *harness) addSubCluster(id string, state pb.SubClusterState, heartbeatAgo time.Duration, capability string) {
	h.t.Helper()
	n := strings.TrimPrefix(id, "SC-")
	info := &pb.SubClusterInfo{
		SubClusterId: id, State: state, Capability: capability,
		AmrmServiceAddress: "rm" + n + ":8030", ClientRmServiceAddress: "rm" + n + ":8032",
		RmAdminServiceAddress: "rm" + n + ":8033", RmWebServiceAddress: "rm" + n + ":8088",
		LastStartTimeMs: fixedNow.Add(-24 * time.Hour).UnixMilli(),
	}
	h.propose(store.CmdRegisterSubCluster, &pb.RegisterSubClusterCommand{Info: info, NowMs: fixedNow.Add(-heartbeatAgo).UnixMilli()})
}

func (h *harness) addApp(id, home string, createdAgo time.Duration) {
	h.t.Helper()
	h.propose(store.CmdAddApplicationHome, &pb.AddApplicationHomeCommand{
		Home: &pb.ApplicationHome{ApplicationId: id, HomeSubClusterId: home}, NowMs: fixedNow.Add(-createdAgo).UnixMilli()})
}

func (h *harness) policy(queue string) *pb.PolicyConfiguration {
	h.t.Helper()
	p, err := h.store().GetPolicy(queue)
	if err != nil {
		h.t.Fatalf("policy %s: %v", queue, err)
	}
	return p
}

// aligned is a table laid out the way yarnfedctl's tables promise
// (output.go): each column as wide as its widest cell plus two spaces, the
// last column unpadded, one line per row. Tests write the expected cells by
// hand and compare with it, so no expectation is our own output.
func aligned(rows ...[]string) string {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// sameTable fails the test when got is not the table want.
func sameTable(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s:\ngot:\n%s\nwant:\n%s", what, got, want)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFormatAge(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
		want string
	}{
		{"negative (clock skew)", -time.Second, "0s"},
		{"zero", 0, "0s"},
		{"seconds", 59*time.Second + 900*time.Millisecond, "59s"},
		{"minutes", 3*time.Minute + 12*time.Second, "3m12s"},
		{"hours", 5*time.Hour + 7*time.Minute + 30*time.Second, "5h7m"},
		{"days", 12*24*time.Hour + 4*time.Hour + time.Minute, "12d4h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := formatAge(tc.d); got != tc.want {
				t.Fatalf("formatAge(%v) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
}

func TestParseStoreAddrs(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		bad      bool
	}{
		{"one", "127.0.0.1:9090", []string{"127.0.0.1:9090"}, false},
		{"several with blanks", " a:1, b:2 ,,", []string{"a:1", "b:2"}, false},
		{"ipv6", "[::1]:9090", []string{"[::1]:9090"}, false},
		{"no port", "host", nil, true},
		{"empty port", "host:", nil, true},
		{"empty", " , ", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStoreAddrs(tc.in)
			if (err != nil) != tc.bad || strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("parseStoreAddrs(%q) = %q, %v", tc.in, got, err)
			}
		})
	}
}

func TestParseState(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want pb.SubClusterState
	}{
		{"SC_LOST", pb.SubClusterState_SC_LOST},
		{"decommissioned", pb.SubClusterState_SC_DECOMMISSIONED},
		{" Unregistered ", pb.SubClusterState_SC_UNREGISTERED},
		{"2", pb.SubClusterState_SC_RUNNING},
	} {
		if got, err := parseState(tc.in); err != nil || got != tc.want {
			t.Errorf("parseState(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "SC_", "LOSTT", "0", "8", "SUB_CLUSTER_STATE_UNSPECIFIED"} {
		if got, err := parseState(in); err == nil {
			t.Errorf("parseState(%q) = %v, want an error", in, got)
		}
	}
}

// FuzzParseStoreAddrs: whatever --store holds, the parser neither panics
// nor returns an address the dialer would choke on.
func FuzzParseStoreAddrs(f *testing.F) {
	for _, s := range []string{"127.0.0.1:9090", "a:1,b:2", "[::1]:1", ":", ",,", "h:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addrs, err := parseStoreAddrs(s)
		if err == nil && len(addrs) == 0 {
			t.Fatal("no error and no address")
		}
		for _, a := range addrs {
			if a == "" || strings.Contains(a, ",") {
				t.Fatalf("bad address %q from %q", a, s)
			}
		}
	})
}
