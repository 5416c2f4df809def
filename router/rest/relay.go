package rest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/yarnfed/yarnfed/internal/hostport"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// Relaying a REST call to one sub-cluster's RM. The per-application and
// per-reservation endpoints have one right answer, the home RM's, so the
// router forwards the request there and passes the RM's status, media type
// and body back unchanged (Hadoop's Router does the same through its
// DefaultRequestInterceptorREST): JSON and XML stay exactly as the RM
// renders them, errors included.

// maxRelayBody bounds an RM answer the router buffers (a reservation list
// with allocations is the largest; an app's containers a few KiB each).
const maxRelayBody = 32 << 20

// relayed is an RM's answer passed through.
type relayed struct {
	status int
	ctype  string
	loc    string // Location, already pointing at the router
	body   []byte
}

func (rl *relayed) write(w http.ResponseWriter, _ *http.Request) {
	if rl.ctype != "" {
		w.Header().Set("Content-Type", rl.ctype)
	}
	if rl.loc != "" {
		w.Header().Set("Location", rl.loc)
	}
	w.WriteHeader(rl.status)
	_, _ = w.Write(rl.body)
}

// relay sends method path?query with body to sc's RM web app, trying each
// address of an HA list (a standby answers 503 or refuses), within one call
// timeout. Accept and Content-Type are the caller's. Any answer the active
// RM gives, 4xx and 5xx included, is returned as it is.
func (r *API) relay(ctx context.Context, sc fed.SubClusterInfo, req *http.Request, path string, body []byte) (*relayed, error) {
	addrs := hostport.SplitList(sc.RMWebServiceAddress)
	if len(addrs) == 0 {
		return nil, &fed.SubClusterError{SubCluster: sc.ID, Method: req.Method + " " + path, Err: ErrNoWeb}
	}
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	var lastErr error
	for _, a := range addrs {
		u := "http://" + a + path
		if req.URL.RawQuery != "" {
			u += "?" + req.URL.RawQuery
		}
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		out, err := http.NewRequestWithContext(cctx, req.Method, u, rd)
		if err != nil {
			return nil, restwire.BadRequest("%v", err)
		}
		for _, h := range []string{"Accept", "Content-Type", "Hadoop-YARN-RM-Delegation-Token"} {
			if v := req.Header.Get(h); v != "" {
				out.Header.Set(h, v)
			}
		}
		if out.Header.Get("Accept") == "" {
			out.Header.Set("Accept", "application/json") // Jersey would pick XML first for */*
		}
		resp, err := r.cfg.HTTP.Do(out)
		if err != nil {
			lastErr = err
			if fed.TimedOut(err) {
				break // the budget is spent: a hung RM
			}
			continue
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxRelayBody+1))
		resp.Body.Close()
		if err != nil {
			lastErr = err
			if fed.TimedOut(err) {
				break
			}
			continue
		}
		if len(data) > maxRelayBody {
			return nil, &fed.SubClusterError{SubCluster: sc.ID, Method: req.Method + " " + path,
				Err: fmt.Errorf("RM answer larger than %d bytes", maxRelayBody)}
		}
		if resp.StatusCode == http.StatusServiceUnavailable && len(addrs) > 1 {
			lastErr = fmt.Errorf("%s: HTTP 503 (standby?)", a)
			continue
		}
		return &relayed{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"),
			loc: rewriteLocation(resp.Header.Get("Location"), a, req), body: data}, nil
	}
	return nil, &fed.SubClusterError{SubCluster: sc.ID, Method: req.Method + " " + path, Err: lastErr}
}

// rewriteLocation points a Location the RM at rmAddr sent for itself at
// the router the client called; other locations are left alone.
func rewriteLocation(loc, rmAddr string, req *http.Request) string {
	if loc == "" {
		return ""
	}
	u, err := url.Parse(loc)
	if err != nil || (u.Host != "" && !sameHostPort(u.Host, rmAddr)) {
		return loc
	}
	if u.Host == "" {
		return loc // relative: resolves against the router already
	}
	out := RequestURL(req, u.Path)
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out
}

// sameHostPort compares host:port pairs, treating localhost and 127.0.0.1
// alike (an RM may render either for a loopback bind).
func sameHostPort(a, b string) bool {
	norm := func(s string) string {
		return strings.Replace(strings.ToLower(s), "localhost:", "127.0.0.1:", 1)
	}
	return norm(a) == norm(b)
}

// relayError turns a relay failure into the request's answer: an RM that
// did not answer is an unavailable service (503) while it is expected back.
func (r *API) relayError(id fed.SubClusterID, err error) error {
	var sce *fed.SubClusterError
	if errors.As(err, &sce) {
		return r.core.HomeDown(id, err)
	}
	return err
}

// relayOnAppHome relays req to the home RM of the {appid} in its path. A
// cached home the RM does not know (404) is re-read once from the store.
func (r *API) relayOnAppHome(ctx context.Context, req *http.Request, body []byte) (restReply, error) {
	id, err := AppIDParam(req)
	if err != nil {
		return restReply{}, err
	}
	fed.AuditOf(ctx).App = yarnid.AppIDString(id)
	for attempt := 0; ; attempt++ {
		home, cached, err := r.core.HomeOf(ctx, id)
		if err != nil {
			return restReply{}, err
		}
		sc, ok := r.core.SubCluster(home)
		if !ok {
			return restReply{}, r.core.HomeDown(home, fmt.Errorf("home sub-cluster %s of %s is not registered", home, yarnid.AppIDString(id)))
		}
		fed.AuditOf(ctx).SC = home
		rl, err := r.relay(ctx, sc, req, req.URL.EscapedPath(), body)
		if err != nil {
			return restReply{}, r.relayError(home, err)
		}
		if rl.status == http.StatusNotFound && cached && attempt == 0 {
			r.core.DropHome(yarnid.AppIDString(id))
			continue
		}
		return restReply{raw: rl}, nil
	}
}
