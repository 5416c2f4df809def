package router

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hostport"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/router/merge"
	"github.com/yarnfed/yarnfed/router/restwire"
	"github.com/yarnfed/yarnfed/router/webui"
	"github.com/yarnfed/yarnfed/router/yarnid"
)

// The federation web UI: server-rendered pages (html/template, no
// JavaScript; templates and rendering in router/webui) on the web port, at
// Hadoop's Router paths under /cluster. This file gathers each page's data.
// Every number comes from the code that serves the REST API (perSC with
// appsOf/nodesOf, restMetrics, membership), so a page and its REST
// counterpart agree. Application names, queues, users, diagnostics and
// tracking URLs are user input: html/template escapes them by context
// (text, attribute, URL; a javascript: URL becomes "#ZgotmplZ"), and the
// Content-Security-Policy forbids scripts altogether as a second fence.

// uiRoutes registers the pages (Hadoop's Router serves /cluster as its
// about page; /cluster/policies is ours: Hadoop lists policies only through
// routeradmin).
func (r *Router) uiRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "/cluster", http.StatusFound)
	})
	mux.HandleFunc("GET /cluster", r.page("about", r.uiAbout))
	mux.HandleFunc("GET /cluster/about", r.page("about", r.uiAbout))
	mux.HandleFunc("GET /cluster/federation", r.page("federation", r.uiFederation))
	mux.HandleFunc("GET /cluster/nodes", r.page("nodes", r.uiNodes))
	mux.HandleFunc("GET /cluster/apps", r.page("apps", r.uiApps))
	mux.HandleFunc("GET /cluster/app/{appid}", r.page("app", r.uiApp))
	mux.HandleFunc("GET /cluster/policies", r.page("policies", r.uiPolicies))
	mux.Handle("GET /static/", http.StripPrefix("/static/", webui.Static()))
}

// uiHandler builds a page's data; a non-nil error is shown on the page
// with the HTTP status REST would have answered.
type uiHandler func(ctx context.Context, req *http.Request) (title string, data any, err error)

func (r *Router) page(name string, h uiHandler) http.HandlerFunc {
	method := "UI " + name
	serve := func(w http.ResponseWriter, req *http.Request, u hadoopipc.User) {
		start := time.Now()
		user := u.Name
		ctx := hadoopipc.ContextWithUser(req.Context(), u)
		title, data, err := h(ctx, req)
		r.metrics.observe(method, start, err)
		v := webui.View{Page: name, Title: title, User: user, Now: time.Now(), Version: r.cfg.Version, Data: data}
		status := http.StatusOK
		if err != nil {
			var body rmrest.RemoteExceptionResponse
			status, body = restFailure(err)
			v.Err = body.RemoteException.Message
		}
		if terr := webui.Render(w, status, v); terr != nil {
			r.log.Error("web UI template failed", "page", name, "err", terr)
			http.Error(w, "page rendering failed", http.StatusInternalServerError)
		}
	}
	// The pages list every application and its user: with SPNEGO on they
	// are behind it as REST is (an RM's pages are behind the same filter).
	return r.withWebUser(serve)
}

// --- About ---

type uiAboutData struct {
	Started      time.Time
	Uptime       time.Duration
	ClientRMAddr string
	AdminAddr    string
	WebAddr      string
	Config       Config
	Store        StoreStatus
	StoreErr     string
	SubClusters  int
	Routable     int
	Metrics      *rmrest.ClusterMetrics
	MetricsErr   string
}

func (r *Router) uiAbout(ctx context.Context, req *http.Request) (string, any, error) {
	d := uiAboutData{Started: r.started, Uptime: time.Since(r.started).Round(time.Second), ClientRMAddr: r.ClientRMAddr().String(), Config: r.cfg}
	if a := r.AdminAddr(); a != nil {
		d.AdminAddr = a.String()
	}
	if a := r.WebAddr(); a != nil {
		d.WebAddr = a.String()
	}
	d.Store = StoreStatus{Kind: fmt.Sprintf("%T", r.store)}
	if s, ok := r.store.(StoreStatusReader); ok {
		st, err := s.StoreStatus(ctx)
		if err != nil {
			d.StoreErr = err.Error()
		} else {
			d.Store = st
		}
	}
	_ = r.members.ensure(ctx)
	all := r.members.all()
	d.SubClusters, d.Routable = len(all), len(r.members.candidates(nil))
	// The same handler as /ws/v1/cluster/metrics: the same numbers.
	// A failure is shown in its place: the rest of the page (router, store)
	// is what an operator opens About for when sub-clusters misbehave.
	rep, err := r.restMetrics(ctx, req)
	if m, ok := rep.xml.(rmrest.ClusterMetrics); ok && err == nil {
		d.Metrics = &m
	} else if err != nil {
		_, body := restFailure(err)
		d.MetricsErr = body.RemoteException.Message
	}
	return "About the federation", d, nil
}

// --- Federation ---

