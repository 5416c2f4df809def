package router_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// slowMembershipStore is a fake store whose membership reads wait for
// release: a state store that is not reachable yet.
type slowMembershipStore struct {
	*routertest.Store
	release chan struct{}
}

func (s slowMembershipStore) GetSubClusters(ctx context.Context, activeOnly bool) ([]router.SubClusterInfo, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.GetSubClusters(ctx, activeOnly)
}

// TestHealthWhileStoreUnreachable: the router answers /healthz while its
// first membership read is still waiting on the store, and /readyz says it
// is not ready; once the store answers, it becomes ready. It used to read
// membership before serving anything, so a liveness probe timed out.
func TestHealthWhileStoreUnreachable(t *testing.T) {
	store := slowMembershipStore{Store: routertest.NewStore(), release: make(chan struct{})}
	store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "127.0.0.1:1", State: router.StateRunning})
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := router.DefaultConfig()
	cfg.ClientListener, cfg.WebListener, cfg.Store = cl, wl, store
	routertest.StartRouter(t, cfg)

	base := "http://" + wl.Addr().String()
	get := func(path string) (int, string) {
		c := &http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s while the store is unreachable: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before the store answered: %d %s, want 503", code, body)
	}
	close(store.release)
	routertest.Poll(t, "router ready once the store answers", func() bool { code, _ := get("/readyz"); return code == http.StatusOK })
}
