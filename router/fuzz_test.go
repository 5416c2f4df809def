package router_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/yarnfed/yarnfed/router"
)

func FuzzParseAppID(f *testing.F) {
	for _, s := range []string{"application_1700000000000_0001", "application_1_12345", "application__1", "app_1_1", "application_-1_1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := router.ParseAppID(s)
		if err != nil {
			return
		}
		// Round trip through Hadoop's text form.
		again, err := router.ParseAppID(router.AppIDString(id))
		if err != nil || again.GetId() != id.GetId() || again.GetClusterTimestamp() != id.GetClusterTimestamp() {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, id, router.AppIDString(id), again, err)
		}
	})
}

func FuzzLoadConfigFile(f *testing.F) {
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
		_ = router.LoadConfigFile(p, &c) // must not panic
		_ = c.Validate()
	})
}
