package rest

import (
	"context"
	"net/http"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/router/fed"
)

// What the web UI's pages read (router/webui declares it as its REST
// interface): the handlers and per-sub-cluster reads that serve the API,
// so a page and its REST counterpart show the same numbers.

// Metrics is GET /ws/v1/cluster/metrics's document.
func (r *API) Metrics(ctx context.Context, req *http.Request) (rmrest.ClusterMetrics, error) {
	rep, err := r.restMetrics(ctx, req)
	if err != nil {
		return rmrest.ClusterMetrics{}, err
	}
	m, _ := rep.xml.(rmrest.ClusterMetrics)
	return m, nil
}

// AppSpan is GET /ws/v1/cluster/apps/{appid}'s document with its span
// always listed (the home alone at least).
func (r *API) AppSpan(ctx context.Context, req *http.Request) (rmrest.App, error) {
	rep, err := r.restAppDoc(ctx, req, true)
	if err != nil {
		return rmrest.App{}, err
	}
	app, _ := rep.xml.(rmrest.App)
	return app, nil
}

// Attempts is GET /ws/v1/cluster/apps/{appid}/appattempts's list.
func (r *API) Attempts(ctx context.Context, req *http.Request) ([]rmrest.AppAttempt, error) {
	rep, err := r.restAttempts(ctx, req)
	if err != nil {
		return nil, err
	}
	atts, _ := rep.xml.(rmrest.AppAttempts)
	return atts.AppAttempt, nil
}

// AppsBySC is every routable sub-cluster's part of GET /apps, unmerged: as
// Hadoop's Router, the parts of the sub-clusters that answered, unless none
// did (perSCPartial).
func (r *API) AppsBySC(ctx context.Context, q rmrest.AppsQuery) ([]fed.SubClusterID, [][]rmrest.App, error) {
	parts, err := perSCPartial(ctx, r, "GET /ws/v1/cluster/apps", func(ctx context.Context, sc fed.SubClusterInfo) (scPart[rmrest.App], error) {
		apps, err := r.appsOf(ctx, sc, q)
		return scPart[rmrest.App]{sc.ID, apps}, err
	})
	return unzip(parts, err)
}

// NodesBySC is every routable sub-cluster's part of GET /nodes.
func (r *API) NodesBySC(ctx context.Context, states string) ([]fed.SubClusterID, [][]rmrest.Node, error) {
	parts, err := perSC(ctx, r, "GET /ws/v1/cluster/nodes", func(ctx context.Context, sc fed.SubClusterInfo) (scPart[rmrest.Node], error) {
		nodes, err := r.nodesOf(ctx, sc, states)
		return scPart[rmrest.Node]{sc.ID, nodes}, err
	})
	return unzip(parts, err)
}

func unzip[T any](parts []scPart[T], err error) ([]fed.SubClusterID, [][]T, error) {
	if err != nil {
		return nil, nil, err
	}
	ids, lists := make([]fed.SubClusterID, len(parts)), make([][]T, len(parts))
	for i, p := range parts {
		ids[i], lists[i] = p.sc, p.items
	}
	return ids, lists, nil
}

// FailureText is the status and message REST would answer err with.
func (r *API) FailureText(err error) (int, string) {
	status, body := Failure(err)
	return status, body.RemoteException.Message
}
