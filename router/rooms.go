package router

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/rest"
	"github.com/yarnfed/yarnfed/router/webui"
)

// The rooms' view of the router: roomCore implements the interfaces the
// REST API (rest.Core) and the web UI (webui.Core) declare, each method a
// thin call into the routing, membership and access code of this package.
// The rooms never import the root.
type roomCore struct{ r *Router }

var _ rest.Core = roomCore{}

// newREST builds the REST API room on the router.
func (r *Router) newREST() *rest.API {
	cfg := rest.Config{CallTimeout: r.cfg.CallTimeout.D(), PartialResults: r.cfg.PartialResults,
		FanOut: r.cfg.fan(), OnPartial: r.partialAnswer,
		HTTP: r.http, Started: r.started, WebUser: r.withWebUser, Log: r.log}
	if r.appACLs != nil { // a nil *Table in the interface would not be nil
		cfg.ACLs = r.appACLs
	}
	return rest.New(roomCore{r}, cfg)
}

func (c roomCore) SubCluster(id fed.SubClusterID) (fed.SubClusterInfo, bool) {
	return c.r.members.get(id)
}
func (c roomCore) Routable(ctx context.Context) ([]fed.SubClusterInfo, error) {
	return c.r.routableNow(ctx)
}
func (c roomCore) HomeOf(ctx context.Context, app *yarnpb.ApplicationIdProto) (fed.SubClusterID, bool, error) {
	return c.r.homeOf(ctx, app)
}
func (c roomCore) DropHome(app string)                           { c.r.homes.drop(app) }
func (c roomCore) HomeDown(id fed.SubClusterID, err error) error { return c.r.homeDown(id, err) }
func (c roomCore) OnHome(ctx context.Context, method string, app *yarnpb.ApplicationIdProto, req, resp proto.Message) error {
	return c.r.onHome(ctx, method, app, req, resp)
}
func (c roomCore) CallSC(ctx context.Context, sc fed.SubClusterInfo, method string, req, resp proto.Message) error {
	return c.r.callSC(ctx, sc, method, req, resp)
}
func (c roomCore) OnAny(ctx context.Context, method string, do func(fed.SubClusterInfo) error) error {
	return c.r.onAny(ctx, method, do)
}
func (c roomCore) SubmitReservationVia(ctx context.Context, method, queue string, id *yarnpb.ReservationIdProto, send func(fed.SubClusterInfo) error) error {
	return c.r.submitReservationVia(ctx, method, queue, id, send)
}
func (c roomCore) ReservationHome(ctx context.Context, method string, id *yarnpb.ReservationIdProto) (fed.SubClusterInfo, error) {
	return c.r.reservationHome(ctx, method, id)
}
func (c roomCore) UAMParts(ctx context.Context, app *yarnpb.ApplicationIdProto, home fed.SubClusterID) []rest.UAMPart {
	return c.r.uamParts(ctx, app, home)
}
func (c roomCore) GetNewApplication(ctx context.Context, req *yarnpb.GetNewApplicationRequestProto) (*yarnpb.GetNewApplicationResponseProto, error) {
	return c.r.getNewApplication(ctx, req)
}
func (c roomCore) SubmitApplication(ctx context.Context, req *yarnpb.SubmitApplicationRequestProto) (*yarnpb.SubmitApplicationResponseProto, error) {
	return c.r.submitApplication(ctx, req)
}
func (c roomCore) GetApplicationReport(ctx context.Context, req *yarnpb.GetApplicationReportRequestProto) (*yarnpb.GetApplicationReportResponseProto, error) {
	return c.r.getApplicationReport(ctx, req)
}
func (c roomCore) KillApp(ctx context.Context, app *yarnpb.ApplicationIdProto) (*yarnpb.KillApplicationResponseProto, error) {
	return c.r.killApp(ctx, app)
}
func (c roomCore) IssuesTokens() bool { return c.r.tokens != nil }
func (c roomCore) IssueToken(ctx context.Context, u hadoopipc.User, renewer string) (*commonpb.TokenProto, *yarnpb.YARNDelegationTokenIdentifierProto, time.Time, error) {
	return c.r.issueToken(ctx, u, renewer)
}
func (c roomCore) RenewDelegationToken(ctx context.Context, req *commonpb.RenewDelegationTokenRequestProto) (*commonpb.RenewDelegationTokenResponseProto, error) {
	return c.r.renewDelegationToken(ctx, req)
}
func (c roomCore) CancelDelegationToken(ctx context.Context, req *commonpb.CancelDelegationTokenRequestProto) (*commonpb.CancelDelegationTokenResponseProto, error) {
	return c.r.cancelDelegationToken(ctx, req)
}
func (c roomCore) CheckAppCall(ctx context.Context, method string, app *yarnpb.ApplicationIdProto, req proto.Message) error {
	return c.r.checkAppCall(ctx, method, app, req)
}
func (c roomCore) FilterReport(ctx context.Context, rep *yarnpb.ApplicationReportProto) {
	c.r.filterReport(ctx, rep)
}
func (c roomCore) AuthorizeProxyUser(ctx context.Context, proxied hadoopipc.User, remote net.Addr) error {
	return c.r.authz.proxyUsers.AuthorizeConnection(ctx, proxied, remote)
}
func (c roomCore) Observe(method string, start time.Time, err error) {
	c.r.metrics.observe(method, start, err)
}
func (c roomCore) ACLDenied(method string) { c.r.metrics.appACLDenied.WithLabelValues(method).Inc() }
func (c roomCore) Audit(ctx context.Context, op string, a *fed.Audit, err error) {
	c.r.auditLog(ctx, op, a, err)
}

