package router_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/config/configtest"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*router.Config)
		wantErr string
	}{
		{"defaults with a store are valid", func(*router.Config) {}, ""},
		{"no store", func(c *router.Config) { c.Store = nil }, "store: required"},
		{"zero retries", func(c *router.Config) { c.SubmitRetries = 0 }, "submit_retries"},
		{"negative wait", func(c *router.Config) { c.FailoverWait = -1 }, "failover_wait"},
		{"zero call timeout", func(c *router.Config) { c.CallTimeout = 0 }, "call_timeout"},
		{"zero breaker threshold", func(c *router.Config) { c.Breaker.ConsecutiveFailures = 0 }, "breaker.consecutive_failures"},
		{"no REST read timeout", func(c *router.Config) { c.Web.ReadTimeout = 0 }, "web.read_timeout"},
		{"no REST connection cap", func(c *router.Config) { c.Web.MaxConns = 0 }, "web.max_conns"},
		{"no REST per-address cap", func(c *router.Config) { c.Web.MaxConnsPerAddr = 0 }, "web.max_conns_per_addr"},
		{"no REST header bound", func(c *router.Config) { c.Web.MaxHeaderBytes = 0 }, "web.max_header_bytes"},
		{"no IPC per-address cap", func(c *router.Config) { c.IPC.MaxConnsPerAddr = 0 }, "ipc.max_conns_per_addr"},
		{"handshake longer than idleness", func(c *router.Config) { c.IPC.HandshakeTimeout = router.Duration(time.Hour) }, "ipc.handshake_timeout"},
		{"pre-auth budget below one packet", func(c *router.Config) { c.IPC.PreAuthBufferBytes = 1024 }, "ipc.preauth_buffer_bytes"},
		{"unbounded RM clients", func(c *router.Config) { c.MaxRMClients = 0 }, "max_rm_clients"},
		{"proxy rule with a bad CIDR", func(c *router.Config) {
			c.Authz.ProxyUsers = map[string]hadoopipc.ProxyUserRule{"oozie": {Hosts: "10.0.0.0/40", Users: "*"}}
		}, "authz.proxy_users"},
		{"bad static group mapping", func(c *router.Config) { c.Authz.StaticGroupMapping = "alice" }, "authz.static_group_mapping"},
		{"negative app ACL cache", func(c *router.Config) { c.Authz.AppACLCacheSize = -1 }, "authz.app_acl_cache_size"},
		{"SPNEGO keytab missing", func(c *router.Config) { c.SPNEGO.Keytab = "/nonexistent/http.keytab" }, "spnego.keytab"},
		{"SPNEGO principal without keytab", func(c *router.Config) { c.SPNEGO.Principal = "HTTP/x@R" }, "spnego.principal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := router.DefaultConfig()
			c.Store = routertest.NewStore()
			tc.mod(&c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestDefaultsAreHadoops(t *testing.T) {
	c := router.DefaultConfig()
	if c.ClientRMAddress != "0.0.0.0:8050" || c.WebAddress != "0.0.0.0:8089" || c.SubmitRetries != 3 || c.RetryInterval.D() != 10*time.Millisecond || c.PartialResults {
		t.Fatalf("defaults drifted from Hadoop's: %+v", c)
	}
}

func TestLoadConfigFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"clientrm_address":"127.0.0.1:9050","partial_results":true,"failover_wait":"5s","breaker":{"open_for":"2s"}}`), 0o600)
	c := router.DefaultConfig()
	if err := configtest.DecodeFile(good, &c); err != nil {
		t.Fatal(err)
	}
	if c.ClientRMAddress != "127.0.0.1:9050" || !c.PartialResults || c.FailoverWait.D() != 5*time.Second || c.Breaker.OpenFor.D() != 2*time.Second || c.SubmitRetries != 3 {
		t.Fatalf("file not overlaid: %+v", c)
	}
	for name, body := range map[string]string{
		"typo.json":     `{"partial_result":true}`,
		"baddur.json":   `{"failover_wait":"soon"}`,
		"numdur.json":   `{"failover_wait":5}`,
		"notjson.json":  `clientrm_address=x`,
		"wrongtyp.json": `{"submit_retries":"3"}`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		c := router.DefaultConfig()
		if err := configtest.DecodeFile(p, &c); err == nil {
			t.Errorf("%s: accepted %s", name, body)
		}
	}
}