type uiSubCluster struct {
	SubClusterInfo
	Routable   bool
	Why        string // why not routable
	Capability *rmrest.ClusterMetrics
	CapErr     string
	// PublishedFresh: young enough for load-based routing to use.
	PublishedFresh bool
	// WebURL is the RM web UI's address (the first of an HA list).
	WebURL string
}

type uiWeightCell struct {
	Router, AMRM float32
	HasR, HasA   bool
}

type uiQueueWeights struct {
	Queue   string
	Manager string
	Cells   []uiWeightCell // one per sub-cluster, in the page's order
	Err     string
}

type uiFederationData struct {
	SubClusters  []uiSubCluster
	Routable     int
	PublishedTTL time.Duration
	Queues       []uiQueueWeights
	PoliciesErr  string
}

func (r *Router) uiFederation(ctx context.Context, _ *http.Request) (string, any, error) {
	if err := r.members.ensure(ctx); err != nil {
		return "Federation", nil, fmt.Errorf("read membership: %w", err)
	}
	d := uiFederationData{PublishedTTL: r.cfg.PublishedCapacityTTL.D()}
	for _, sc := range r.members.all() {
		u := uiSubCluster{SubClusterInfo: sc, Routable: r.members.routable(sc)}
		switch {
		case u.Routable:
			d.Routable++
		case !sc.State.Active():
			u.Why = "state " + sc.State.String()
		case r.members.stale(sc):
			u.Why = "heartbeat older than " + r.cfg.SubClusterHeartbeatExpiry.D().String()
		default:
			u.Why = "circuit breaker open"
		}
		if sc.Capability != "" {
			if m, err := ParseCapability(sc.Capability); err == nil {
				u.Capability = m
			} else {
				u.CapErr = err.Error()
			}
		}
		if p := sc.Published; p != nil {
			ttl := r.cfg.PublishedCapacityTTL.D()
			u.PublishedFresh = ttl > 0 && time.Since(p.PublishedAt) <= ttl
		}
		if addrs := hostport.SplitList(sc.RMWebServiceAddress); len(addrs) > 0 {
			u.WebURL = "http://" + addrs[0] + "/cluster"
		}
		d.SubClusters = append(d.SubClusters, u)
	}
	pols, err := r.sortedPolicies(ctx)
	if err != nil {
		d.PoliciesErr = err.Error()
	}
	for _, p := range pols {
		q := uiQueueWeights{Queue: p.Queue, Manager: p.Type}
		info, perr := policies.ParseWeightedPolicyInfo(p.Params)
		if perr != nil {
			q.Err = "no weights"
		}
		for _, sc := range d.SubClusters {
			var c uiWeightCell
			if info != nil {
				c.Router, c.HasR = info.RouterWeight(policies.SubClusterID(sc.ID))
				c.AMRM, c.HasA = info.AMRMWeight(policies.SubClusterID(sc.ID))
			}
			q.Cells = append(q.Cells, c)
		}
		d.Queues = append(d.Queues, q)
	}
	return "Federation", d, nil
}

// sortedPolicies is every stored queue policy, sorted by queue: what
// `routeradmin -policy -l` pages through and what the UI shows.
func (r *Router) sortedPolicies(ctx context.Context) ([]PolicyConfiguration, error) {
	as, err := r.adminStore()
	if err != nil {
		return nil, err
	}
	all, err := as.ListPolicies(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b PolicyConfiguration) int { return strings.Compare(a.Queue, b.Queue) })
	return all, nil
}

// --- Nodes ---

type uiNode struct {
	rmrest.Node
	SubCluster SubClusterID
}

type uiNodesData struct {
	Nodes   []uiNode
	ByState map[string]int
	States  string
}

type scPart[T any] struct {
	sc    SubClusterID
	items []T
}

func (r *Router) uiNodes(ctx context.Context, req *http.Request) (string, any, error) {
	states := strings.ToUpper(req.URL.Query().Get("states"))
	for _, s := range strings.Split(states, ",") {
		if s != "" && !slices.Contains(nodeStates, s) {
			return "Nodes", nil, restwire.BadRequest("invalid node state %q, want one of %s", s, strings.Join(nodeStates, ","))
		}
	}
	parts, err := perSC(ctx, r, "GET /ws/v1/cluster/nodes", func(sc SubClusterInfo) (scPart[rmrest.Node], error) {
		nodes, err := r.nodesOf(ctx, sc, states)
		return scPart[rmrest.Node]{sc.ID, nodes}, err
	})
	d := uiNodesData{ByState: map[string]int{}, States: states}
	if err != nil {
		return "Nodes", d, err
	}
	for _, p := range parts {
		for _, n := range p.items {
			d.Nodes = append(d.Nodes, uiNode{Node: n, SubCluster: p.sc})
			d.ByState[n.State]++
		}
	}
	return "Nodes", d, nil
}

// --- Applications ---

// uiMaxApps bounds the rows of one apps page (the count above the table is
// always the whole merged list's, as REST would return it).
const uiMaxApps = 1000

type uiApp struct {
	rmrest.App
	Home SubClusterID // "" when only UAM copies were seen (partial results)
	// RMURL is the app's page on its home RM's web UI.
	RMURL string
}

