package webui

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
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/merge"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// The federation web UI's pages: server-rendered (html/template, no
// JavaScript; templates and rendering in webui.go) on the web port, at
// Hadoop's Router paths under /cluster. This file gathers each page's data.
// Every number comes from the code that serves the REST API (the REST
// interface: router/rest's per-sub-cluster reads and handlers) or from the
// router's membership (Core), so a page and its REST counterpart agree. Application names, queues, users, diagnostics and
// tracking URLs are user input: html/template escapes them by context
// (text, attribute, URL; a javascript: URL becomes "#ZgotmplZ"), and the
// Content-Security-Policy forbids scripts altogether as a second fence.

// The pages (Hadoop's Router serves /cluster as its
// about page; /cluster/policies is ours: Hadoop lists policies only through
// routeradmin).
// Routes registers the pages on mux.
func (r *UI) Routes(mux *http.ServeMux) {
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
	mux.Handle("GET /static/", http.StripPrefix("/static/", Static()))
}

// uiHandler builds a page's data; a non-nil error is shown on the page
// with the HTTP status REST would have answered.
type uiHandler func(ctx context.Context, req *http.Request) (title string, data any, err error)

func (r *UI) page(name string, h uiHandler) http.HandlerFunc {
	method := "UI " + name
	serve := func(w http.ResponseWriter, req *http.Request, u hadoopipc.User) {
		start := time.Now()
		user := u.Name
		ctx := hadoopipc.ContextWithUser(req.Context(), u)
		title, data, err := h(ctx, req)
		r.core.Observe(method, start, err)
		v := View{Page: name, Title: title, User: user, Now: time.Now(), Version: r.cfg.Version, Data: data}
		status := http.StatusOK
		if err != nil {
			status, v.Err = r.rest.FailureText(err)
		}
		if terr := Render(w, status, v); terr != nil {
			r.cfg.Log.Error("web UI template failed", "page", name, "err", terr)
			http.Error(w, "page rendering failed", http.StatusInternalServerError)
		}
	}
	// The pages list every application and its user: with SPNEGO on they
	// are behind it as REST is (an RM's pages are behind the same filter).
	return r.cfg.WebUser(serve)
}

// --- About ---

func (r *UI) uiAbout(ctx context.Context, req *http.Request) (string, any, error) {
	d := r.core.About(ctx)
	// The same handler as /ws/v1/cluster/metrics: the same numbers.
	// A failure is shown in its place: the rest of the page (router, store)
	// is what an operator opens About for when sub-clusters misbehave.
	if m, err := r.rest.Metrics(ctx, req); err == nil {
		d.Metrics = &m
	} else {
		_, d.MetricsErr = r.rest.FailureText(err)
	}
	return "About the federation", d, nil
}

// --- Federation ---

