package router

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// TestRMHTTPClientKeepsConnectionsPerRM: concurrent fan-outs to one RM
// reuse their connections. With Go's default transport (2 idle
// connections per host) every round of 8 concurrent calls re-dialled 6
// (8 + 4x6 = 32 connections for 5 rounds); the router's transport keeps
// rm_http.max_idle_conns_per_host per RM, so 8 connections serve them all.
func TestRMHTTPClientKeepsConnectionsPerRM(t *testing.T) {
	const rounds, concurrent = 5, 8
	var dials atomic.Int32
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	arrived := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		arrived++
		cond.Broadcast()
		// Wait for the round's other calls: all 8 are in flight together.
		for round := (arrived + concurrent - 1) / concurrent; arrived < round*concurrent; {
			cond.Wait()
		}
		mu.Unlock()
		_, _ = io.WriteString(w, `{"clusterMetrics":{}}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cfg := DefaultConfig()
	c := cfg.rmHTTPClient()
	defer c.CloseIdleConnections()
	for range rounds {
		var wg sync.WaitGroup
		// All 8 requests are in flight together (the handler answers only
		// once all have arrived), as 8 fan-outs calling one RM.
		for range concurrent {
			wg.Go(func() {
				resp, err := c.Get(srv.URL + "/ws/v1/cluster/metrics")
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		wg.Wait()
	}
	if n := dials.Load(); n > concurrent {
		t.Fatalf("%d connections for %d rounds of %d concurrent calls; want at most %d", n, rounds, concurrent, concurrent)
	}
}