type uiAppsData struct {
	Apps    []uiApp
	Total   int
	Shown   int
	ByState map[string]int
	Query   template.URL // the REST query string the page used (url.Values.Encode)
}

func (r *Router) uiApps(ctx context.Context, req *http.Request) (string, any, error) {
	q, err := rmrest.ParseAppsQuery(req.URL.Query())
	if err != nil {
		return "Applications", nil, err
	}
	parts, err := perSC(ctx, r, "GET /ws/v1/cluster/apps", func(sc SubClusterInfo) (scPart[rmrest.App], error) {
		apps, err := r.appsOf(ctx, sc, q)
		return scPart[rmrest.App]{sc.ID, apps}, err
	})
	d := uiAppsData{ByState: map[string]int{}, Query: template.URL(restQuery(req.URL.Query()))}
	if err != nil {
		return "Applications", d, err
	}
	lists, ids := make([][]rmrest.App, len(parts)), make([]SubClusterID, len(parts))
	home := map[string]SubClusterID{}
	for i, p := range parts {
		lists[i], ids[i] = p.items, p.sc
		for _, a := range p.items {
			if !(a.UnmanagedApplication && strings.HasPrefix(a.Name, merge.UAMName)) {
				if _, seen := home[a.ID]; !seen {
					home[a.ID] = p.sc // the first managed copy, as MergeAppInfos keeps
				}
			}
		}
	}
	merged := MergeAppInfosBySC(ids, lists, r.cfg.PartialResults) // spans: uam.go
	if q.Limit > 0 && int64(len(merged)) > q.Limit {
		merged = merged[:q.Limit]
	}
	d.Total = len(merged)
	for i, a := range merged {
		d.ByState[a.State]++
		if i >= uiMaxApps {
			continue
		}
		u := uiApp{App: a, Home: home[a.ID]}
		if sc, ok := r.members.get(u.Home); ok {
			if addrs := hostport.SplitList(sc.RMWebServiceAddress); len(addrs) > 0 {
				u.RMURL = "http://" + addrs[0] + "/cluster/app/" + url.PathEscape(a.ID)
			}
		}
		d.Apps = append(d.Apps, u)
	}
	d.Shown = len(d.Apps)
	return "Applications", d, nil
}

type uiAppDetail struct {
	App         rmrest.App
	Home        SubClusterID
	RMURL       string
	Attempts    []rmrest.AppAttempt
	AttemptsErr string
}

// uiApp is one application: the document and attempts REST serves for it
// (/apps/{id}, /apps/{id}/appattempts), its home, and the sub-clusters it
// spans with its containers in each (read from the UAM registry whatever
// the app's state: lingering UAMs are what an operator looks for).
func (r *Router) uiApp(ctx context.Context, req *http.Request) (string, any, error) {
	rep, err := r.restAppDoc(ctx, req, true)
	if err != nil {
		return "Application", nil, err
	}
	app, _ := rep.xml.(rmrest.App)
	d := uiAppDetail{App: app}
	if id, perr := yarnid.ParseAppID(app.ID); perr == nil {
		if home, _, herr := r.homeOf(ctx, id); herr == nil {
			d.Home = home
			if sc, ok := r.members.get(home); ok {
				if addrs := hostport.SplitList(sc.RMWebServiceAddress); len(addrs) > 0 {
					d.RMURL = "http://" + addrs[0] + "/cluster/app/" + url.PathEscape(app.ID)
				}
			}
		}
	}
	arep, aerr := r.restAttempts(ctx, req)
	if atts, ok := arep.xml.(rmrest.AppAttempts); ok && aerr == nil {
		d.Attempts = atts.AppAttempt
	} else if aerr != nil {
		_, body := restFailure(aerr)
		d.AttemptsErr = body.RemoteException.Message
	}
	return "Application " + app.ID, d, nil
}

// restQuery keeps the query parameters REST understands (not user.name).
func restQuery(v url.Values) string {
	out := url.Values{}
	for k, vs := range v {
		if k != "user.name" {
			out[k] = vs
		}
	}
	return out.Encode()
}

// --- Queue policies ---

type uiPolicy struct {
	policies.QueueWeight
	Weighted bool
}

type uiPoliciesData struct {
	Policies      []uiPolicy
	DefaultPolicy string
}

func (r *Router) uiPolicies(ctx context.Context, _ *http.Request) (string, any, error) {
	d := uiPoliciesData{DefaultPolicy: r.cfg.DefaultPolicy}
	pols, err := r.sortedPolicies(ctx)
	if err != nil {
		return "Queue policies", d, err
	}
	for _, p := range pols {
		w, werr := policies.QueueWeightOf(policies.PolicyConfig{Queue: p.Queue, Type: p.Type, Params: p.Params})
		if werr != nil {
			w = policies.QueueWeight{Queue: p.Queue, PolicyManagerClassName: p.Type}
		}
		d.Policies = append(d.Policies, uiPolicy{QueueWeight: w, Weighted: werr == nil})
	}
	return "Queue policies", d, nil
}
