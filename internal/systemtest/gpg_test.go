package systemtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

type gpgProc struct {
	name string
	web  string
	p    *proc
}

// gpgStatus is the part of /gpg/v1/status the tests read.
type gpgStatus struct {
	ID      string             `json:"id"`
	Holding bool               `json:"holding"`
	Target  map[string]float64 `json:"targetWeights"`
	Cleaner string             `json:"lastCleanerResult"`
}

func (g *gpgProc) status() (gpgStatus, error) {
	var s gpgStatus
	code, body, err := httpGet("http://" + g.web + "/gpg/v1/status")
	if err != nil {
		return s, err
	}
	if code != 200 {
		return s, fmt.Errorf("status %d: %s", code, body)
	}
	return s, json.Unmarshal([]byte(body), &s)
}

func (h *harness) startGPG(name string, st *storeCluster, extra ...string) *gpgProc {
	h.t.Helper()
	g := &gpgProc{name: name}
	h.launch(name, 1, 20*time.Second, func(ports []string) []*proc {
		g.web = ports[0]
		args := append([]string{"gpg", "--id", name, "--store", st.addrs(), "--store-insecure", "--web-address", g.web,
			"--interval", "200ms", "--lease-ttl", "2s", "--subcluster-expiry", "4s",
			"--cleaner-interval", "500ms", "--cleaner-grace", "1s", "--cleaner-min-rm-uptime", "0s"}, extra...)
		g.p = h.spawn(name, args...)
		return []*proc{g.p}
	}, func() (bool, string) {
		code, body, err := httpGet("http://" + g.web + "/readyz")
		return err == nil && code == 200, fmt.Sprintf("%d %s %v", code, body, err)
	})
	return g
}

// TestGPGProcesses runs two `yarnfed gpg` processes beside a store, two
// simrm sub-clusters with agents and a router, and checks from outside:
// one GPG acts; a failed submission's home is cleaned, but not while an RM
// is down (YARN-11387); a silent agent's sub-cluster becomes SC_LOST and
// comes back when it heartbeats; SIGKILL the acting GPG and the other
// takes over; SIGKILL both and the router still routes.
func TestGPGProcesses(t *testing.T) {
	h := newHarness(t)
	st := h.startStore(1)
	rm1, rm2 := h.startSimRM("SC-1", 1_700_000_000_001), h.startSimRM("SC-2", 1_700_000_000_002)
	h.startAgent(rm1, st)
	h.startAgent(rm2, st)
	r := h.startRouter("router-1", st)
	a, b := h.startGPG("gpg-a", st), h.startGPG("gpg-b", st)
	gs := []*gpgProc{a, b}
	c := st.client(t)

	var acting, standby *gpgProc
	waitFor(t, 20*time.Second, "exactly one GPG acting, with weights for both sub-clusters", func() (bool, string) {
		var holders []*gpgProc
		var detail []string
		for _, g := range gs {
			s, err := g.status()
			if err != nil {
				return false, err.Error()
			}
			if s.Holding {
				holders = append(holders, g)
			}
			detail = append(detail, fmt.Sprintf("%s holding=%v target=%v", g.name, s.Holding, s.Target))
			if s.Holding && len(s.Target) != 2 {
				return false, strings.Join(detail, "; ")
			}
		}
		if len(holders) != 1 {
			return false, strings.Join(detail, "; ")
		}
		acting, standby = holders[0], a
		if acting == a {
			standby = b
		}
		return true, ""
	})
	waitFor(t, 10*time.Second, "the '*' policy written by the GPG", func() (bool, string) {
		p, err := c.GetPolicy(ctxT(t, 3*time.Second), "*")
		return err == nil && strings.Contains(string(p.GetParams()), "SC-2"), fmt.Sprint(p, err)
	})

	// YARN-11387: with SC-2's RM down, a home no RM knows is not deleted.
	ghost := func(id string) {
		if _, _, err := c.AddApplicationHome(ctxT(t, 5*time.Second), &pb.ApplicationHome{ApplicationId: id, HomeSubClusterId: "SC-1"}); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(id string) bool {
		_, err := c.GetApplicationHome(ctxT(t, 3*time.Second), id, false)
		return err == nil
	}
	rm2.p.Kill()
	ghost("application_1_0001")
	waitFor(t, 15*time.Second, "cleaner rounds that refuse to delete while SC-2's RM is down", func() (bool, string) {
		s, err := acting.status()
		return err == nil && strings.HasPrefix(s.Cleaner, "incomplete") && acting.p.LogContains("deleting nothing this round"), fmt.Sprint(s, err)
	})
	if !exists("application_1_0001") {
		t.Fatal("a home was deleted while an RM could not answer (YARN-11387)")
	}
	h.restart(rm2.p)
	waitFor(t, 20*time.Second, "the failed submission's home cleaned once every RM answers", func() (bool, string) {
		return !exists("application_1_0001"), "still there"
	})

	// An agent goes silent: its sub-cluster is marked lost, and comes back.
	signal(t, rm2.agent, syscall.SIGSTOP)
	waitFor(t, 20*time.Second, "SC-2 SC_LOST after its heartbeat expired", func() (bool, string) {
		info, err := c.GetSubCluster(ctxT(t, 3*time.Second), "SC-2")
		return err == nil && info.GetState() == pb.SubClusterState_SC_LOST, fmt.Sprint(info.GetState(), err)
	})
	signal(t, rm2.agent, syscall.SIGCONT)
	h.waitSubCluster(st, rm2, pb.SubClusterState_SC_RUNNING)

	// The acting GPG dies; the other takes over within the lease TTL.
	acting.p.Kill()
	waitFor(t, 15*time.Second, standby.name+" acting", func() (bool, string) {
		s, err := standby.status()
		return err == nil && s.Holding, fmt.Sprint(s, err)
	})

	// Every GPG down: the router still routes.
	standby.p.Kill()
	y := dialYARN(t, r.clientrm)
	for range 3 {
		y.submitNew()
	}
}
