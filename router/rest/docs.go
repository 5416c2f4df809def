package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hostport"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/merge"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// App and node documents come from the RMs' own REST APIs, as Hadoop's
// FederationInterceptorREST does, so REST clients see every field an RM
// sends (resourceInformations, timeouts, resourceSecondsMap, ...). When a
// sub-cluster's REST API does not answer, its part is rendered from the
// IPC reports instead (fewer fields, still correct), so REST keeps working
// wherever IPC does.

var ErrNoWeb = errors.New("no RM web address registered")

// rmREST runs fn against sc's RM REST API, trying each address of an HA
// list; the caller's identity is passed as user.name.
func (r *API) rmREST(ctx context.Context, sc fed.SubClusterInfo, fn func(context.Context, *rmrest.Client) error) error {
	addrs := hostport.SplitList(sc.RMWebServiceAddress)
	if len(addrs) == 0 {
		return ErrNoWeb
	}
	// One call timeout for the whole HA list, as for an IPC call: a hung
	// RM must not cost a timeout per address.
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	var lastErr error
	for _, a := range addrs {
		c := rmrest.NewClient(a)
		c.HTTP, c.User = r.cfg.HTTP, hadoopipc.UserName(ctx)
		err := fn(cctx, c)
		if err == nil {
			return nil
		}
		lastErr = err
		var re *rmrest.Error
		if errors.As(err, &re) && re.Status == http.StatusNotFound {
			return err // an answer, not an outage
		}
		if fed.TimedOut(err) {
			return err // the budget is spent
		}
	}
	return lastErr
}

// restHung turns a REST call to sc that timed out into the request's
// answer: the RM is hung, and falling back to its IPC port would make the
// client wait a second call timeout for the same RM. Other failures (no
// web address, REST refused) fall back to IPC.
func (r *API) restHung(ctx context.Context, sc fed.SubClusterID, what string, err error) error {
	if err == nil || !fed.TimedOut(err) || ctx.Err() != nil {
		return nil
	}
	return r.core.HomeDown(sc, &fed.SubClusterError{SubCluster: sc, Method: what, Err: err})
}

func (r *API) restApp(ctx context.Context, req *http.Request) (restReply, error) {
	return r.restAppDoc(ctx, req, false)
}

// restAppDoc is GET /apps/{id}: the home RM's document, with a spanning
// app's UAMs folded in and its span listed (uams.go); always lists the span
// (the home alone at least) for the web UI's page.
func (r *API) restAppDoc(ctx context.Context, req *http.Request, always bool) (restReply, error) {
	id, err := AppIDParam(req)
	if err != nil {
		return restReply{}, err
	}
	fed.AuditOf(ctx).App = yarnid.AppIDString(id)
	// A caller the router knows may not view the app gets the filtered
	// report of the IPC path.
	if home, _, herr := r.core.HomeOf(ctx, id); herr == nil && r.mayView(ctx, id) {
		if sc, ok := r.core.SubCluster(home); ok {
			var app *rmrest.App
			err := r.rmREST(ctx, sc, func(ctx context.Context, c *rmrest.Client) (err error) {
				app, err = c.GetApp(ctx, yarnid.AppIDString(id))
				return err
			})
			if err == nil {
				if always || restMayHaveUAMs(app.State) {
					spanREST(app, home, r.core.UAMParts(ctx, id, home), always)
				}
				return reply(http.StatusOK, rmrest.AppResponse{App: *app}, *app), nil
			}
			if herr := r.restHung(ctx, home, "GET /ws/v1/cluster/apps/{appid}", err); herr != nil {
				return restReply{}, herr
			}
		}
	}
	// The IPC path handles stale homes, failover waits and not-found.
	resp := &yarnpb.GetApplicationReportResponseProto{}
	if err := r.core.OnHome(ctx, "getApplicationReport", id, &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, resp); err != nil {
		return restReply{}, err
	}
	rep := resp.GetApplicationReport()
	r.core.FilterReport(ctx, rep)
	a := AppInfo(rep, time.Now())
	if r.mayView(ctx, id) && (always || merge.MayHaveUAMs(rep)) {
		if home, _, herr := r.core.HomeOf(ctx, id); herr == nil {
			spanREST(&a, home, r.core.UAMParts(ctx, id, home), always)
		}
	}
	return reply(http.StatusOK, rmrest.AppResponse{App: a}, a), nil
}

// perSC runs one function per routable sub-cluster, at most
// Config.FanOut.Limit at once and all within its deadline, and applies the
// partial-results rule to the failures: a partial answer is reported
// (partial) and names the sub-clusters it left out.
func perSC[T any](ctx context.Context, r *API, what string, fn func(context.Context, fed.SubClusterInfo) (T, error)) ([]T, error) {
	return fanOutSC(ctx, r, what, r.cfg.PartialResults, fn)
}

