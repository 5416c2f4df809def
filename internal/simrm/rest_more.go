package simrm

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// More of RMWebServices, for the router's relays and merges: application
// statistics, node labels (simrm has none), priority and queue of an app,
// its timeouts (simrm sets none), delegation tokens (refused: simrm, like
// an RM without Kerberos, authenticates nobody) and the web proxy to an
// AM's tracking URL. Reservations stay off, as in simrm's IPC.

func (r *RM) restMoreRoutes(mux *http.ServeMux) {
	const p = "/ws/v1/cluster"
	mux.HandleFunc("GET "+p+"/appstatistics", r.restAppStats)
	mux.HandleFunc("GET "+p+"/get-node-labels", r.restNodeLabels)
	mux.HandleFunc("GET "+p+"/apps/{appid}/priority", r.restPriority)
	mux.HandleFunc("PUT "+p+"/apps/{appid}/priority", r.restPutPriority)
	mux.HandleFunc("GET "+p+"/apps/{appid}/queue", r.restQueue)
	mux.HandleFunc("PUT "+p+"/apps/{appid}/queue", r.restPutQueue)
	mux.HandleFunc("GET "+p+"/apps/{appid}/timeouts", r.restTimeouts)
	for _, m := range []string{"POST ", "DELETE "} {
		mux.HandleFunc(m+p+"/delegation-token", restNoKerberos)
	}
	mux.HandleFunc("POST "+p+"/delegation-token/expiration", restNoKerberos)
	for _, m := range []string{"POST ", "PUT ", "DELETE "} {
		mux.HandleFunc(m+p+"/reservation/", func(w http.ResponseWriter, req *http.Request) {
			badRequest(w, req, reservationsOff)
		})
	}
	mux.HandleFunc("GET "+p+"/reservation/list", func(w http.ResponseWriter, req *http.Request) {
		badRequest(w, req, reservationsOff)
	})
	mux.HandleFunc("/proxy/{appid}/{rest...}", r.restProxy)
	// simrm's queues are configured, not mutable (a CapacityScheduler on its
	// file store): the RM refuses the configuration API with a plain-text
	// 400, as RMWebServices does for a scheduler that is not a mutable one.
	for _, m := range []string{"GET ", "PUT "} {
		mux.HandleFunc(m+p+"/scheduler-conf", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, "Configuration change only supported by MutableConfScheduler.")
		})
	}
	mux.HandleFunc("GET "+p+"/scheduler/activities", r.restActivities)
}

// restActivities is ActivitiesInfo for a node: simrm records no scheduler
// activities, and says so in the diagnostic (as the RM does when none were
// recorded for the node yet).
func (r *RM) restActivities(w http.ResponseWriter, req *http.Request) {
	now := r.core().nowMS()
	out := rmrest.Activities{NodeID: req.URL.Query().Get("nodeId"), Timestamp: now,
		DateTime: time.UnixMilli(now).String(), Diagnostic: "simrm records no scheduler activities"}
	writeREST(w, req, http.StatusOK, rmrest.ActivitiesResponse{Activities: out}, out)
}

// appStates are the YarnApplicationState names in the RM's order.
var appStates = []AppState{AppNew, AppNewSaving, AppSubmitted, AppAccepted, AppRunning, AppFinished, AppFailed, AppKilled}

func (r *RM) restAppStats(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	var types []string
	for _, v := range q["applicationTypes"] {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				types = append(types, t)
			}
		}
	}
	if len(types) > 1 {
		badRequest(w, req, "# of applicationTypes = "+itoa(int64(len(types)))+", we temporarily support at most one applicationType")
		return
	}
	states := appStates
	if len(q["states"]) > 0 {
		states = nil
		for _, v := range q["states"] {
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s == "" {
					continue
				}
				st, ok := ParseAppState(s)
				if !ok {
					badRequest(w, req, "Invalid application-state "+s)
					return
				}
				states = append(states, st)
			}
		}
	}
	typ := "*"
	f := AppFilter{}
	if len(types) == 1 {
		typ = strings.ToLower(types[0])
		f.Types = types
	}
	counts := map[AppState]int64{}
	for _, a := range r.core().Apps(f) {
		counts[a.State]++
	}
	out := rmrest.AppStatInfo{StatItem: []rmrest.StatItem{}}
	for _, st := range states {
		out.StatItem = append(out.StatItem, rmrest.StatItem{State: st.String(), Type: typ, Count: counts[st]})
	}
	writeREST(w, req, http.StatusOK, rmrest.AppStatInfoResponse{AppStatInfo: out}, out)
}

func (r *RM) restNodeLabels(w http.ResponseWriter, req *http.Request) {
	out := rmrest.NodeLabelsInfo{}
	writeREST(w, req, http.StatusOK, out, out)
}

