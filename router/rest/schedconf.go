package rest

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// Scheduler activities and the scheduler configuration, as Hadoop's
// FederationInterceptorREST serves them (before, the router answered them
// with a plain-text 404 of its own mux):
//   - GET /scheduler/activities needs nodeId and groupBy (400 without),
//     and goes to the sub-cluster that has the node (404 when none has);
//   - GET /scheduler-conf asks every RM and lists their configurations in
//     {"federationConfInfo":{"subCluster":[{...,"subClusterId":...}]}}; an
//     RM's 4xx (a CapacityScheduler whose configuration is file-based, not
//     mutable, refuses with 400) is relayed as the answer, the rule of every
//     fan-out here (fetchAll), where Hadoop's router answers 200 and lists
//     the refusals in errorMsgs;
//   - PUT /scheduler-conf needs the subClusterId Hadoop's router reads from
//     the body (SchedConfUpdateInfo) and is relayed to that RM.
// Errors are the RM's RemoteException JSON/XML.

// FederationConfRoot is JAXB's root name for Hadoop's FederationConfInfo.
const FederationConfRoot = "federationConfInfo"

func (r *API) schedulerExtraRoutes(mux Mux, p string) {
	mux.HandleFunc("GET "+p+"/scheduler/activities", r.rest("scheduler-activities", false, r.restActivities))
	mux.HandleFunc("GET "+p+"/scheduler-conf", r.rest("scheduler-conf", false, r.restSchedConf))
	mux.HandleFunc("PUT "+p+"/scheduler-conf", r.rest("scheduler-conf-put", true, r.restPutSchedConf))
}

func (r *API) restActivities(ctx context.Context, req *http.Request) (restReply, error) {
	q := req.URL.Query()
	node := q.Get("nodeId")
	for _, k := range []string{"nodeId", "groupBy"} {
		if q.Get(k) == "" {
			return restReply{}, restwire.BadRequest("%s is required: the router sends activities to the sub-cluster that has the node", k)
		}
	}
	type held struct {
		sc  fed.SubClusterInfo
		has bool
	}
	found, err := perSC(ctx, r, "GET /ws/v1/cluster/nodes", func(ctx context.Context, sc fed.SubClusterInfo) (held, error) {
		nodes, err := r.nodesOf(ctx, sc, "")
		if err != nil {
			return held{}, err
		}
		return held{sc, slices.ContainsFunc(nodes, func(n rmrest.Node) bool { return n.ID == node })}, nil
	})
	if err != nil {
		return restReply{}, err
	}
	for _, h := range found {
		if h.has {
			rl, err := r.relay(ctx, h.sc, req, req.URL.EscapedPath(), nil)
			if err != nil {
				return restReply{}, r.unroutableREST(err)
			}
			fed.AuditOf(ctx).SC = h.sc.ID
			return restReply{raw: rl}, nil
		}
	}
	return restReply{}, &restwire.Error{Status: http.StatusNotFound, Class: rmrest.ClassNotFound,
		Err: fmt.Errorf("nodeId %s is in no routable sub-cluster", node)}
}

func (r *API) restSchedConf(ctx context.Context, req *http.Request) (restReply, error) {
	return r.restPerSubCluster(ctx, req, "/ws/v1/cluster/scheduler-conf", FederationConfRoot, "")
}

func (r *API) restPutSchedConf(ctx context.Context, req *http.Request) (restReply, error) {
	body, err := restwire.ReadBody(req)
	if err != nil {
		return restReply{}, err
	}
	var in struct {
		SubClusterID string `json:"subClusterId" xml:"subClusterId"`
	}
	if err := restwire.DecodeBody(req.Header.Get("Content-Type"), body, &in); err != nil {
		return restReply{}, err
	}
	if in.SubClusterID == "" {
		return restReply{}, restwire.BadRequest("subClusterId is required: the router changes one sub-cluster's scheduler configuration at a time")
	}
	sc, ok := r.core.SubCluster(fed.SubClusterID(in.SubClusterID))
	if !ok {
		return restReply{}, &restwire.Error{Status: http.StatusNotFound, Class: rmrest.ClassNotFound,
			Err: fmt.Errorf("sub-cluster %s is not registered", in.SubClusterID)}
	}
	rl, err := r.relay(ctx, sc, req, req.URL.EscapedPath(), body)
	if err != nil {
		return restReply{}, r.unroutableREST(err)
	}
	fed.AuditOf(ctx).SC = sc.ID
	return restReply{raw: rl}, nil
}
