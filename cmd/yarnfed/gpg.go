package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/yarnfed/yarnfed/gpg"
	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/gpg/kube/nmpush"
	"github.com/yarnfed/yarnfed/gpg/kube/writeback"
	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/statestore/client"
)

// newGPGCmd is `yarnfed gpg`: the Global Policy Generator.
func newGPGCmd() *cobra.Command {
	cfg := gpgRoleDefaults()
	var loader *config.Loader[gpgRole]
	cmd := &cobra.Command{
		Use:   "gpg",
		Short: "Run the Global Policy Generator (liveness, safe app-home cleaner, queue weights; web on 8069)",
		Long: `The GPG keeps the federation tidy and its weights current; routers and AMRMProxies keep working
without it. Run two or more for availability: one acts at a time (a lease in the state store), the
others stand by and take over within the lease TTL.

Each round (every --interval, and a debounce (1s) after a capacity change or membership event):
  liveness   usable sub-clusters with a heartbeat older than --subcluster-expiry become SC_LOST;
  generator  router and AMRMProxy weights per queue from headroom (capacity policy, default) or
             Hadoop's LoadBasedGlobalPolicy; written only when a weight moves more than
             --threshold, by at most --max-step per round; pinned queues are never touched
             (yarnfedctl policy pin); --read-only logs instead of writing;
  cleaner    every --cleaner-interval: deletes application homes no RM knows, only when every
             registered RM answered completely (--dry-run logs instead);
  uam reaper off unless --uam-reaper; every --uam-reaper-interval (30s): kills the unmanaged AMs
             an AMRMProxy left in other sub-clusters once the home RM reports their application
             final (or, answering completely, does not know it) and deletes their UAM registry rows
             (--uam-reaper-dry-run logs instead).

Configuration: defaults, then --config (JSON; unknown keys are errors), then flags. The JSON
"kubernetes" section names co-location clusters whose Koordinator batch capacity becomes each
sub-cluster's published capacity and weight input; its optional "node_resource_push" (off by
default) also sends each NodeManager's usable capacity to its RM (updateNodeResource, admin
addresses from the state store's membership; only the lease holder pushes).
Kerberized RMs: --kerberos-principal and --kerberos-keytab (file: "kerberos": {"principal",
"keytab", "krb5_conf", "rm_principal", "rm_http_principal"}) make the GPG log in: the cleaner
and the UAM reaper list (and the reaper kills) applications with SPNEGO, and the node-resource
push uses SASL KERBEROS as the GPG's principal (then --rm-principal is required). The push and
the reaper need the GPG's short name in the RMs' yarn.admin.acl.
Endpoints on the web port: /healthz, /readyz, /prom (Prometheus), /gpg/v1/status.`,
		Example: `  yarnfed gpg --store 10.0.0.1:9090,10.0.0.2:9090,10.0.0.3:9090 \
      --store-tls-cert pki/gpg-1/cert.crt --store-tls-key pki/gpg-1/cert.key --store-tls-ca pki/gpg-1/ca.crt
  yarnfed gpg --config gpg.json --read-only --dry-run --store-tls-cert ...   # as above`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStoreRole(loader, func(s roleStart[gpgRole], sc *client.Client) error {
				role, log, reg := s.role, s.log, s.reg
				cfg := role.Config
				cfg.Store = sc
				cfg.Logger, cfg.Registerer, cfg.Gatherer = log, reg, reg
				ctx, cancel := context.WithCancel(cmd.Context())
				src, kubes, waitSources, err := newCapacitySource(ctx, cfg, log)
				defer func() { cancel(); waitSources() }()
				if err != nil {
					return err
				}
				g, err := gpg.New(cfg, src)
				if err != nil {
					return err
				}
				defer g.Close()
				waitPush, err := startNodeResourcePush(ctx, cfg, kubes, g, log)
				defer func() { cancel(); waitPush() }()
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "gpg %s: web %v, store %s, policy %s, read-only %v, cleaner dry-run %v\n",
					cfg.ID, g.WebAddr(), role.addrs(), cfg.Generator.Policy, cfg.Generator.ReadOnly, cfg.Cleaner.DryRun)
				return g.Run(ctx)
			})
		},
	}
	f := cmd.Flags()
	loader = config.NewLoader(f, &cfg, gpgRoleDefaults)
	cfg.storeConn.bindFlags(f)
	cfg.roleLog.bindFlags(f)
	f.StringVar(&cfg.ID, "id", cfg.ID, "lease holder name of this GPG")
	f.StringVar(&cfg.WebAddress, "web-address", cfg.WebAddress, "web listen address (yarn.federation.gpg.webapp.address); empty disables")
	f.Var(&cfg.Interval, "interval", "period of a full round")
	f.Var(&cfg.LeaseTTL, "lease-ttl", "lease time to live: a dead GPG is replaced within it")
	f.Var(&cfg.Liveness.Expiry, "subcluster-expiry", "heartbeat age that makes a sub-cluster SC_LOST (yarn.federation.gpg.subcluster.heartbeat.expiration-ms)")
	f.StringVar(&cfg.Generator.Policy, "policy", cfg.Generator.Policy, "global policy: capacity or load-based (Hadoop LoadBasedGlobalPolicy)")
	f.BoolVar(&cfg.Generator.ReadOnly, "read-only", cfg.Generator.ReadOnly, "compute and log weights, write none (yarn.federation.gpg.policy.generator.readonly)")
	f.Float64Var(&cfg.Generator.Threshold, "threshold", cfg.Generator.Threshold, "rewrite a queue only when more than this share of new applications would go elsewhere")
	f.Float64Var(&cfg.Generator.MaxStep, "max-step", cfg.Generator.MaxStep, "largest share of new applications one round may redirect")
	f.BoolVar(&cfg.Cleaner.DryRun, "dry-run", cfg.Cleaner.DryRun, "cleaner logs what it would delete and deletes nothing")
	f.Var(&cfg.Cleaner.Interval, "cleaner-interval", "period of the application-home cleaner")
	f.Var(&cfg.Cleaner.Grace, "cleaner-grace", "application homes younger than this are never deleted")
	f.Var(&cfg.Cleaner.MinRMUptime, "cleaner-min-rm-uptime", "no deletion while an RM has been up for less (it may still be recovering applications)")
	f.IntVar(&cfg.Cleaner.MaxPerRound, "cleaner-max-per-round", cfg.Cleaner.MaxPerRound, "most application homes deleted per round")
	f.BoolVar(&cfg.UAMReaper.Enabled, "uam-reaper", cfg.UAMReaper.Enabled, "kill unmanaged AMs whose federated application is over (needs the right to kill any application on the RMs)")
	f.Var(&cfg.UAMReaper.Interval, "uam-reaper-interval", "period of the UAM reaper")
	f.BoolVar(&cfg.UAMReaper.DryRun, "uam-reaper-dry-run", cfg.UAMReaper.DryRun, "UAM reaper logs what it would kill and kills nothing")
	f.IntVar(&cfg.UAMReaper.MaxPerRound, "uam-reaper-max-per-round", cfg.UAMReaper.MaxPerRound, "most unmanaged AMs killed per round")
	f.Var(&cfg.UAMReaper.Grace, "uam-reaper-grace", "a UAM whose application its home RM does not know is killed only once it, and the home row, are older than this")
	cfg.Kerberos.BindFlags(f, "GPG", true)
	loader.DocumentKeys()
	return cmd
}

