package node

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/statestore/security"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("count descriptors: %v", err)
	}
	return len(ents)
}

// TestGRPCIdleConnectionFlood: 2,000 idle TCP connections from one address
// and 600 from the real client's own address, each reopened half a second
// after the replica closes it, against a TLS replica. The replica holds at most
// its pending-handshake bound of them (it used to hold every one for
// grpc-go's 120 s connection timeout, ~20,000 exhausted a replica's
// descriptors), /readyz answers, and a real client with a certificate is
// served from the flooded address.
func TestGRPCIdleConnectionFlood(t *testing.T) {
	if !canBind("127.0.0.2") {
		t.Fatal("cannot bind 127.0.0.2 (loopback /8 expected on Linux)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := newPKI(t)
	cfg := tlsConfig(t, p, "g1")
	cfg.Bootstrap = true
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	n := startLeader(t, ctx, cfg)
	defer n.Close()
	ready := func() bool {
		resp, err := http.Get("http://" + n.HTTPAddr() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	storetest.Poll(t, 20*time.Second, ready)

	// Descriptors before the flood; the flood's own sockets are counted
	// by the flood.
	base := openFDs(t)
	const other, same = 2000, 600
	f1 := startSilentFlood([]string{n.GRPCAddr()}, "127.0.0.2", other, 500*time.Millisecond)
	defer f1.stop()
	f2 := startSilentFlood([]string{n.GRPCAddr()}, "127.0.0.1", same, 500*time.Millisecond)
	defer f2.stop()
	storetest.Poll(t, 60*time.Second, func() bool { return f1.dials.Load() >= other && f2.dials.Load() >= same })

	held := func() int {
		f1.mu.Lock()
		f2.mu.Lock()
		mine := len(f1.conns) + len(f2.conns)
		f2.mu.Unlock()
		f1.mu.Unlock()
		return openFDs(t) - base - mine
	}
	// Each bound takes effect at accept. A sample can overcount (a flood
	// socket dialled but not yet in the flood's set looks like a replica
	// socket), so the least of a few samples is compared; without the
	// bounds every flood socket stays open for 120 s.
	least := -1
	for range 5 {
		if h := held(); least < 0 || h < least {
			least = h
		}
		time.Sleep(100 * time.Millisecond)
	}
	if limit := cfg.GRPCMaxPendingHandshakes + 64; least > limit {
		t.Fatalf("the replica holds ~%d flood sockets, want <= %d (max pending handshakes %d)", least, limit, cfg.GRPCMaxPendingHandshakes)
	}
	t.Logf("replica holds ~%d of %d flood sockets", least, other+same)
	if !ready() {
		storetest.Poll(t, 20*time.Second, ready)
	}
	st, _ := dialStubs(t, n.GRPCAddr(), p.client("ops", security.RoleAdmin))
	storetest.Poll(t, 30*time.Second, func() bool {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		_, err := st.GetVersion(cctx, &pb.GetVersionRequest{})
		return err == nil
	})
	if ev := counterSum(t, reg, "yarnfed_statestore_grpc_connections_refused_total", "reason", evictedPending); ev == 0 {
		t.Error("no pending connection evicted: the bound did not act")
	}
	if lim := counterSum(t, reg, "yarnfed_statestore_grpc_connection_limit", "limit", "max_pending_handshakes"); lim != float64(cfg.GRPCMaxPendingHandshakes) {
		t.Errorf("max_pending_handshakes in /metrics = %v, want %d", lim, cfg.GRPCMaxPendingHandshakes)
	}
}
