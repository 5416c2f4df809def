package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/logtest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
)

// TestDevDemo runs the embedded federation as `yarnfed dev --demo
// --demo-apps 9` does and checks what a newcomer sees: every endpoint, a
// client configuration pointing at the router, and nine distinct
// applications routed by their queue's policy.
func TestDevDemo(t *testing.T) {
	cfg := defaultDevConfig()
	cfg.StoreAddr, cfg.RouterAddr, cfg.RouterWebAddr, cfg.RouterAdminAddr, cfg.GPGWebAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.Demo, cfg.DemoApps, cfg.DemoInterval = true, 9, time.Millisecond
	cfg.LogLevel = "error"
	var confDir, routerAddr string
	type adminAnswer struct {
		n   int
		err error
	}
	admin := make(chan adminAnswer, 1)
	cfg.ready = func(f *devFederation) {
		confDir, routerAddr = f.confDir, f.router.ClientRMAddr().String()
		// The router serves once ready returns: ask from the side, while
		// the demo runs.
		go func() {
			n, err := devAdminSubClusters(f)
			admin <- adminAnswer{n, err}
		}()
	}

	var out logtest.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := runDev(ctx, cfg, &out); err != nil {
		t.Fatalf("runDev: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"state store", "sc1", "sc3   simrm (HA standby)", "router", "gpg            status http://", "curl -s http://", "yarnfedctl --store-insecure --store"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}

	xml, err := os.ReadFile(filepath.Join(confDir, "yarn-site.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(xml), "<value>"+routerAddr+"</value>") {
		t.Errorf("yarn-site.xml does not point at the router %s:\n%s", routerAddr, xml)
	}

	// The admin port is served, printed and in the conf dir, so `yarn
	// routeradmin` works against dev: ask it for the sub-clusters as the
	// user dev runs as (the admin ACL's default).
	adminLine := regexp.MustCompile(`router admin\s+(127\.0\.0\.1:\d+)`).FindStringSubmatch(text)
	if adminLine == nil {
		t.Fatalf("output names no router admin address:\n%s", text)
	}
	if !strings.Contains(string(xml), "<name>yarn.router.rmadmin.address</name><value>"+adminLine[1]+"</value>") {
		t.Errorf("yarn-site.xml lacks yarn.router.rmadmin.address %s:\n%s", adminLine[1], xml)
	}
	if a := <-admin; a.err != nil || a.n != 3 {
		t.Errorf("getFederationSubClusters on the dev router's admin port: %d sub-clusters (want 3), %v", a.n, a.err)
	}

	// The AMRMProxy demo: one application gets containers from every
	// sub-cluster and finishes cleanly.
	span := regexp.MustCompile(`containers by sub-cluster: sc1 (\d+), sc2 (\d+), sc3 (\d+)`)
	m := span.FindStringSubmatch(text)
	if !strings.Contains(text, "Demo: one application spanning sub-clusters") || m == nil ||
		!strings.Contains(text, "isUnregistered=true") {
		t.Errorf("AMRMProxy demo did not span all sub-clusters:\n%s", text)
	} else {
		// The default queue splits the ask (6, two per sub-cluster by
		// weight) instead of broadcasting it (6 from each, 18).
		total := 0
		for _, n := range m[1:] {
			v, _ := strconv.Atoi(n)
			total += v
		}
		if total != 6 {
			t.Errorf("the span demo asked for 6 containers and got %d: the default queue's AMRM policy did not split the ask:\n%s", total, text)
		}
	}

	// One line per application: id, queue, home.
	line := regexp.MustCompile(`(?m)^\s+(application_\d+_\d+)\s+(default|analytics|etl)\s+(sc\d)\s`)
	rows := line.FindAllStringSubmatch(text, -1)
	if len(rows) != 9 {
		t.Fatalf("want 9 application lines, got %d:\n%s", len(rows), text)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r[1]] {
			t.Errorf("application id %s handed out twice", r[1])
		}
		seen[r[1]] = true
		// etl is PriorityBroadcast with sc3 weighted highest.
		if r[2] == "etl" && r[3] != "sc3" {
			t.Errorf("etl application %s landed on %s, want sc3 (highest priority)", r[1], r[3])
		}
	}
}

// TestDevGPG: the embedded GPG moves the analytics queue's weights from
// their seeded values toward each sub-cluster's headroom (sc3 has the most
// NodeManagers), and leaves the pinned etl queue as seeded.
func TestDevGPG(t *testing.T) {
	cfg := defaultDevConfig()
	cfg.StoreAddr, cfg.RouterAddr, cfg.RouterWebAddr, cfg.RouterAdminAddr, cfg.GPGWebAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.LogLevel = "error"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seeded, err := devPolicyConfigs([]string{"sc1", "sc2", "sc3"})
	if err != nil {
		t.Fatal(err)
	}
	seed := map[string][]byte{}
	for _, pc := range seeded {
		seed[pc.Queue] = pc.Params
	}
	var moved, etlKept bool
	var analytics string
	cfg.ready = func(f *devFederation) {
		go func() {
			defer cancel() // runDev returns once the check is done
			for ctx.Err() == nil {
				a, aerr := f.sc.GetPolicy(ctx, "analytics")
				e, eerr := f.sc.GetPolicy(ctx, "etl")
				if aerr == nil && eerr == nil && !bytes.Equal(a.GetParams(), seed["analytics"]) {
					info, err := policies.ParseWeightedPolicyInfo(a.GetParams())
					moved = err == nil && weightOf(info.RouterWeights, "sc3") > weightOf(info.RouterWeights, "sc1")
					etlKept = e.GetPinned() && bytes.Equal(e.GetParams(), seed["etl"])
					analytics = string(a.GetParams())
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	var out logtest.Buffer
	if err := runDev(ctx, cfg, &out); err != nil {
		t.Fatalf("runDev: %v\n%s", err, out.String())
	}
	if !moved || !etlKept {
		t.Fatalf("analytics moved toward sc3: %v (%s); etl pinned and unchanged: %v\n%s", moved, analytics, etlKept, out.String())
	}
}

func weightOf(ws []policies.Weight, id string) float32 {
	for _, w := range ws {
		if string(w.ID) == id {
			return w.Value
		}
	}
	return 0
}

// TestDevPoliciesAreValid builds every seeded policy through the policies
// registry for each supported federation size, so `yarnfed dev` can never
// start with a policy the router would refuse.
func TestDevPoliciesAreValid(t *testing.T) {
	for n := 2; n <= 9; n++ {
		var ids []string
		for i := 1; i <= n; i++ {
			ids = append(ids, fmt.Sprintf("sc%d", i))
		}
		cfgs, err := devPolicyConfigs(ids)
		if err != nil {
			t.Fatalf("%d sub-clusters: %v", n, err)
		}
		if len(cfgs) != 3 {
			t.Fatalf("%d sub-clusters: want 3 policies (default, analytics, etl), got %d", n, len(cfgs))
		}
		reg := policies.NewDefaultRegistry()
		for _, c := range cfgs {
			if _, err := reg.NewManager(c, policies.Env{}); err != nil {
				t.Errorf("%d sub-clusters: queue %s: %v", n, c.Queue, err)
			}
		}
	}
}

// devAdminSubClusters asks the running dev router's admin port for the
// sub-clusters, as `yarn routeradmin` would, as the user dev runs as (the
// admin ACL's default).
func devAdminSubClusters(f *devFederation) (int, error) {
	a := f.router.AdminAddr()
	if a == nil {
		return 0, errors.New("no admin port")
	}
	me, err := user.Current()
	if err != nil {
		return 0, err
	}
	ac, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{a.String()}, Protocol: hadoopipc.ProtocolRMAdmin, User: me.Username})
	if err != nil {
		return 0, err
	}
	defer ac.Close()
	scs := &yarnpb.GetSubClustersResponseProto{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ac.Call(ctx, "getFederationSubClusters", &yarnpb.GetSubClustersRequestProto{}, scs); err != nil {
		return 0, err
	}
	return len(scs.GetSubClusters()), nil
}