// perSCPartial is perSC for the documents Hadoop's Router always answers
// with what it got, whatever yarn.router.interceptor.allow-partial-result
// says (FederationInterceptorREST's getApps and getClusterMetricsInfo skip
// a failing sub-cluster after logging it): the call fails only when every
// sub-cluster does. Unlike Hadoop's, the answer names what it left out.
func perSCPartial[T any](ctx context.Context, r *API, what string, fn func(context.Context, fed.SubClusterInfo) (T, error)) ([]T, error) {
	return fanOutSC(ctx, r, what, true, fn)
}

func fanOutSC[T any](ctx context.Context, r *API, what string, partial bool, fn func(context.Context, fed.SubClusterInfo) (T, error)) ([]T, error) {
	cands, err := r.core.Routable(ctx)
	if err != nil {
		return nil, err
	}
	ok, failed := fed.FanOut(ctx, r.cfg.FanOut, cands, func(ctx context.Context, sc fed.SubClusterInfo) (T, error) {
		v, err := fn(ctx, sc)
		if err != nil {
			err = &fed.SubClusterError{SubCluster: sc.ID, Method: what, Err: err}
		}
		return v, err
	})
	if len(failed) > 0 && (!partial || len(ok) == 0) {
		return ok, fed.Join(failed)
	}
	r.partial(ctx, what, failed)
	return ok, nil
}

// partial reports a fan-out answered without the sub-clusters of failed.
func (r *API) partial(ctx context.Context, what string, failed []error) {
	if len(failed) > 0 && r.cfg.OnPartial != nil {
		r.cfg.OnPartial(ctx, what, failed)
	}
}

func (r *API) restApps(ctx context.Context, req *http.Request) (restReply, error) {
	q, err := rmrest.ParseAppsQuery(req.URL.Query())
	if err != nil {
		return restReply{}, err
	}
	ids, lists, err := r.AppsBySC(ctx, q)
	if err != nil {
		return restReply{}, err
	}
	out := rmrest.Apps{App: merge.AppInfosBySC(ids, lists, r.cfg.PartialResults)}
	if q.Limit > 0 && int64(len(out.App)) > q.Limit {
		out.App = out.App[:q.Limit]
	}
	r.FilterApps(ctx, out.App)
	if restwire.WantsXML(req) {
		return reply(http.StatusOK, nil, out), nil
	}
	// JSON is written one application at a time: no second copy of the
	// whole list as bytes while it is served.
	return restReply{status: http.StatusOK, stream: func(w io.Writer) error {
		return restwire.JSONList(w, "apps", "app", [][]rmrest.App{out.App}, func(a rmrest.App) ([]byte, error) { return a.MarshalJSON() })
	}}, nil
}

// appsOf is one sub-cluster's part of /apps (also the web UI's): its RM's
// REST list, or its IPC list when the REST API does not answer.
func (r *API) appsOf(ctx context.Context, sc fed.SubClusterInfo, q rmrest.AppsQuery) ([]rmrest.App, error) {
	var apps []rmrest.App
	rerr := r.rmREST(ctx, sc, func(ctx context.Context, c *rmrest.Client) (err error) {
		apps, err = c.GetApps(ctx, q)
		return err
	})
	if rerr == nil {
		return apps, nil
	}
	if herr := r.restHung(ctx, sc.ID, "GET /ws/v1/cluster/apps", rerr); herr != nil {
		return nil, herr
	}
	return r.appsOverIPC(ctx, sc, q)
}

// appsOverIPC is one sub-cluster's app list from its ApplicationClientProtocol.
func (r *API) appsOverIPC(ctx context.Context, sc fed.SubClusterInfo, q rmrest.AppsQuery) ([]rmrest.App, error) {
	preq := &yarnpb.GetApplicationsRequestProto{Users: nonEmpty(q.User), Queues: nonEmpty(q.Queue), ApplicationTypes: q.ApplicationTypes, ApplicationTags: q.ApplicationTags}
	for _, s := range q.States {
		if v, ok := yarnpb.YarnApplicationStateProto_value[s]; ok {
			preq.ApplicationStates = append(preq.ApplicationStates, yarnpb.YarnApplicationStateProto(v))
		}
	}
	if q.StartedTimeBegin > 0 || q.StartedTimeEnd > 0 {
		preq.StartBegin, preq.StartEnd = proto.Int64(q.StartedTimeBegin), proto.Int64(endOr(q.StartedTimeEnd))
	}
	if q.FinishedTimeBegin > 0 || q.FinishedTimeEnd > 0 {
		preq.FinishBegin, preq.FinishEnd = proto.Int64(q.FinishedTimeBegin), proto.Int64(endOr(q.FinishedTimeEnd))
	}
	if q.Name != "" {
		preq.Name = proto.String(q.Name)
	}
	resp := &yarnpb.GetApplicationsResponseProto{}
	if err := r.core.CallSC(ctx, sc, "getApplications", preq, resp); err != nil {
		return nil, err
	}
	now := time.Now()
	var out []rmrest.App
	for _, a := range resp.GetApplications() {
		info := AppInfo(a, now)
		if q.FinalStatus != "" && !strings.EqualFold(info.FinalStatus, q.FinalStatus) {
			continue
		}
		out = append(out, info)
	}
	return out, nil
}

