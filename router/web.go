package router

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the router's HTTP endpoints: health, readiness and the
// federated RM REST API (rest.go).
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
	return mux
}
