package router

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the router's HTTP endpoints: health, readiness and the
// federated RM REST API (rest.go) and the web UI (ui.go).
func (r *Router) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ok\n"))
	})
	// Ready once membership has been read and something is routable.
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-r.ready:
		default:
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		if len(r.members.candidates(nil)) == 0 {
			http.Error(w, "no routable sub-cluster", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if r.cfg.Gatherer != nil {
		// /prom, as Hadoop 3.3+ daemons name their Prometheus endpoint
		// (/metrics is taken by nothing here, but /ws/v1/cluster/metrics
		// is the RM's and the names would confuse).
		mux.Handle("GET /prom", promhttp.HandlerFor(r.cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	r.restRoutes(mux)
	r.uiRoutes(mux) // web UI pages (ui.go)
	return withOptions(mux)
}

// withOptions answers OPTIONS for every served path as an RM's Jersey stack
// does: 200 with the path's methods in Allow. Hadoop's HTTP client
// (AuthenticatedURL: KerberosAuthenticator falling back to
// PseudoAuthenticator) sends OPTIONS before every request and gives up
// unless it gets 200, so a 405 here breaks `yarn top` and friends.
func withOptions(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodOptions {
			mux.ServeHTTP(w, req)
			return
		}
		allow := allowedMethods(mux, req)
		if len(allow) == 0 {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Allow", strings.Join(append(allow, http.MethodOptions), ","))
		w.WriteHeader(http.StatusOK)
	})
}

// allowedMethods lists the methods mux serves at req's path (HEAD wherever
// GET is served, as net/http and Jersey both do).
func allowedMethods(mux *http.ServeMux, req *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := req.Clone(req.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" {
			out = append(out, m)
		}
	}
	return out
}
