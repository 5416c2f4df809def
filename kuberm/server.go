package kuberm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// Start binds the IPC (client, scheduler, admin, NM face) and web listeners and serves until Close; the
// bound addresses are then in Addrs. With a fixed cluster timestamp it
// first reads the ids already used, so none is handed out twice.
func (r *RM) Start(ctx context.Context) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return errors.New("kuberm: already started")
	}
	if r.cfg.ClusterTimestamp != 0 {
		if err := r.seedSequence(ctx); err != nil {
			return err
		}
	}
	if err := r.loadMasterKey(ctx); err != nil {
		return err
	}
	var lns []net.Listener
	defer func() {
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
		}
	}()
	cln, err := net.Listen("tcp", r.cfg.ClientAddress)
	if err != nil {
		return fmt.Errorf("kuberm: client address: %w", err)
	}
	lns = append(lns, cln)
	sln, err := net.Listen("tcp", r.cfg.SchedulerAddress)
	if err != nil {
		return fmt.Errorf("kuberm: scheduler address: %w", err)
	}
	lns = append(lns, sln)
	aln, err := net.Listen("tcp", r.cfg.AdminAddress)
	if err != nil {
		return fmt.Errorf("kuberm: admin address: %w", err)
	}
	lns = append(lns, aln)
	nln, err := net.Listen("tcp", r.cfg.NMAddress)
	if err != nil {
		return fmt.Errorf("kuberm: NM address: %w", err)
	}
	lns = append(lns, nln)
	// NodeIds carry the advertised port (Validate checked it), else the
	// bound one; set before any server runs, as allocate names nodes with it.
	r.nmPort = int32(nln.Addr().(*net.TCPAddr).Port)
	if r.cfg.AdvertiseNMAddress != "" {
		_, ps, _ := net.SplitHostPort(r.cfg.AdvertiseNMAddress)
		p, _ := strconv.Atoi(ps)
		r.nmPort = int32(p)
	}
	var wln net.Listener
	if r.cfg.WebAddress != "" {
		if wln, err = net.Listen("tcp", r.cfg.WebAddress); err != nil {
			return fmt.Errorf("kuberm: web address: %w", err)
		}
		lns = append(lns, wln)
	}
	sc := hadoopipc.DefaultServerConfig()
	sc.Logger = r.log
	sc.Registerer = nil // two servers: their metrics would collide
	// A Hadoop RM has no per-address cap and routers dial from few hosts.
	sc.MaxConnsPerAddr = sc.MaxConns
	if err := sc.Validate(); err != nil {
		return err
	}
	r.addrs = Addrs{Client: cln.Addr().String(), Scheduler: sln.Addr().String(), Admin: aln.Addr().String(), NM: nln.Addr().String()}
	r.running = true
	// Real AMs always log in with their AMRMToken: the scheduler port
	// offers TOKEN only, as Hadoop's does.
	amp := sc
	amp.Secrets, amp.AllowSimple = amrmSecrets{r}, false
	// The NM face: NM-token logins only, as a NodeManager's.
	nmp := sc
	nmp.Secrets, nmp.AllowSimple = nmSecrets{r}, false
	for _, s := range []struct {
		ln    net.Listener
		cfg   hadoopipc.ServerConfig
		proto hadoopipc.Protocol
	}{{cln, sc, r.clientProtocol()}, {sln, amp, r.masterProtocol()},
		{aln, sc, hadoopipc.Protocol{Name: hadoopipc.ProtocolRMAdmin, Version: 1}}, {nln, nmp, r.nmProtocol()}} {
		srv := hadoopipc.NewServer(s.cfg)
		if err := srv.Register(s.proto); err != nil {
			return err
		}
		r.servers = append(r.servers, srv)
		r.wg.Add(1)
		go func(ln net.Listener) {
			defer r.wg.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, hadoopipc.ErrServerClosed) {
				r.log.Error("kuberm: IPC server stopped", "addr", ln.Addr().String(), "err", err)
			}
		}(s.ln)
	}
	if wln != nil {
		r.addrs.Web = wln.Addr().String()
		web := &http.Server{Handler: r.webHandler(), ReadHeaderTimeout: 10 * time.Second}
		r.web = web
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := web.Serve(wln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				r.log.Error("kuberm: web server stopped", "err", err)
			}
		}()
	}
	return nil
}

// Addrs are the bound addresses (after Start).
func (r *RM) Addrs() Addrs {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addrs
}

// Run reconciles every resync interval and, with a Store, registers and
// heartbeats the sub-cluster, until ctx ends.
func (r *RM) Run(ctx context.Context) error {
	resync := time.NewTicker(r.cfg.ResyncInterval.D())
	defer resync.Stop()
	beat := time.NewTicker(r.cfg.HeartbeatInterval.D())
	defer beat.Stop()
	registered := false
	if r.cfg.Store != nil {
		registered = r.heartbeatOnce(ctx, false)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-resync.C:
			r.reconcileRound(ctx)
			if r.cfg.Store != nil && !registered {
				registered = r.heartbeatOnce(ctx, false)
			}
		case <-beat.C:
			if r.cfg.Store != nil {
				registered = r.heartbeatOnce(ctx, registered)
			}
		}
	}
}

func (r *RM) reconcileRound(ctx context.Context) {
	if err := r.Reconcile(ctx); err != nil && ctx.Err() == nil {
		r.metrics.reconciles.WithLabelValues("error").Inc()
		r.log.Warn("reconcile", "err", err)
		return
	}
	r.metrics.reconciles.WithLabelValues("ok").Inc()
}

// Heartbeat registers or heartbeats once (tests drive membership with it
// instead of waiting for Run's ticker); it reports whether the row is
// registered afterwards.
func (r *RM) Heartbeat(ctx context.Context, registered bool) bool {
	if r.cfg.Store == nil {
		return false
	}
	return r.heartbeatOnce(ctx, registered)
}

// Close stops the servers. Objects in the API server stay: a new kuberm
// over the same namespace carries on with them.
func (r *RM) Close() {
	r.mu.Lock()
	servers, web := r.servers, r.web
	r.servers, r.web = nil, nil
	r.mu.Unlock()
	for _, s := range servers {
		_ = s.Close()
	}
	if web != nil {
		_ = web.Close()
	}
	r.wg.Wait()
}

// webHandler serves the RM REST calls the federation reads of a
// sub-cluster (its info and metrics), plus /healthz and /prom.
func (r *RM) webHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws/v1/cluster/info", func(w http.ResponseWriter, req *http.Request) {
		writeJSON(w, rmrest.ClusterInfoResponse{ClusterInfo: rmrest.ClusterInfo{
			ID: r.ts, StartedOn: r.started.UnixMilli(), State: "STARTED", HAState: "ACTIVE",
			RMStateStoreName: "kuberm (Kubernetes API)", ResourceManagerVersion: "yarnfed-kuberm",
			HadoopVersion: "3.4.0-compatible", HAZooKeeperConnectionState: "ResourceManager HA is not enabled.",
		}})
	})
	mux.HandleFunc("GET /ws/v1/cluster/metrics", func(w http.ResponseWriter, req *http.Request) {
		m, err := r.ClusterMetrics(req.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, rmrest.ClusterMetricsResponse{ClusterMetrics: m})
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	if g, ok := r.cfg.Registerer.(prometheus.Gatherer); ok {
		mux.Handle("GET /prom", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	}
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
