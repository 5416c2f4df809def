package rest

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// The rest of the RM REST API (issue 13). Per-application calls are
// relayed to the app's home RM (relay.go), reservations to the
// reservation's home (reservation.go); scheduler, appstatistics and
// node labels ask every sub-cluster and merge the way Hadoop's Router
// does; delegation tokens are dtoken.go; /proxy (the AM web proxy) is the
// root's (proxy.go), behind AppCheck.

func (r *API) restMoreRoutes(mux Mux, p string) {
	mux.HandleFunc("GET "+p+"/scheduler", r.rest("scheduler", false, r.restScheduler))
	r.schedulerExtraRoutes(mux, p) // schedconf.go
	mux.HandleFunc("GET "+p+"/appstatistics", r.rest("appstatistics", false, r.restAppStatistics))
	mux.HandleFunc("GET "+p+"/get-node-labels", r.rest("get-node-labels", false, r.restNodeLabels))

	app := p + "/apps/{appid}"
	mux.HandleFunc("GET "+app+"/priority", r.rest("app-priority", false, r.relayApp(nil)))
	mux.HandleFunc("PUT "+app+"/priority", r.rest("app-priority-put", true, r.relayApp(checkBody(restwire.DecodeAppPriority))))
	mux.HandleFunc("GET "+app+"/queue", r.rest("app-queue", false, r.relayApp(nil)))
	mux.HandleFunc("PUT "+app+"/queue", r.rest("app-queue-put", true, r.relayApp(checkBody(restwire.DecodeAppQueue))))
	mux.HandleFunc("GET "+app+"/timeouts", r.rest("app-timeouts", false, r.relayApp(nil)))
	mux.HandleFunc("GET "+app+"/timeouts/{type}", r.rest("app-timeout", false, r.relayApp(nil)))
	mux.HandleFunc("PUT "+app+"/timeout", r.rest("app-timeout-put", true, r.relayApp(checkBody(restwire.DecodeAppTimeout))))
	mux.HandleFunc("GET "+app+"/appattempts/{attemptid}", r.rest("appattempt", false, r.relayApp(nil)))
	mux.HandleFunc("GET "+app+"/appattempts/{attemptid}/containers", r.rest("appattempt-containers", false, r.relayApp(nil)))
	mux.HandleFunc("GET "+app+"/appattempts/{attemptid}/containers/{containerid}", r.rest("appattempt-container", false, r.relayApp(nil)))

	res := p + "/reservation"
	mux.HandleFunc("POST "+res+"/new-reservation", r.rest("new-reservation", true, r.restNewReservation))
	mux.HandleFunc("POST "+res+"/submit", r.rest("reservation-submit", true, r.restSubmitReservation))
	mux.HandleFunc("POST "+res+"/update", r.rest("reservation-update", true, r.restReservationOnHome(restwire.DecodeReservationUpdate)))
	mux.HandleFunc("POST "+res+"/delete", r.rest("reservation-delete", true, r.restReservationOnHome(restwire.DecodeReservationDelete)))
	mux.HandleFunc("GET "+res+"/list", r.rest("reservation-list", false, r.restListReservations))

	mux.HandleFunc("POST "+p+"/delegation-token", r.rest("delegation-token", true, r.restPostDelegationToken))
	mux.HandleFunc("DELETE "+p+"/delegation-token", r.rest("delegation-token-cancel", true, r.restCancelDelegationToken))
	mux.HandleFunc("POST "+p+"/delegation-token/expiration", r.rest("delegation-token-renew", true, r.restRenewDelegationToken))
}

// checkBody validates a request body with decode before it is relayed, so
// malformed input gets a 400 from the router and never reaches an RM.
func checkBody[T any](decode func(contentType string, body []byte) (T, error)) func(*http.Request, []byte) error {
	return func(req *http.Request, body []byte) error {
		_, err := decode(req.Header.Get("Content-Type"), body)
		return err
	}
}

// relayApp relays a per-application call to the app's home RM, checking
// the body first when check is set.
func (r *API) relayApp(check func(*http.Request, []byte) error) restHandler {
	return func(ctx context.Context, req *http.Request) (restReply, error) {
		var body []byte
		if check != nil {
			var err error
			if body, err = restwire.ReadBody(req); err != nil {
				return restReply{}, err
			}
			if err := check(req, body); err != nil {
				return restReply{}, err
			}
		}
		return r.relayOnAppHome(ctx, req, body)
	}
}