type uiSubCluster struct {
	fed.SubClusterInfo
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

func (r *UI) uiFederation(ctx context.Context, _ *http.Request) (string, any, error) {
	members, err := r.core.Members(ctx)
	if err != nil {
		return "Federation", nil, fmt.Errorf("read membership: %w", err)
	}
	d := uiFederationData{PublishedTTL: r.cfg.PublishedTTL}
	for _, m := range members {
		sc := m.SubClusterInfo
		u := uiSubCluster{SubClusterInfo: sc, Routable: m.Routable, Why: m.Why}
		if u.Routable {
			d.Routable++
		}
		if sc.Capability != "" {
			if m, err := restwire.ParseCapability(sc.Capability); err == nil {
				u.Capability = m
			} else {
				u.CapErr = err.Error()
			}
		}
		if p := sc.Published; p != nil {
			ttl := r.cfg.PublishedTTL
			u.PublishedFresh = ttl > 0 && time.Since(p.PublishedAt) <= ttl
		}
		if addrs := hostport.SplitList(sc.RMWebServiceAddress); len(addrs) > 0 {
			u.WebURL = "http://" + addrs[0] + "/cluster"
		}
		d.SubClusters = append(d.SubClusters, u)
	}
	pols, err := r.core.Policies(ctx)
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

// --- Nodes ---

type uiNode struct {
	rmrest.Node
	SubCluster fed.SubClusterID
}

type uiNodesData struct {
	Nodes   []uiNode
	ByState map[string]int
	States  string
}

func (r *UI) uiNodes(ctx context.Context, req *http.Request) (string, any, error) {
	states := strings.ToUpper(req.URL.Query().Get("states"))
	for _, s := range strings.Split(states, ",") {
		if s != "" && !slices.Contains(restwire.NodeStates, s) {
			return "Nodes", nil, restwire.BadRequest("invalid node state %q, want one of %s", s, strings.Join(restwire.NodeStates, ","))
		}
	}
	ids, lists, err := r.rest.NodesBySC(ctx, states)
	d := uiNodesData{ByState: map[string]int{}, States: states}
	if err != nil {
		return "Nodes", d, err
	}
	for i, nodes := range lists {
		for _, n := range nodes {
			d.Nodes = append(d.Nodes, uiNode{Node: n, SubCluster: ids[i]})
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
	Home fed.SubClusterID // "" when only UAM copies were seen (partial results)
	// RMURL is the app's page on its home RM's web UI.
	RMURL string
}

type uiAppsData struct {
	Apps    []uiApp
	Total   int
	Shown   int
	ByState map[string]int
	Query   template.URL // the REST query string the page used (url.Values.Encode)
	// LeftOut are the sub-clusters that did not answer: the list is
	// partial (REST names them in its Yarnfed-Subclusters-Left-Out header).
	LeftOut []fed.SubClusterID
}

func (r *UI) uiApps(ctx context.Context, req *http.Request) (string, any, error) {
	q, err := rmrest.ParseAppsQuery(req.URL.Query())
	if err != nil {
		return "Applications", nil, err
	}
	ctx, audit := fed.WithAudit(ctx) // collects the sub-clusters a partial list left out
	ids, lists, err := r.rest.AppsBySC(ctx, q)
	d := uiAppsData{ByState: map[string]int{}, Query: template.URL(restQuery(req.URL.Query()))}
	if err != nil {
		return "Applications", d, err
	}
	d.LeftOut = audit.LeftOut()
	home := map[string]fed.SubClusterID{}
	for i, apps := range lists {
		for _, a := range apps {
			if !(a.UnmanagedApplication && strings.HasPrefix(a.Name, merge.UAMName)) {
				if _, seen := home[a.ID]; !seen {
					home[a.ID] = ids[i] // the first managed copy, as merge.AppInfos keeps
				}
			}
		}
	}
	merged := merge.AppInfosBySC(ids, lists, r.cfg.PartialResults)
	if q.Limit > 0 && int64(len(merged)) > q.Limit {
		merged = merged[:q.Limit]
	}
	// Application ACLs, as /apps and an RM's apps page (RMAppsBlock lists
	// the reports ClientRMService.getApplications gives the caller): every
	// application is listed, and one the caller may not view only with
	// what anyone may see (no tracking URL, progress, usage or span).
	r.rest.FilterApps(ctx, merged)
	d.Total = len(merged)
	for i, a := range merged {
		d.ByState[a.State]++
		if i >= uiMaxApps {
			continue
		}
		u := uiApp{App: a, Home: home[a.ID]}
		if sc, ok := r.core.SubCluster(u.Home); ok {
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
	Home        fed.SubClusterID
	RMURL       string
	Attempts    []rmrest.AppAttempt
	AttemptsErr string
}

// uiApp is one application: the document and attempts REST serves for it
// (/apps/{id}, /apps/{id}/appattempts), its home, and the sub-clusters it
// spans with its containers in each (read from the UAM registry whatever
// the app's state: lingering UAMs are what an operator looks for).
//
// A caller without VIEW_APP gets REST's 403 for the app's attempts and
// nothing of the app: an RM's app page (AppBlock) reads the attempts as
// the caller before it renders anything, and on their refusal shows only
// that it could not read them. The check comes first, so no RM is asked.
func (r *UI) uiApp(ctx context.Context, req *http.Request) (string, any, error) {
	if id, perr := yarnid.ParseAppIDProto(req.PathValue("appid")); perr == nil {
		if err := r.rest.CheckView(ctx, "UI app", id); err != nil {
			return "Application " + yarnid.AppIDString(id), nil, err
		}
	}
	app, err := r.rest.AppSpan(ctx, req)
	if err != nil {
		return "Application", nil, err
	}
	d := uiAppDetail{App: app}
	if id, perr := yarnid.ParseAppIDProto(app.ID); perr == nil {
		if home, _, herr := r.core.HomeOf(ctx, id); herr == nil {
			d.Home = home
			if sc, ok := r.core.SubCluster(home); ok {
				if addrs := hostport.SplitList(sc.RMWebServiceAddress); len(addrs) > 0 {
					d.RMURL = "http://" + addrs[0] + "/cluster/app/" + url.PathEscape(app.ID)
				}
			}
		}
	}
	if atts, aerr := r.rest.Attempts(ctx, req); aerr == nil {
		d.Attempts = atts
	} else {
		_, d.AttemptsErr = r.rest.FailureText(aerr)
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

func (r *UI) uiPolicies(ctx context.Context, _ *http.Request) (string, any, error) {
	d := uiPoliciesData{DefaultPolicy: r.cfg.DefaultPolicy}
	pols, err := r.core.Policies(ctx)
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
