package router

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/router/rest"
)

// Handler serves the router's HTTP endpoints: health, readiness and the
// federated RM REST API (router/rest), the AM web proxy (proxy.go) and
// the web UI (router/webui).
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
	r.webRoutes(mux)
	r.newUI().Routes(mux) // router/webui
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

// withWebUser gives serve the web caller's identity: the SPNEGO-
// authenticated user when a keytab is configured (no ticket or cookie: 401
// Negotiate), else ?user.name=, Hadoop's pseudo auth, default dr.who. REST
// and the web UI's pages share it: both list applications and their users.
func (r *Router) withWebUser(serve func(http.ResponseWriter, *http.Request, hadoopipc.User)) http.HandlerFunc {
	if r.webAuth != nil {
		return r.webAuth.Wrap(func(w http.ResponseWriter, req *http.Request, user string) {
			serve(w, req, hadoopipc.User{Name: user, AuthMethod: hadoopipc.AuthMethodKerberos})
		}).ServeHTTP
	}
	return func(w http.ResponseWriter, req *http.Request) {
		user := req.URL.Query().Get("user.name")
		if user == "" {
			user = "dr.who"
		}
		serve(w, req, hadoopipc.User{Name: user, AuthMethod: hadoopipc.AuthMethodSimple})
	}
}

// webRoutes registers the RM REST API (router/rest) and the AM web proxy
// (proxy.go), whose caller's identity is the REST API's (SPNEGO when
// configured, else pseudo): tracking UIs show job details; the app's ACL
// applies (rest.API.AppCheck, the same rule table).
func (r *Router) webRoutes(mux rest.Mux) {
	r.restAPI.Routes(mux)
	proxy := r.withWebUser(func(w http.ResponseWriter, req *http.Request, u hadoopipc.User) {
		r.proxyApp(w, req.WithContext(hadoopipc.ContextWithUser(req.Context(), u)))
	})
	mux.Handle("/proxy/{appid}", proxy)
	mux.Handle("/proxy/{appid}/{rest...}", proxy)
}

// The REST API's names its clients use (e2e), as router/rest defines them.
const (
	// FederationSchedulerRoot is the merged scheduler document's root.
	FederationSchedulerRoot = rest.FederationSchedulerRoot
	// DelegationTokenHeader carries the encoded token of a renew or cancel.
	DelegationTokenHeader = rest.DelegationTokenHeader
)

// DelegationToken is RMWebServices' dao.DelegationToken.
type DelegationToken = rest.DelegationToken
