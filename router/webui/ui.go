package webui

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/fed"
)

// REST is what the pages read through the REST API's own code
// (router/rest's *API implements it), so a page shows what its REST
// counterpart answers.
type REST interface {
	// Metrics is /ws/v1/cluster/metrics's document.
	Metrics(ctx context.Context, req *http.Request) (rmrest.ClusterMetrics, error)
	// AppSpan is /ws/v1/cluster/apps/{appid}'s document, its span listed.
	AppSpan(ctx context.Context, req *http.Request) (rmrest.App, error)
	// Attempts is /ws/v1/cluster/apps/{appid}/appattempts's list.
	Attempts(ctx context.Context, req *http.Request) ([]rmrest.AppAttempt, error)
	// AppsBySC and NodesBySC are each routable sub-cluster's part of
	// /apps and /nodes, under the partial-results rule.
	AppsBySC(ctx context.Context, q rmrest.AppsQuery) ([]fed.SubClusterID, [][]rmrest.App, error)
	NodesBySC(ctx context.Context, states string) ([]fed.SubClusterID, [][]rmrest.Node, error)
	// FailureText is the status and message REST would answer err with.
	FailureText(err error) (status int, msg string)
	// FilterApps hides in each of apps what the caller in ctx may not
	// view, as /apps does (application ACLs; nothing when they are off).
	FilterApps(ctx context.Context, apps []rmrest.App)
	// CheckView is the VIEW_APP check /apps/{appid}/appattempts applies:
	// nil when the caller in ctx may view id, else its 403, counted as a
	// refusal of method.
	CheckView(ctx context.Context, method string, id *yarnpb.ApplicationIdProto) error
}

// Core is what the pages need of the router itself.
type Core interface {
	// About is the About page's router and store part (Metrics left out).
	About(ctx context.Context) About
	// Members is every registered sub-cluster, with whether the router
	// routes to it and why not.
	Members(ctx context.Context) ([]Member, error)
	SubCluster(id fed.SubClusterID) (fed.SubClusterInfo, bool)
	HomeOf(ctx context.Context, app *yarnpb.ApplicationIdProto) (fed.SubClusterID, bool, error)
	// Policies is every stored queue policy, sorted by queue.
	Policies(ctx context.Context) ([]Policy, error)
	// Observe counts a page and its latency (yarnfed_router_requests_total).
	Observe(method string, start time.Time, err error)
}

// Member is a sub-cluster as the router's routing sees it.
type Member struct {
	fed.SubClusterInfo
	Routable bool
	Why      string // why not routable
}

// Policy is a stored per-queue policy: the manager type and its params.
type Policy struct {
	Queue, Type string
	Params      []byte
}

// Settings are the router settings the pages show.
type Settings struct {
	FailoverWait   time.Duration
	PartialResults bool
	DefaultPolicy  string
	Version        string
}

// About is the About page's data.
type About struct {
	Started      time.Time
	Uptime       time.Duration
	ClientRMAddr string
	AdminAddr    string
	WebAddr      string
	Config       Settings
	Store        fed.StoreStatus
	StoreErr     string
	SubClusters  int
	Routable     int
	Metrics      *rmrest.ClusterMetrics
	MetricsErr   string
}

// Config is what the web UI is built with.
type Config struct {
	Settings
	// PublishedTTL is how long a GPG-published capacity is fresh.
	PublishedTTL time.Duration
	// WebUser gives a page the web caller's identity (SPNEGO or
	// user.name), as the REST API has it.
	WebUser func(serve func(http.ResponseWriter, *http.Request, hadoopipc.User)) http.HandlerFunc
	Log     *slog.Logger
}

// UI serves the web UI's pages.
type UI struct {
	core Core
	rest REST
	cfg  Config
}

// New builds the web UI on the router core and its REST API.
func New(core Core, rest REST, cfg Config) *UI {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &UI{core: core, rest: rest, cfg: cfg}
}
