package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/subclusteragent"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// TestRouterWithRealStore wires what `yarnfed router` and
// `yarnfed subcluster-agent` wire, in process: a 3-replica Raft state
// store, two simrm sub-clusters with agents, and two routers side by side.
// A YARN client submits through one router and reads through the other;
// the store's queue policy decides the home.
func TestRouterWithRealStore(t *testing.T) {
	cl := storetest.NewCluster(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	for i, id := range []string{"SC-1", "SC-2"} {
		cfg := simrm.TestConfig()
		cfg.ClusterID, cfg.ClusterTimestamp = id, 1_700_000_000_000+int64(i)
		cfg.SimAM.ContainerRuntime = time.Hour
		rm, err := simrm.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := rm.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rm.Close() })
		a := rm.Addrs()
		acfg := subclusteragent.DefaultConfig()
		acfg.SubClusterID, acfg.Store = id, subclusteragent.NewClientStore(cl.Client())
		acfg.RMs = []subclusteragent.RMEndpoint{{ClientRM: a.Client, AMRM: a.Scheduler, Admin: a.Admin, Web: a.Web}}
		acfg.ProbeInterval = 50 * time.Millisecond
		agent, err := subclusteragent.New(acfg)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = agent.Run(ctx) }()
	}
	if err := cl.Client().SetPolicy(ctx, &storepb.PolicyConfiguration{Queue: "root.b",
		Type: "org.apache.hadoop.yarn.server.federation.policies.manager.WeightedLocalityPolicyManager",
		Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0"},{"key":{"id":"SC-2"},"value":"1"}]},` +
			`"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-2"},"value":"1"}]},"headroomAlpha":"1.0"}`)}); err != nil {
		t.Fatal(err)
	}

	var routers []*router.Router
	for i := range 2 {
		cfg := router.DefaultConfig()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg.ClientListener, cfg.WebAddress = ln, ""
		cfg.Store = router.NewClientStore(cl.Client(i))
		cfg.MembershipRefresh = router.Duration(50 * time.Millisecond)
		r, err := router.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = r.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		routers = append(routers, r)
	}
	client := func(r *router.Router) *hadoopipc.Client {
		c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{r.ClientRMAddr().String()},
			Protocol: hadoopipc.ProtocolApplicationClient, User: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	c0, c1 := client(routers[0]), client(routers[1])
	call := func(c *hadoopipc.Client, m string, req, resp proto.Message) error {
		cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
		defer ccancel()
		return c.Call(cctx, m, req, resp)
	}
	storetest.Poll(t, 20*time.Second, func() bool { // agents registered, routers see both
		m := &yarnpb.GetClusterMetricsResponseProto{}
		return call(c0, "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, m) == nil &&
			m.GetClusterMetrics().GetNumNodeManagers() == int32(2*simrm.TestConfig().Nodes)
	})

	for range 5 {
		na := &yarnpb.GetNewApplicationResponseProto{}
		if err := call(c0, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
			t.Fatal(err)
		}
		sub := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
			ApplicationId: na.GetApplicationId(), Queue: proto.String("root.b"), ApplicationName: proto.String("it"),
			Resource: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}}}
		if err := call(c0, "submitApplication", sub, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
			t.Fatal(err)
		}
		home, err := cl.Client().GetApplicationHome(ctx, router.AppIDString(na.GetApplicationId()), false)
		if err != nil || home.GetHomeSubClusterId() != "SC-2" {
			t.Fatalf("home %v, %v; queue root.b routes to SC-2 only", home, err)
		}
		// The other router finds it through the store.
		rep := &yarnpb.GetApplicationReportResponseProto{}
		if err := call(c1, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: na.GetApplicationId()}, rep); err != nil {
			t.Fatalf("report via router 2: %v", err)
		}
		// Resubmission through the other router is acknowledged, not duplicated.
		if err := call(c1, "submitApplication", sub, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
			t.Fatalf("resubmit via router 2: %v", err)
		}
	}
	// A delegation token issued by one router is renewed through the other
	// (master keys and tokens live in the store).
	dt := &commonpb.GetDelegationTokenResponseProto{}
	if err := call(c0, "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("bob")}, dt); err != nil {
		t.Fatalf("getDelegationToken: %v", err)
	}
	if err := call(c1, "renewDelegationToken", &commonpb.RenewDelegationTokenRequestProto{Token: dt.GetToken()}, &commonpb.RenewDelegationTokenResponseProto{}); err != nil {
		t.Fatalf("renew through the other router: %v", err)
	}

	apps := &yarnpb.GetApplicationsResponseProto{}
	if err := call(c1, "getApplications", &yarnpb.GetApplicationsRequestProto{}, apps); err != nil || len(apps.GetApplications()) != 5 {
		t.Fatalf("getApplications: %d, %v", len(apps.GetApplications()), err)
	}
}