var (
	_ webui.Core = roomCore{}
	_ webui.REST = (*rest.API)(nil) // the pages read through the REST API's code
)

// newUI builds the web UI room on the router and its REST API.
func (r *Router) newUI() *webui.UI {
	return webui.New(roomCore{r}, r.restAPI, webui.Config{Settings: r.uiSettings(),
		PublishedTTL: r.cfg.PublishedCapacityTTL.D(), WebUser: r.withWebUser, Log: r.log})
}

func (r *Router) uiSettings() webui.Settings {
	return webui.Settings{FailoverWait: r.cfg.FailoverWait.D(), PartialResults: r.cfg.PartialResults,
		DefaultPolicy: r.cfg.DefaultPolicy, Version: r.cfg.Version}
}

func (c roomCore) About(ctx context.Context) webui.About {
	r := c.r
	d := webui.About{Started: r.started, Uptime: time.Since(r.started).Round(time.Second), ClientRMAddr: r.ClientRMAddr().String(), Config: r.uiSettings()}
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
	return d
}

func (c roomCore) Members(ctx context.Context) ([]webui.Member, error) {
	m := c.r.members
	if err := m.ensure(ctx); err != nil {
		return nil, err
	}
	var out []webui.Member
	for _, sc := range m.all() {
		u := webui.Member{SubClusterInfo: sc, Routable: m.routable(sc)}
		switch {
		case u.Routable:
		case !sc.State.Active():
			u.Why = "state " + sc.State.String()
		case m.stale(sc):
			u.Why = "heartbeat older than " + c.r.cfg.SubClusterHeartbeatExpiry.D().String()
		default:
			u.Why = "circuit breaker open"
		}
		out = append(out, u)
	}
	return out, nil
}

func (c roomCore) Policies(ctx context.Context) ([]webui.Policy, error) {
	all, err := c.r.sortedPolicies(ctx)
	out := make([]webui.Policy, len(all))
	for i, p := range all {
		out[i] = webui.Policy{Queue: p.Queue, Type: p.Type, Params: p.Params}
	}
	return out, err
}
