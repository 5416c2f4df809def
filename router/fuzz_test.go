package router_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/yarnfed/yarnfed/internal/config/configtest"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{`{}`, `{"failover_wait":"1s","breaker":{"consecutive_failures":2}}`, `{"x":1}`, `[`} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "c.json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Skip()
		}
		c := router.DefaultConfig()
		_ = configtest.DecodeFile(p, &c) // must not panic
		_ = c.Validate()
	})
}

// FuzzRESTQuery: any query string on the list endpoints gets 200 or a 400
// RemoteException, never a server error or a panic.
func FuzzRESTQuery(f *testing.F) {
	for _, s := range []string{"states=RUNNING,accepted", "limit=2&user=alice", "states=BOGUS", "startedTimeBegin=5&startedTimeEnd=1", "states=%zz", "finalStatus=SUCCEEDED&applicationTags=a,b"} {
		f.Add("/ws/v1/cluster/apps", s)
		f.Add("/ws/v1/cluster/nodes", s)
	}
	fd := routertest.NewFed(f, 2, nil)
	h := fd.Router.Handler()
	f.Fuzz(func(t *testing.T, path, query string) {
		if path != "/ws/v1/cluster/apps" && path != "/ws/v1/cluster/nodes" {
			path = "/ws/v1/cluster/apps"
		}
		req := httptest.NewRequest("GET", "http://router"+path, nil)
		req.URL.RawQuery = query
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 && w.Code != 400 {
			t.Fatalf("%s?%s: HTTP %d %s", path, query, w.Code, w.Body.String())
		}
	})
}
