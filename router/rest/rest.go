// Package rest is the router's RM REST API (/ws/v1/cluster/...): the
// handlers, their identity, doAs, application-ACL, audit and error
// wrapper, the relay of per-application and per-reservation calls to the
// home RM's web app, and the merges of every sub-cluster's documents.
//
// Routing is not decided here: a handler asks the router core (Core, the
// small interface this package declares and the root implements) where an
// application lives, which sub-clusters are routable and to make the IPC
// calls, so REST and IPC share homes, breakers, the failover window and
// partial results. What is wire (decoding, errors, rendering) is
// router/restwire; the shared vocabulary router/fed.
package rest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router/appacl"
	"github.com/yarnfed/yarnfed/router/fed"
)

// Core is what the REST API needs of the router: its routing (homes,
// routable sub-clusters, calls to one sub-cluster or any), the IPC calls
// REST shares (with their own audit and ACL checks), and its access rules
// and counters. The router root implements it; a test may fake it.
type Core interface {
	// SubCluster is the membership row of id (false: not registered).
	SubCluster(id fed.SubClusterID) (fed.SubClusterInfo, bool)
	// Routable is the sub-clusters a fan-out asks, waiting out the
	// failover window for at least one.
	Routable(ctx context.Context) ([]fed.SubClusterInfo, error)
	// HomeOf is app's home (cached: read from the home cache).
	HomeOf(ctx context.Context, app *yarnpb.ApplicationIdProto) (home fed.SubClusterID, cached bool, err error)
	// DropHome forgets a cached home the RM does not know.
	DropHome(app string)
	// HomeDown marks err, a failure to reach home id, as retriable
	// (fed.ErrSubClusterDown) while id is expected back.
	HomeDown(id fed.SubClusterID, err error) error
	// OnHome makes an IPC call at app's home (stale homes, the failover
	// window and not-found as the IPC calls have them).
	OnHome(ctx context.Context, method string, app *yarnpb.ApplicationIdProto, req, resp proto.Message) error
	// CallSC makes an IPC call at one sub-cluster, through its breaker.
	CallSC(ctx context.Context, sc fed.SubClusterInfo, method string, req, resp proto.Message) error
	// OnAny runs do on a random routable sub-cluster, retried on others.
	OnAny(ctx context.Context, method string, do func(fed.SubClusterInfo) error) error
	// SubmitReservationVia places a reservation by the queue's policy and
	// records its home, sending it with send.
	SubmitReservationVia(ctx context.Context, method, queue string, id *yarnpb.ReservationIdProto, send func(fed.SubClusterInfo) error) error
	// ReservationHome is the sub-cluster a reservation lives in.
	ReservationHome(ctx context.Context, method string, id *yarnpb.ReservationIdProto) (fed.SubClusterInfo, error)
	// UAMParts is app's reports from its secondaries (UAMs).
	UAMParts(ctx context.Context, app *yarnpb.ApplicationIdProto, home fed.SubClusterID) []UAMPart

	GetNewApplication(ctx context.Context, req *yarnpb.GetNewApplicationRequestProto) (*yarnpb.GetNewApplicationResponseProto, error)
	SubmitApplication(ctx context.Context, req *yarnpb.SubmitApplicationRequestProto) (*yarnpb.SubmitApplicationResponseProto, error)
	GetApplicationReport(ctx context.Context, req *yarnpb.GetApplicationReportRequestProto) (*yarnpb.GetApplicationReportResponseProto, error)
	// KillApp kills app at its home, then its UAMs.
	KillApp(ctx context.Context, app *yarnpb.ApplicationIdProto) (*yarnpb.KillApplicationResponseProto, error)
	// IssuesTokens: the store keeps delegation tokens.
	IssuesTokens() bool
	IssueToken(ctx context.Context, u hadoopipc.User, renewer string) (*commonpb.TokenProto, *yarnpb.YARNDelegationTokenIdentifierProto, time.Time, error)
	RenewDelegationToken(ctx context.Context, req *commonpb.RenewDelegationTokenRequestProto) (*commonpb.RenewDelegationTokenResponseProto, error)
	CancelDelegationToken(ctx context.Context, req *commonpb.CancelDelegationTokenRequestProto) (*commonpb.CancelDelegationTokenResponseProto, error)

	// CheckAppCall applies the IPC method's application ACL (nil: allowed).
	CheckAppCall(ctx context.Context, method string, app *yarnpb.ApplicationIdProto, req proto.Message) error
	// FilterReport hides from a caller without VIEW_APP what the RM hides.
	FilterReport(ctx context.Context, rep *yarnpb.ApplicationReportProto)
	// AuthorizeProxyUser applies the proxy_users rules to a doAs.
	AuthorizeProxyUser(ctx context.Context, proxied hadoopipc.User, remote net.Addr) error

	// Observe counts a call and its latency (yarnfed_router_requests_total).
	Observe(method string, start time.Time, err error)
	// ACLDenied counts a refusal by application ACLs.
	ACLDenied(method string)
	// Audit writes the audit line of a mutating call.
	Audit(ctx context.Context, op string, a *fed.Audit, err error)
}

// ACLs is the application ACL table (router/appacl's Table).
type ACLs interface {
	Allowed(ctx context.Context, user, app string, kind appacl.Kind) (ok, known bool)
}

// UAMPart is an application's report from one secondary sub-cluster.
type UAMPart struct {
	SC  fed.SubClusterID
	Rep *yarnpb.ApplicationReportProto
	Err error
}

// Config is what the REST API is built with.
type Config struct {
	// CallTimeout bounds one call to an RM's web app (its whole HA list).
	CallTimeout time.Duration
	// PartialResults: a fan-out skips failing sub-clusters unless all fail.
	PartialResults bool
	// FanOut bounds a fan-out's concurrency and sets its deadline.
	FanOut fed.Fan
	// OnPartial is told of each partial answer (the sub-clusters it left
	// out, as failed calls): the router logs and counts them and records
	// them on the call's audit record, which the wrapper turns into the
	// LeftOutHeader. Nil: nothing reported.
	OnPartial func(ctx context.Context, method string, failed []error)
	// HTTP is the client for the RMs' web apps.
	HTTP *http.Client
	// Started is the router's start time (/info).
	Started time.Time
	// WebUser gives a handler the web caller's identity (SPNEGO or
	// user.name); the web UI's pages and /proxy share it.
	WebUser func(serve func(http.ResponseWriter, *http.Request, hadoopipc.User)) http.HandlerFunc
	// ACLs is the application ACL table; nil: application ACLs are off.
	ACLs ACLs
	Log  *slog.Logger
}

// API serves the RM REST API through the router core.
type API struct {
	core Core
	cfg  Config
}

// New builds the REST API on core.
func New(core Core, cfg Config) *API {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = http.DefaultClient
	}
	return &API{core: core, cfg: cfg}
}

// Mux is what Routes registers on (*http.ServeMux; a recorder in
// TestEveryAppRouteHasACLRule).
type Mux interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
	Handle(pattern string, handler http.Handler)
}

func isClass(err error, class string) bool {
	var re *hadoopipc.RemoteError
	return errors.As(err, &re) && re.Class == class
}

// mayView reports whether the caller may view app, as far as the router
// knows (true when ACLs are off or the app's ACLs are unknown).
func (r *API) mayView(ctx context.Context, app *yarnpb.ApplicationIdProto) bool {
	if r.cfg.ACLs == nil {
		return true
	}
	ok, _ := r.cfg.ACLs.Allowed(ctx, hadoopipc.UserName(ctx), yarnid.AppIDString(app), appacl.View)
	return ok
}