// fetchAll GETs path from every routable sub-cluster (JSON unless accept
// says otherwise) under the partial-results rule. An RM that answers 4xx
// refused the query itself, which every RM would: that answer is returned
// as the request's.
func (r *API) fetchAll(ctx context.Context, req *http.Request, path, accept string) ([]scBody, *relayed, error) {
	get := req.Clone(ctx)
	get.Method = http.MethodGet
	get.Header = http.Header{"Accept": {accept}}
	var mu sync.Mutex
	var refused *relayed
	got, err := perSC(ctx, r, "GET "+path, func(ctx context.Context, sc fed.SubClusterInfo) (scBody, error) {
		rl, err := r.relay(ctx, sc, get, path, nil)
		if err != nil {
			return scBody{}, err
		}
		switch {
		case rl.status == http.StatusOK:
			return scBody{sc: sc.ID, body: rl.body}, nil
		case rl.status >= 400 && rl.status < 500:
			mu.Lock()
			refused = rl
			mu.Unlock()
			return scBody{}, fmt.Errorf("HTTP %d", rl.status)
		}
		return scBody{}, fmt.Errorf("HTTP %d: %s", rl.status, truncate(rl.body, 300))
	})
	if refused != nil {
		return nil, refused, nil
	}
	return got, nil, err
}

