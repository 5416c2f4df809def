package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/internal/rmrest/spnegotest"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// TestAgentAndGPGCommandsWithKeytabs runs `yarnfed subcluster-agent` and
// `yarnfed gpg` in process, each logged in from a keytab by its flags,
// against a simrm whose REST API takes only SPNEGO (tickets from a real
// MIT KDC): the agent registers the sub-cluster, and the GPG's cleaner,
// listing the RM's applications through SPNEGO, deletes a failed
// submission's home.
func TestAgentAndGPGCommandsWithKeytabs(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	httpKT := kdc.AddService(t, "HTTP/localhost")
	kt := kdc.AddService(t, "yarnfed/localhost")
	krbFlags := []string{"--kerberos-principal", kdc.Principal("yarnfed/localhost"), "--kerberos-keytab", kt, "--krb5-conf", kdc.ConfPath}

	cl := storetest.NewCluster(t, 1)
	sc := cl.Client()
	store := strings.Join(cl.Addrs(), ",")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rcfg := simrm.TestConfig()
	rcfg.ClusterID = "SC-K"
	rm, err := simrm.New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rm.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rm.Close() })
	ep := spnegotest.New(spnegotest.Proxy(rm.Addrs().Web), kdc.Keytab(t, httpKT), "HTTP/localhost")
	web := ep.Serve(t)

	run := func(name string, cmd *cobra.Command, args ...string) {
		cmd.SetOut(io.Discard)
		cmd.SetArgs(args)
		cctx, ccancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- cmd.ExecuteContext(cctx) }()
		t.Cleanup(func() {
			ccancel()
			if err := <-done; err != nil {
				t.Errorf("yarnfed %s: %v", name, err)
			}
		})
	}
	a := rm.Addrs()
	run("subcluster-agent", newSubclusterAgentCmd(), append([]string{"--store", store, "--store-insecure", "--log-level", "warn",
		"--subcluster-id", "SC-K", "--rm", fmt.Sprintf("clientrm=%s,amrm=%s,admin=%s,web=%s", a.Client, a.Scheduler, a.Admin, web),
		"--probe-interval", "50ms"}, krbFlags...)...)
	storetest.Poll(t, 20*time.Second, func() bool {
		l, err := sc.ListSubClusters(ctx, true)
		return err == nil && len(l) == 1 && l[0].GetState() == storepb.SubClusterState_SC_RUNNING && l[0].GetRmWebServiceAddress() == web
	})

	const ghost = "application_1700000000000_0042" // a failed submission's home
	if _, _, err := sc.AddApplicationHome(ctx, &storepb.ApplicationHome{ApplicationId: ghost, HomeSubClusterId: "SC-K"}); err != nil {
		t.Fatal(err)
	}
	run("gpg", newGPGCmd(), append([]string{"--store", store, "--store-insecure", "--log-level", "warn", "--web-address", "",
		"--id", "gpg-k", "--interval", "100ms", "--lease-ttl", "1s", "--cleaner-interval", "100ms", "--cleaner-grace", "0s",
		"--cleaner-min-rm-uptime", "0s"}, krbFlags...)...)
	storetest.Poll(t, 20*time.Second, func() bool {
		_, err := sc.GetApplicationHome(ctx, ghost, false)
		return errors.Is(err, client.ErrNotFound)
	})
	// The agent's and the GPG's own logins each negotiated; nothing was
	// refused.
	if tok, ref := ep.Tokens.Load(), ep.Refused.Load(); tok < 2 || ref != 0 {
		t.Fatalf("SPNEGO tokens %d, refused %d", tok, ref)
	}
}
