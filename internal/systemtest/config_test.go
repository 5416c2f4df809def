package systemtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestConfigFiles: roles read a JSON config file, flags the operator sets
// win over it, and a misspelt key stops the process with an error naming
// the key (instead of silently running on a default).
func TestConfigFiles(t *testing.T) {
	h := newHarness(t)
	ports := freePorts(t, 7)
	grpc, raft, httpFile, httpFlag, cliFile, cliFlag, web := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5], ports[6]
	write := func(name, body string) string {
		p := filepath.Join(h.path("conf"), name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	storeConf := write("statestore.json", fmt.Sprintf(`{"node_id":"ss1","data_dir":%q,"grpc_address":%q,"raft_address":%q,
		"http_address":%q,"bootstrap":true,"insecure":true,"heartbeat_timeout":"500ms","election_timeout":"500ms"}`,
		h.path("data/ss1"), grpc, raft, httpFile))
	st := &storeCluster{h: h, nodes: []*storeNode{{id: "ss1", grpc: grpc, raft: raft, httpAddr: httpFlag}}}
	st.nodes[0].p = h.spawn("statestore-ss1", "statestore", "--config", storeConf, "--http-address", httpFlag)
	waitFor(t, 20*time.Second, "statestore ready on the --http-address flag's address", func() (bool, string) {
		if st.nodes[0].p.BindFailed() {
			t.Fatal("a port picked for this test was taken meanwhile (freePorts draws below the ephemeral range: another test took it)")
		}
		if dead, err := st.nodes[0].p.Exited(); dead {
			t.Fatalf("statestore exited: %v", err)
		}
		l, d := st.nodes[0].readyz()
		return l == "ss1", d
	})
	if code, _, err := httpGet("http://" + httpFile + "/readyz"); err == nil {
		t.Errorf("the config file's http_address %s answers (%d) although the flag overrides it", httpFile, code)
	}

	// The store connection comes from the file too (store, store_insecure).
	routerConf := write("router.json", fmt.Sprintf(`{"clientrm_address":%q,"web_address":%q,"partial_results":true,
		"membership_refresh":"200ms","breaker":{"consecutive_failures":2,"open_for":"1s"},"store":[%q],"store_insecure":true}`, cliFile, web, grpc))
	r := h.spawn("router-1", "router", "--config", routerConf, "--clientrm-address", cliFlag, "--admin-address", "")
	want := fmt.Sprintf("router: clientrm %s, web %s", cliFlag, web)
	waitFor(t, 20*time.Second, "router bound where file and flag say", func() (bool, string) {
		if r.BindFailed() {
			t.Fatal("a port picked for this test was taken meanwhile (freePorts draws below the ephemeral range: another test took it)")
		}
		if dead, err := r.Exited(); dead {
			t.Fatalf("router exited: %v", err)
		}
		return r.LogContains(want), "no line " + want
	})
	code, body, err := httpGet("http://" + web + "/readyz")
	if err != nil || code != 503 {
		t.Errorf("router /readyz with no sub-cluster: %d %s %v; want 503", code, body, err)
	}

	for _, c := range []struct {
		name, role, conf, key string
	}{
		{"router", "router", `{"partial_result":true}`, "partial_result"},
		{"statestore", "statestore", `{"node_id":"x","data_dir":"d","bootstrapp":true}`, "bootstrapp"},
		{"simrm", "simrm", `{"sim_am":{"hartbeat":"1s"}}`, "hartbeat"},
		{"subcluster-agent", "subcluster-agent", `{"subcluster_id":"SC-1","rms":["h"],"store_insecure":true,"probe_intervall":"1s"}`, "probe_intervall"},
		{"gpg", "gpg", `{"store_tls":{"cert_file":"c","key_file":"k","ca_file":"ca","crl_file":"x"}}`, "crl_file"},
	} {
		t.Run("misspelt key in "+c.name, func(t *testing.T) {
			p := h.spawn("bad-"+c.name, c.role, "--config", write("bad-"+c.name+".json", c.conf))
			waitFor(t, 20*time.Second, "the process to refuse its config", func() (bool, string) {
				dead, err := p.Exited()
				return dead && err != nil, fmt.Sprintf("exited %v (%v)", dead, err)
			})
			if !p.LogContains(c.key) {
				t.Errorf("error does not name the key %q:\n%s", c.key, p.Tail(5))
			}
		})
	}
}