type scBody struct {
	sc   fed.SubClusterID
	body []byte
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// restScheduler answers as Hadoop's Router does: the scheduler document of
// every sub-cluster, each marked with its subClusterId (queue trees of
// different RMs do not add up into one). Each RM's own document is kept
// as the RM sent it, in JSON or XML.
func (r *API) restScheduler(ctx context.Context, req *http.Request) (restReply, error) {
	return r.restPerSubCluster(ctx, req, "/ws/v1/cluster/scheduler", FederationSchedulerRoot, "scheduler")
}

// restPerSubCluster GETs path from every sub-cluster's RM in the format the
// caller asked for (JSON or XML) and answers each RM's document, marked
// with its subClusterId, in one <root> document, sub-clusters sorted by
// id (mergeSubClusterJSON, mergeSubClusterXML: key is the RM document's
// root).
func (r *API) restPerSubCluster(ctx context.Context, req *http.Request, path, root, key string) (restReply, error) {
	asXML := restwire.WantsXML(req)
	accept, ctype := "application/json", "application/json; charset=utf-8"
	if asXML {
		accept, ctype = "application/xml", "application/xml; charset=utf-8"
	}
	got, refused, err := r.fetchAll(ctx, req, path, accept)
	if refused != nil || err != nil {
		return restReply{raw: refused}, err
	}
	slices.SortFunc(got, func(a, b scBody) int { return strings.Compare(string(a.sc), string(b.sc)) })
	var out []byte
	if asXML {
		out, err = mergeSubClusterXML(got, root, key, "GET "+path)
	} else {
		out, err = mergeSubClusterJSON(got, root, key, "GET "+path)
	}
	if err != nil {
		return restReply{}, err
	}
	return restReply{raw: &relayed{status: http.StatusOK, ctype: ctype, body: out}}, nil
}

// FederationSchedulerRoot is the root element (and JSON key) of the merged
// scheduler document, JAXB's name for Hadoop's FederationSchedulerTypeInfo.
const FederationSchedulerRoot = "federationSchedulerTypeInfo"

// mergeSubClusterJSON puts each RM's {"<key>":{...}} object, with its subClusterId,
// in {"<root>":{"subCluster":[...]}}; key "" takes the document's one key.
func mergeSubClusterJSON(got []scBody, root, key, what string) ([]byte, error) {
	items := make([]map[string]json.RawMessage, 0, len(got))
	for _, g := range got {
		var env map[string]map[string]json.RawMessage
		err := json.Unmarshal(g.body, &env)
		obj, ok := env[key]
		if key == "" && len(env) == 1 {
			for _, v := range env {
				obj, ok = v, true
			}
		}
		if err != nil || !ok || obj == nil {
			return nil, &fed.SubClusterError{SubCluster: g.sc, Method: what, Err: fmt.Errorf("not the expected document: %v", err)}
		}
		id, _ := json.Marshal(string(g.sc))
		obj["subClusterId"] = id
		items = append(items, obj)
	}
	return json.Marshal(map[string]any{root: map[string]any{"subCluster": items}})
}

// mergeSubClusterXML puts each RM's <elem> content, with its namespace declarations
// and subClusterId, in a <subCluster> of <root>; elem "" takes any root.
func mergeSubClusterXML(got []scBody, root, elem, what string) ([]byte, error) {
	var b strings.Builder
	b.WriteString(xml.Header[:len(xml.Header)-1])
	b.WriteString("<" + root + ">")
	for _, g := range got {
		var doc struct {
			XMLName xml.Name
			Attrs   []xml.Attr `xml:",any,attr"`
			Inner   []byte     `xml:",innerxml"`
		}
		if err := xml.Unmarshal(g.body, &doc); err != nil || (elem != "" && doc.XMLName.Local != elem) {
			return nil, &fed.SubClusterError{SubCluster: g.sc, Method: what, Err: fmt.Errorf("not the expected document: %v", err)}
		}
		b.WriteString("<subCluster")
		for _, a := range doc.Attrs {
			name := a.Name.Local
			if a.Name.Space == "xmlns" {
				name = "xmlns:" + name
			} else if a.Name.Space != "" {
				continue // a prefixed attribute of the root; JAXB puts none there
			}
			b.WriteString(" " + name + `="`)
			_ = xml.EscapeText(&b, []byte(a.Value))
			b.WriteString(`"`)
		}
		b.WriteString(">")
		b.Write(doc.Inner)
		b.WriteString("<subClusterId>")
		_ = xml.EscapeText(&b, []byte(g.sc))
		b.WriteString("</subClusterId></subCluster>")
	}
	b.WriteString("</" + root + ">")
	return []byte(b.String()), nil
}

// fetchAllJSON GETs path as JSON from every sub-cluster's RM (fetchAll)
// and decodes each answer as a D; an answer that does not decode fails
// the call as that sub-cluster's error.
func fetchAllJSON[D any](ctx context.Context, r *API, req *http.Request, path string) ([]D, *relayed, error) {
	got, refused, err := r.fetchAll(ctx, req, path, "application/json")
	if refused != nil || err != nil {
		return nil, refused, err
	}
	docs := make([]D, 0, len(got))
	for _, g := range got {
		var d D
		if err := json.Unmarshal(g.body, &d); err != nil {
			return nil, nil, &fed.SubClusterError{SubCluster: g.sc, Method: "GET " + path, Err: err}
		}
		docs = append(docs, d)
	}
	return docs, nil, nil
}

// restAppStatistics sums every sub-cluster's counts per (state, type). An
// application with UAMs in secondaries is counted once, at its home: RMs
// count UAM copies too, as they do in their own metrics.
func (r *API) restAppStatistics(ctx context.Context, req *http.Request) (restReply, error) {
	docs, refused, err := fetchAllJSON[rmrest.AppStatInfoResponse](ctx, r, req, "/ws/v1/cluster/appstatistics")
	if refused != nil || err != nil {
		return restReply{raw: refused}, err
	}
	var lists [][]rmrest.StatItem
	for _, env := range docs {
		lists = append(lists, env.AppStatInfo.StatItem)
	}
	out := rmrest.AppStatInfo{StatItem: MergeStatItems(lists)}
	return reply(http.StatusOK, rmrest.AppStatInfoResponse{AppStatInfo: out}, out), nil
}

// MergeStatItems adds counts of the same (state, type), in first-seen order.
func MergeStatItems(lists [][]rmrest.StatItem) []rmrest.StatItem {
	out := []rmrest.StatItem{}
	idx := map[[2]string]int{}
	for _, l := range lists {
		for _, it := range l {
			k := [2]string{it.State, it.Type}
			if i, ok := idx[k]; ok {
				out[i].Count += it.Count
				continue
			}
			idx[k] = len(out)
			out = append(out, it)
		}
	}
	return out
}

// restNodeLabels is the union of the sub-clusters' cluster node labels; a
// label several RMs have reports what all of them have available.
func (r *API) restNodeLabels(ctx context.Context, req *http.Request) (restReply, error) {
	docs, refused, err := fetchAllJSON[rmrest.NodeLabelsInfo](ctx, r, req, "/ws/v1/cluster/get-node-labels")
	if refused != nil || err != nil {
		return restReply{raw: refused}, err
	}
	var lists [][]rmrest.NodeLabelInfo
	for _, doc := range docs {
		lists = append(lists, doc.NodeLabelInfo)
	}
	out := rmrest.NodeLabelsInfo{NodeLabelInfo: MergeNodeLabels(lists)}
	return reply(http.StatusOK, out, out), nil
}

// MergeNodeLabels unions labels by name, summing available resources; a
// label exclusive anywhere stays exclusive.
func MergeNodeLabels(lists [][]rmrest.NodeLabelInfo) []rmrest.NodeLabelInfo {
	var out []rmrest.NodeLabelInfo
	idx := map[string]int{}
	for _, l := range lists {
		for _, nl := range l {
			i, ok := idx[nl.Name]
			if !ok {
				idx[nl.Name] = len(out)
				if nl.PartitionInfo != nil {
					pi := *nl.PartitionInfo
					pi.ResourceAvailable.ResourceInformations = cloneRI(pi.ResourceAvailable.ResourceInformations)
					nl.PartitionInfo = &pi
				}
				out = append(out, nl)
				continue
			}
			d := &out[i]
			d.Exclusivity = d.Exclusivity || nl.Exclusivity
			if nl.PartitionInfo == nil {
				continue
			}
			if d.PartitionInfo == nil {
				d.PartitionInfo = &rmrest.PartitionInfo{}
			}
			s := nl.PartitionInfo.ResourceAvailable
			d.PartitionInfo.ResourceAvailable.Memory += s.Memory
			d.PartitionInfo.ResourceAvailable.VCores += s.VCores
			addResourceInformations(&d.PartitionInfo.ResourceAvailable, &s)
		}
	}
	return out
}

func cloneRI(ri *rmrest.ResourceInformations) *rmrest.ResourceInformations {
	if ri == nil {
		return nil
	}
	return &rmrest.ResourceInformations{ResourceInformation: slices.Clone(ri.ResourceInformation)}
}
