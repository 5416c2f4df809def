package rest

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// Reservations over REST follow the IPC rules (the root's reservation.go, through Core): a new id
// from any sub-cluster, the queue's policy places the submission and the
// store records the reservation's home, update/delete/list go to that
// home. The bodies are relayed to the home RM as the client sent them.

// restNewReservation relays the call to a random routable RM, as Hadoop's
// FederationInterceptorREST does. Whatever an RM answers (an id, or a 4xx
// such as reservations being off) is the client's answer, relayed as it
// is: a client's error is not a sub-cluster failure. Only an RM that did
// not serve the call (no answer, or 503: standby) sends it to another
// sub-cluster.
func (r *API) restNewReservation(ctx context.Context, req *http.Request) (restReply, error) {
	var out *relayed
	err := r.core.OnAny(ctx, "REST new-reservation", func(sc fed.SubClusterInfo) error {
		rl, err := r.relay(ctx, sc, req, req.URL.EscapedPath(), nil)
		if err != nil {
			return err
		}
		if rl.status == http.StatusServiceUnavailable {
			return &fed.SubClusterError{SubCluster: sc.ID, Method: "REST new-reservation", Err: errRMUnavailable}
		}
		fed.AuditOf(ctx).SC = sc.ID
		out = rl
		return nil
	})
	if err != nil {
		return restReply{}, r.unroutableREST(err)
	}
	return restReply{raw: out}, nil
}

// errRMUnavailable is an RM's 503 (a standby RM, or one not serving yet).
var errRMUnavailable = errors.New("the RM answered 503 (standby?)")

func (r *API) restSubmitReservation(ctx context.Context, req *http.Request) (restReply, error) {
	body, err := restwire.ReadBody(req)
	if err != nil {
		return restReply{}, err
	}
	rr, err := restwire.DecodeReservationSubmission(req.Header.Get("Content-Type"), body)
	if err != nil {
		return restReply{}, err
	}
	var out *relayed
	err = r.core.SubmitReservationVia(ctx, "submitReservation", rr.Queue, rr.ReservationID, func(sc fed.SubClusterInfo) error {
		rl, err := r.relay(ctx, sc, req, req.URL.EscapedPath(), body)
		if err != nil {
			return err
		}
		out = rl
		return nil
	})
	if err != nil {
		return restReply{}, r.unroutableREST(err)
	}
	return restReply{raw: out}, nil
}

// unroutableREST maps a relay failure that left no sub-cluster to try to a
// 503 (fed.SubClusterError from relay is an RM that did not answer).
func (r *API) unroutableREST(err error) error {
	if fed.SubClusterDown(err) || fed.TimedOut(err) {
		return fmt.Errorf("%w: %w", fed.ErrSubClusterUnavailable, err)
	}
	return err
}

// restReservationOnHome relays update and delete to the reservation's home.
func (r *API) restReservationOnHome(decode func(string, []byte) (restwire.ReservationRequest, error)) restHandler {
	return func(ctx context.Context, req *http.Request) (restReply, error) {
		body, err := restwire.ReadBody(req)
		if err != nil {
			return restReply{}, err
		}
		rr, err := decode(req.Header.Get("Content-Type"), body)
		if err != nil {
			return restReply{}, err
		}
		return r.relayToReservationHome(ctx, req, "REST "+req.URL.Path, rr.ReservationID, body)
	}
}

// relayToReservationHome relays req as it came (with body) to the RM of
// the reservation's home sub-cluster.
func (r *API) relayToReservationHome(ctx context.Context, req *http.Request, method string, id *yarnpb.ReservationIdProto, body []byte) (restReply, error) {
	sc, err := r.core.ReservationHome(ctx, method, id)
	if err != nil {
		return restReply{}, err
	}
	rl, err := r.relay(ctx, sc, req, req.URL.EscapedPath(), body)
	if err != nil {
		return restReply{}, r.relayError(sc.ID, err)
	}
	return restReply{raw: rl}, nil
}

// restListReservations: with a reservation-id, the home's answer; without,
// every sub-cluster's reservations of the queue, concatenated.
func (r *API) restListReservations(ctx context.Context, req *http.Request) (restReply, error) {
	if s := req.URL.Query().Get("reservation-id"); s != "" {
		id, err := restwire.ParseReservationID(s)
		if err != nil {
			return restReply{}, err
		}
		return r.relayToReservationHome(ctx, req, "REST reservation/list", id, nil)
	}
	asXML := restwire.WantsXML(req)
	accept := "application/json"
	if asXML {
		accept = "application/xml"
	}
	got, refused, err := r.fetchAll(ctx, req, req.URL.EscapedPath(), accept)
	if refused != nil || err != nil {
		return restReply{raw: refused}, err
	}
	var docs [][]byte
	for _, g := range got {
		docs = append(docs, g.body)
	}
	var out []byte
	ctype := "application/json; charset=utf-8"
	if asXML {
		out, err = MergeXMLLists(docs)
		ctype = "application/xml; charset=utf-8"
	} else {
		out, err = MergeJSONLists(docs)
	}
	if err != nil {
		return restReply{}, fmt.Errorf("merge reservation lists: %w", err)
	}
	return restReply{raw: &relayed{status: http.StatusOK, ctype: ctype, body: out}}, nil
}

// MergeJSONLists merges list documents of the same shape: arrays found at
// the same path are concatenated, objects merged key by key, and scalars
// kept from the first document.
func MergeJSONLists(docs [][]byte) ([]byte, error) {
	var acc any
	for i, d := range docs {
		var v any
		if err := json.Unmarshal(d, &v); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if i == 0 {
			acc = v
			continue
		}
		acc = mergeJSON(acc, v)
	}
	if acc == nil {
		acc = map[string]any{}
	}
	return json.Marshal(acc)
}

func mergeJSON(a, b any) any {
	switch av := a.(type) {
	case []any:
		if bv, ok := b.([]any); ok {
			return append(av, bv...)
		}
		if bv, ok := b.(map[string]any); ok {
			return append(av, bv) // one element, rendered bare
		}
	case map[string]any:
		switch bv := b.(type) {
		case map[string]any:
			for k, x := range bv {
				if y, ok := av[k]; ok {
					av[k] = mergeJSON(y, x)
				} else {
					av[k] = x
				}
			}
		case []any:
			return append([]any{av}, bv...)
		}
		return av
	}
	return a
}

// MergeXMLLists concatenates the children of the root elements of XML list
// documents under the first document's root.
func MergeXMLLists(docs [][]byte) ([]byte, error) {
	var b strings.Builder
	b.WriteString(xml.Header[:len(xml.Header)-1])
	root := ""
	for i, d := range docs {
		var doc struct {
			XMLName xml.Name
			Inner   []byte `xml:",innerxml"`
		}
		if err := xml.Unmarshal(d, &doc); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if i == 0 {
			root = doc.XMLName.Local
			b.WriteString("<" + root + ">")
		}
		b.Write(doc.Inner)
	}
	if root == "" {
		return nil, fmt.Errorf("no documents")
	}
	b.WriteString("</" + root + ">")
	return []byte(b.String()), nil
}