// TestRouterConfigPrecedence: defaults < --config file < explicit flags.
func TestRouterConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "router.json")
	if err := os.WriteFile(file, []byte(`{"clientrm_address":"127.0.0.1:1","failover_wait":"7s","partial_results":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newRouterCmd()
	if err := cmd.ParseFlags([]string{"--config", file, "--clientrm-address", "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	flagCfg := router.DefaultConfig()
	flagCfg.ClientRMAddress = "127.0.0.1:2"
	fileCfg := router.DefaultConfig()
	if err := router.LoadConfigFile(file, &fileCfg); err != nil {
		t.Fatal(err)
	}
	overlayChangedFlags(cmd, &fileCfg, &flagCfg)
	if fileCfg.ClientRMAddress != "127.0.0.1:2" || fileCfg.FailoverWait.D() != 7*time.Second || !fileCfg.PartialResults || fileCfg.SubmitRetries != 3 {
		t.Fatalf("precedence wrong: %+v", fileCfg)
	}
}

// TestRouterRoleAdminPort: `yarnfed router` serves the admin port on
// Hadoop's 8052 by default (in-process routers do not), and --admin-acl /
// --admin-address override a config file.
func TestRouterRoleAdminPort(t *testing.T) {
	if got := routerRoleDefaults().AdminAddress; got != router.DefaultAdminAddress {
		t.Fatalf("role default admin address %q", got)
	}
	if router.DefaultConfig().AdminAddress != "" {
		t.Fatal("router.DefaultConfig binds the admin port")
	}
	file := filepath.Join(t.TempDir(), "router.json")
	if err := os.WriteFile(file, []byte(`{"admin_acl":"alice","admin_address":"127.0.0.1:1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newRouterCmd()
	if err := cmd.ParseFlags([]string{"--config", file, "--admin-acl", "bob ops"}); err != nil {
		t.Fatal(err)
	}
	flagCfg := routerRoleDefaults()
	flagCfg.AdminACL = "bob ops"
	fileCfg := routerRoleDefaults()
	if err := router.LoadConfigFile(file, &fileCfg); err != nil {
		t.Fatal(err)
	}
	overlayChangedFlags(cmd, &fileCfg, &flagCfg)
	if fileCfg.AdminACL != "bob ops" || fileCfg.AdminAddress != "127.0.0.1:1" {
		t.Fatalf("admin precedence wrong: acl %q address %q", fileCfg.AdminACL, fileCfg.AdminAddress)
	}
}

// TestRouterLimitFlags: the resource-limit keys read from a file, and
// their flags override it (defaults < file < flags).
func TestRouterLimitFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "router.json")
	if err := os.WriteFile(file, []byte(`{"web":{"read_timeout":"7s","max_conns":2},"ipc":{"max_conns_per_addr":9,"handshake_timeout":"3s"},"max_rm_clients":5}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newRouterCmd()
	if err := cmd.ParseFlags([]string{"--config", file, "--web-max-conns", "3", "--ipc-max-conns-per-addr", "11", "--max-rm-clients", "6"}); err != nil {
		t.Fatal(err)
	}
	flagCfg := router.DefaultConfig()
	flagCfg.Web.MaxConns, flagCfg.IPC.MaxConnsPerAddr, flagCfg.MaxRMClients = 3, 11, 6
	fileCfg := router.DefaultConfig()
	if err := router.LoadConfigFile(file, &fileCfg); err != nil {
		t.Fatal(err)
	}
	overlayChangedFlags(cmd, &fileCfg, &flagCfg)
	def := router.DefaultConfig()
	if fileCfg.Web.ReadTimeout.D() != 7*time.Second || fileCfg.Web.MaxConns != 3 || fileCfg.IPC.MaxConnsPerAddr != 11 ||
		fileCfg.IPC.HandshakeTimeout.D() != 3*time.Second || fileCfg.MaxRMClients != 6 || fileCfg.Web.IdleTimeout != def.Web.IdleTimeout {
		t.Fatalf("precedence wrong: web %+v ipc %+v max_rm_clients %d", fileCfg.Web, fileCfg.IPC, fileCfg.MaxRMClients)
	}
}

// TestRouterKerberosFlags: the kerberos file section sits under the flags,
// key by key.
func TestRouterKerberosFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "router.json")
	if err := os.WriteFile(file, []byte(`{"kerberos":{"principal":"rm/_HOST@FILE.REALM","keytab":"/file.keytab","auth_to_local":"DEFAULT"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newRouterCmd()
	if err := cmd.ParseFlags([]string{"--config", file, "--kerberos-keytab", "/flag.keytab", "--rm-principal", "rm/_HOST@R", "--kerberos-allow-simple"}); err != nil {
		t.Fatal(err)
	}
	flagCfg := router.DefaultConfig()
	flagCfg.Kerberos.Keytab, flagCfg.Kerberos.RMPrincipal, flagCfg.Kerberos.AllowSimple = "/flag.keytab", "rm/_HOST@R", true
	fileCfg := router.DefaultConfig()
	if err := router.LoadConfigFile(file, &fileCfg); err != nil {
		t.Fatal(err)
	}
	overlayChangedFlags(cmd, &fileCfg, &flagCfg)
	want := router.KerberosConfig{Principal: "rm/_HOST@FILE.REALM", Keytab: "/flag.keytab", RMPrincipal: "rm/_HOST@R", AuthToLocal: "DEFAULT", AllowSimple: true}
	if fileCfg.Kerberos != want {
		t.Fatalf("kerberos config %+v, want %+v", fileCfg.Kerberos, want)
	}
}