// gpgRole is `yarnfed gpg`'s configuration: gpg.Config's keys at the top
// level of the file (its "kubernetes" entries are gpg/kube's own config,
// each decoded over kube.DefaultConfig), plus the store connection and log
// level.
type gpgRole struct {
	gpg.Config
	storeConn
	roleLog
}

func gpgRoleDefaults() gpgRole {
	return gpgRole{Config: gpg.DefaultConfig(), storeConn: defaultStoreConn(), roleLog: defaultRoleLog()}
}

// Validate checks the role's own settings; gpg.New validates the rest once
// the store is wired in.
func (r *gpgRole) Validate() error {
	return errors.Join(r.roleLog.validate(), r.storeConn.validate(), r.Kerberos.Validate(true))
}

// kubeWorkers is the number of goroutines applying node changes per
// Kubernetes cluster: a sync reads recorded facts under the source's mutex,
// so more workers would mostly wait.
const kubeWorkers = 2

// newCapacitySource starts one gpg/kube Source per configured Kubernetes
// cluster (informers on Nodes and Pods, until ctx ends) and merges them
// into the one capacity.Source the GPG reads; kubes are the sources
// themselves, in config order (the node-resource push reads their
// per-node results). With no cluster configured it returns nil (weights
// from the RMs' own figures). wait blocks until every started source has
// stopped; call it after ctx ends.
func newCapacitySource(ctx context.Context, cfg gpg.Config, log *slog.Logger) (src capacity.Source, kubes []*kube.Source, wait func(), err error) {
	wait = func() {}
	if len(cfg.Kubernetes) == 0 {
		return nil, nil, wait, nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// client-go logs through klog (reflector retries, throttling); route it
	// into the role's logger instead of klog's own stderr format.
	routeKlog(log.With("component", "client-go"))
	for _, k := range cfg.Kubernetes {
		k.Logger, k.Registerer = log, cfg.Registerer
		s, err := kube.New(k)
		if err != nil {
			for _, made := range kubes {
				made.Close() // never run: stop their work queues
			}
			return nil, nil, wait, fmt.Errorf("gpg config: %w", err)
		}
		kubes = append(kubes, s)
	}
	var wg sync.WaitGroup
	all := make([]capacity.Source, len(kubes))
	for i, s := range kubes {
		all[i] = s
		name := cfg.Kubernetes[i].Name
		wg.Go(func() {
			if err := s.Run(ctx, kubeWorkers); err != nil && ctx.Err() == nil {
				log.Error("kubernetes capacity source stopped", "kubernetes_cluster", name, "err", err)
			}
		})
	}
	log.Info("watching Kubernetes clusters for batch capacity", "clusters", len(kubes))
	return capacity.Merge(ctx, all...), kubes, wg.Wait, nil
}

// startNodeResourcePush runs gpg/kube/nmpush for every Kubernetes cluster
// whose node_resource_push is enabled, and gpg/kube/writeback for every one
// whose third_party_allocations is (kubes[i] is cfg.Kubernetes[i]'s source),
// until ctx ends: each NodeManager's usable capacity goes to its RM with
// updateNodeResource, and what YARN holds on it goes into its Node's
// thirdPartyAllocations. The RM addresses come from the state store's
// membership, as the GPG's rounds read it (the sub-cluster agent
// re-registers them on RM failover), and only the lease holder writes.
// What either leaves to another writer shows in /gpg/v1/status.
// wait blocks until every pusher and writer has stopped; call it after ctx
// ends.
func startNodeResourcePush(ctx context.Context, cfg gpg.Config, kubes []*kube.Source, g *gpg.GPG, log *slog.Logger) (wait func(), err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var pushers []*nmpush.Pusher
	var writers []*writeback.Writer
	status := map[string]func() any{}
	closeAll := func() {
		for _, p := range pushers {
			_ = p.Close()
		}
	}
	rmNodes := kube.RMNodesFromREST(g.RMNodes)
	for i, k := range cfg.Kubernetes {
		if k.NodeResourcePush.Enabled {
			p, err := nmpush.New(nmpush.Config{
				Name: k.Name, PushConfig: k.NodeResourcePush,
				RMs: nmpush.RMsFunc(g.RMAdminAddresses), RMNodes: rmNodes, Active: g.Holding, Kerberos: g.RMKerberos(),
				Logger: log, Registerer: cfg.Registerer,
			}, kubes[i])
			if err != nil {
				closeAll()
				return func() {}, fmt.Errorf("gpg config: kubernetes %s: %w", k.Name, err)
			}
			pushers = append(pushers, p)
			status[k.Name+"/node_resource_push"] = func() any { return map[string]any{"foreignNodeManagers": p.ForeignNodeManagers()} }
			log.Info("pushing NodeManager capacities to their RMs (updateNodeResource)", "kubernetes_cluster", k.Name,
				"user", k.NodeResourcePush.User, "interval", k.NodeResourcePush.Interval.D(),
				"min_change", k.NodeResourcePush.MinChange, "max_age", k.NodeResourcePush.MaxAge.D())
		}
		if k.ThirdPartyAllocations.Enabled {
			nw, err := newNodeWriter(k)
			if err != nil {
				closeAll()
				return func() {}, fmt.Errorf("gpg config: kubernetes %s: %w", k.Name, err)
			}
			w, err := writeback.New(writeback.Config{
				Name: k.Name, WriteBackConfig: k.ThirdPartyAllocations,
				RMNodes: rmNodes, Nodes: nw, Active: g.Holding, Logger: log, Registerer: cfg.Registerer,
			}, kubes[i])
			if err != nil {
				closeAll()
				return func() {}, fmt.Errorf("gpg config: kubernetes %s: %w", k.Name, err)
			}
			writers = append(writers, w)
			status[k.Name+"/third_party_allocations"] = func() any { return w.Status() }
			log.Info("writing YARN's allocations into the Nodes' thirdPartyAllocations", "kubernetes_cluster", k.Name,
				"interval", k.ThirdPartyAllocations.Interval.D())
		}
	}
	if len(status) > 0 {
		g.SetKubeStatus(func() any {
			out := make(map[string]any, len(status))
			for name, f := range status {
				out[name] = f()
			}
			return out
		})
	}
	var wg sync.WaitGroup
	for _, p := range pushers {
		wg.Go(func() {
			defer p.Close()
			_ = p.Run(ctx) // returns ctx's error when ctx ends
		})
	}
	for _, w := range writers {
		wg.Go(func() { _ = w.Run(ctx) })
	}
	return wg.Wait, nil
}

// newNodeWriter connects the write-back's Node client with the cluster's
// own connection settings (its kubeconfig, or the pod's ServiceAccount).
func newNodeWriter(k kube.Config) (kube.NodeWriter, error) {
	rc, err := k.RESTConfig()
	if err != nil {
		return nil, err
	}
	return kube.NewNodeWriter(rc)
}

// klogRoute sends klog's output (client-go's) to the logger of the role
// that started most recently. klog.SetSlogLogger is not synchronized with
// klog's readers (running informers), so it is called once, with a handler
// that forwards to the current logger; a second role in one process (tests
// run several GPGs) swaps the target without a race.
var klogRoute struct {
	once sync.Once
	to   atomic.Pointer[slog.Logger]
}

func routeKlog(log *slog.Logger) {
	klogRoute.to.Store(log)
	klogRoute.once.Do(func() { klog.SetSlogLogger(slog.New(klogForward{})) })
}

// klogForward is a slog.Handler that hands each record to klogRoute's
// current logger, after the attributes and groups added on the way.
type klogForward struct {
	with []func(slog.Handler) slog.Handler
}

func (f klogForward) target() slog.Handler {
	h := klogRoute.to.Load().Handler()
	for _, w := range f.with {
		h = w(h)
	}
	return h
}

func (f klogForward) Enabled(ctx context.Context, l slog.Level) bool {
	return klogRoute.to.Load().Handler().Enabled(ctx, l)
}

func (f klogForward) Handle(ctx context.Context, r slog.Record) error {
	return f.target().Handle(ctx, r)
}

func (f klogForward) WithAttrs(as []slog.Attr) slog.Handler {
	return klogForward{with: append(slices.Clip(f.with), func(h slog.Handler) slog.Handler { return h.WithAttrs(as) })}
}

func (f klogForward) WithGroup(name string) slog.Handler {
	return klogForward{with: append(slices.Clip(f.with), func(h slog.Handler) slog.Handler { return h.WithGroup(name) })}
}
