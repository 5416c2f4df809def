package routertest

import (
	"context"
	"net"
	"testing"

	"github.com/yarnfed/yarnfed/router"
)

// StartRouter builds a router from cfg (on a loopback client port when
// cfg has no ClientListener) and runs it until the test ends; a Run that
// ends with an error fails the test.
func StartRouter(t testing.TB, cfg router.Config) *router.Router {
	t.Helper()
	if cfg.ClientListener == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg.ClientListener = ln
	}
	r, err := router.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("router Run: %v", err)
		}
	})
	return r
}