func (r *RM) restPriority(w http.ResponseWriter, req *http.Request) {
	rep, ok := r.appFromPath(w, req)
	if !ok {
		return
	}
	out := rmrest.AppPriority{Priority: rep.Priority}
	writeREST(w, req, http.StatusOK, out, out)
}

// decodeREST decodes a JSON or XML request body (by Content-Type).
func decodeREST(w http.ResponseWriter, req *http.Request, v any) bool {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBodyBytes))
	if err == nil {
		if strings.Contains(req.Header.Get("Content-Type"), "xml") {
			err = xml.Unmarshal(body, v)
		} else {
			err = json.Unmarshal(body, v)
		}
	}
	if err != nil {
		badRequest(w, req, "cannot parse request body: "+err.Error())
		return false
	}
	return true
}

func callerOf(req *http.Request) string {
	if u := req.URL.Query().Get("user.name"); u != "" {
		return u
	}
	return "dr.who"
}

func (r *RM) restPutPriority(w http.ResponseWriter, req *http.Request) {
	id, ok := r.appParam(w, req)
	if !ok {
		return
	}
	var in rmrest.AppPriority
	if !decodeREST(w, req, &in) {
		return
	}
	p, err := r.core().UpdatePriority(id, in.Priority)
	if err != nil {
		notFound(w, req, "app with id: "+id.String()+" not found")
		return
	}
	out := rmrest.AppPriority{Priority: p}
	writeREST(w, req, http.StatusOK, out, out)
}

func (r *RM) restQueue(w http.ResponseWriter, req *http.Request) {
	rep, ok := r.appFromPath(w, req)
	if !ok {
		return
	}
	out := rmrest.AppQueue{Queue: rep.Queue}
	writeREST(w, req, http.StatusOK, out, out)
}

func (r *RM) restPutQueue(w http.ResponseWriter, req *http.Request) {
	rep, ok := r.appFromPath(w, req)
	if !ok {
		return
	}
	var in rmrest.AppQueue
	if !decodeREST(w, req, &in) {
		return
	}
	if err := r.core().Move(rep.ID, in.Queue, callerOf(req)); err != nil {
		badRequest(w, req, err.Error())
		return
	}
	rep, _ = r.core().AppReport(rep.ID)
	out := rmrest.AppQueue{Queue: rep.Queue}
	writeREST(w, req, http.StatusOK, out, out)
}

func (r *RM) restTimeouts(w http.ResponseWriter, req *http.Request) {
	if _, ok := r.appFromPath(w, req); !ok {
		return
	}
	// No lifetime set: the RM reports LIFETIME with expiryTime UNLIMITED.
	out := rmrest.AppTimeouts{Timeout: []rmrest.AppTimeout{{Type: "LIFETIME", ExpiryTime: "UNLIMITED", RemainingTimeInSeconds: -1}}}
	writeREST(w, req, http.StatusOK, rmrest.AppTimeoutsResponse{Timeouts: out}, out)
}

func restNoKerberos(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	io.WriteString(w, "Delegation token operations can only be carried out on a Kerberos authenticated channel. Expected auth type is kerberos, got type null")
}

// restProxy is the RM's web proxy: it forwards to the tracking URL the AM
// registered, under the app's proxy path.
func (r *RM) restProxy(w http.ResponseWriter, req *http.Request) {
	rep, ok := r.appFromPath(w, req)
	if !ok {
		return
	}
	if rep.TrackingURL == "" || rep.TrackingURL == "N/A" {
		notFound(w, req, "Application "+rep.ID.String()+" has no tracking URL")
		return
	}
	target, err := url.Parse(rep.TrackingURL)
	if err != nil || target.Host == "" {
		if target, err = url.Parse("http://" + rep.TrackingURL); err != nil {
			notFound(w, req, "Application "+rep.ID.String()+" has a bad tracking URL")
			return
		}
	}
	rest := "/" + req.PathValue("rest")
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.Out.URL.Scheme, pr.Out.URL.Host = target.Scheme, target.Host
		pr.Out.URL.Path = strings.TrimRight(target.Path, "/") + rest
		pr.Out.URL.RawPath = ""
		pr.Out.Host = target.Host
	}, ModifyResponse: func(resp *http.Response) error {
		// An AM's redirects to itself go back through the proxy, as the
		// RM's ProxyUtils rewrites them.
		if loc := resp.Header.Get("Location"); strings.HasPrefix(loc, "http://"+target.Host+"/") {
			resp.Header.Set("Location", "http://"+r.webAddr+"/proxy/"+rep.ID.String()+strings.TrimPrefix(loc, "http://"+target.Host))
		}
		return nil
	}}
	rp.ServeHTTP(w, req)
}