func (r *API) restNodeList(ctx context.Context, states string) ([]rmrest.Node, error) {
	lists, err := r.rawNodeLists(ctx, states)
	if err != nil {
		return nil, err
	}
	var out []rmrest.Node
	for _, l := range lists {
		nodes, err := l.Nodes()
		if err != nil {
			return nil, err
		}
		out = append(out, nodes...)
	}
	return out, nil
}

// rawNodeLists is every routable sub-cluster's /nodes as its RM sent it.
func (r *API) rawNodeLists(ctx context.Context, states string) ([]rmrest.RawNodes, error) {
	return perSC(ctx, r, "GET /ws/v1/cluster/nodes", func(ctx context.Context, sc fed.SubClusterInfo) (rmrest.RawNodes, error) {
		return r.rawNodesOf(ctx, sc, states)
	})
}

// nodesOf is one sub-cluster's part of /nodes, typed (the web UI's, a
// node's sub-cluster).
func (r *API) nodesOf(ctx context.Context, sc fed.SubClusterInfo, states string) ([]rmrest.Node, error) {
	raw, err := r.rawNodesOf(ctx, sc, states)
	if err != nil {
		return nil, err
	}
	return raw.Nodes()
}

// rawNodesOf is one sub-cluster's part of /nodes: its RM's REST list, each
// node's JSON as the RM sent it, or its IPC node reports rendered when the
// REST API does not answer.
func (r *API) rawNodesOf(ctx context.Context, sc fed.SubClusterInfo, states string) (rmrest.RawNodes, error) {
	var nodes rmrest.RawNodes
	if rerr := r.rmREST(ctx, sc, func(ctx context.Context, c *rmrest.Client) (err error) {
		nodes, err = c.GetRawNodes(ctx, states)
		return err
	}); rerr == nil {
		return nodes, nil
	} else if herr := r.restHung(ctx, sc.ID, "GET /ws/v1/cluster/nodes", rerr); herr != nil {
		return nil, herr
	}
	preq := &yarnpb.GetClusterNodesRequestProto{}
	for _, s := range strings.Split(states, ",") {
		if s != "" {
			preq.NodeStates = append(preq.NodeStates, yarnpb.NodeStateProto(yarnpb.NodeStateProto_value["NS_"+s]))
		}
	}
	resp := &yarnpb.GetClusterNodesResponseProto{}
	if err := r.core.CallSC(ctx, sc, "getClusterNodes", preq, resp); err != nil {
		return nil, err
	}
	for _, n := range resp.GetNodeReports() {
		b, err := json.Marshal(NodeInfo(n))
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, b)
	}
	return nodes, nil
}

// restNodes is GET /nodes: the RMs' lists one after the other. JSON is
// streamed to the client from the RMs' own bytes (no decode, no re-encode,
// every field an RM sends kept); XML is rendered from the typed nodes.
func (r *API) restNodes(ctx context.Context, req *http.Request) (restReply, error) {
	var states []string
	for _, raw := range req.URL.Query()["states"] {
		for _, s := range strings.Split(raw, ",") {
			s = strings.ToUpper(strings.TrimSpace(s))
			if s == "" {
				continue
			}
			if !slices.Contains(restwire.NodeStates, s) {
				return restReply{}, restwire.BadRequest("invalid node state %q, want one of %s", s, strings.Join(restwire.NodeStates, ","))
			}
			states = append(states, s)
		}
	}
	lists, err := r.rawNodeLists(ctx, strings.Join(states, ","))
	if err != nil {
		return restReply{}, err
	}
	if restwire.WantsXML(req) {
		var out rmrest.Nodes
		for _, l := range lists {
			nodes, err := l.Nodes()
			if err != nil {
				return restReply{}, err
			}
			out.Node = append(out.Node, nodes...)
		}
		return reply(http.StatusOK, nil, out), nil
	}
	var items [][]json.RawMessage
	for _, l := range lists {
		items = append(items, l)
	}
	return restReply{status: http.StatusOK, stream: func(w io.Writer) error {
		return restwire.JSONList(w, "nodes", "node", items, func(raw json.RawMessage) ([]byte, error) { return raw, nil })
	}}, nil
}

func (r *API) restNode(ctx context.Context, req *http.Request) (restReply, error) {
	want := req.PathValue("nodeid")
	nodes, err := r.restNodeList(ctx, "")
	if err != nil {
		return restReply{}, err
	}
	for _, n := range nodes {
		if n.ID == want {
			return reply(http.StatusOK, rmrest.NodeResponse{Node: n}, n), nil
		}
	}
	return restReply{}, &restwire.Error{Status: http.StatusNotFound, Class: rmrest.ClassNotFound,
		Err: fmt.Errorf("nodeId, %s, is not found", want)}
}

// scPart is one sub-cluster's part of a list.
type scPart[T any] struct {
	sc    fed.SubClusterID
	items []T
}
