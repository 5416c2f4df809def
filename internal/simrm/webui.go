package simrm

import (
	"fmt"
	"html"
	"net/http"
	"strings"
)

// The RM web app's pages, as far as clients probe them. Clients that find
// the active RM of a pair by its web UI (PyPI's yarn-api-client GETs
// <rm>/cluster and wants a 200; older releases also treat a Refresh header
// as "standby") need the pages Hadoop's RMWebAppFilter serves:
//   - active: /cluster (the applications page) and /cluster/cluster (About)
//     answer 200 with HTML;
//   - standby: /cluster/cluster and /isActive are answered in place; every
//     other page is a 307 to the same path on the active RM, or, with no
//     active RM known, a 307 without Location whose Refresh header asks the
//     browser to retry (Hadoop's "Can not find any active RM").
// /isActive is Hadoop's IsActiveServlet: 200 "I am Active!" or 405.
// simrm renders only what a probe reads, not Hadoop's tables.

// isWebPage reports whether path is an RM web app page (not REST).
func isWebPage(path string) bool {
	return path == "/" || path == "/cluster" || strings.HasPrefix(path, "/cluster/") || path == "/isActive"
}

func (r *RM) webRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "/cluster", http.StatusFound)
	})
	mux.HandleFunc("GET /cluster", r.pageApps)
	mux.HandleFunc("GET /cluster/apps", r.pageApps)
	mux.HandleFunc("GET /cluster/cluster", r.pageAbout)
	mux.HandleFunc("GET /isActive", r.pageIsActive)
}

func (r *RM) haState() string {
	if r.Standby() {
		return "standby"
	}
	return "active"
}

func writePage(w http.ResponseWriter, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><title>%s</title></head><body><h1>%s</h1>\n%s</body></html>\n",
		html.EscapeString(title), html.EscapeString(title), body)
}

func (r *RM) pageApps(w http.ResponseWriter, _ *http.Request) {
	var b strings.Builder
	b.WriteString("<table id=\"apps\"><tr><th>ID</th><th>User</th><th>Queue</th><th>State</th></tr>\n")
	for _, a := range r.core().Apps(AppFilter{}) {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", html.EscapeString(a.ID.String()),
			html.EscapeString(a.User), html.EscapeString(a.Queue), html.EscapeString(a.State.String()))
	}
	b.WriteString("</table>\n")
	writePage(w, "All Applications", b.String())
}

func (r *RM) pageAbout(w http.ResponseWriter, _ *http.Request) {
	c := r.core()
	writePage(w, "About the Cluster", fmt.Sprintf(
		"<table id=\"about\"><tr><th>Cluster ID:</th><td>%d</td></tr>\n<tr><th>ResourceManager HA state:</th><td>%s</td></tr>\n"+
			"<tr><th>ResourceManager version:</th><td>%s</td></tr></table>\n", c.clusterTS, r.haState(), simVersion))
}

func (r *RM) pageIsActive(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.Standby() {
		w.WriteHeader(http.StatusMethodNotAllowed)
		fmt.Fprintln(w, "I am not Active!")
		return
	}
	fmt.Fprintln(w, "I am Active!")
}

// standbyPage answers a page request on a standby RM.
func (r *RM) standbyPage(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if active := r.st.activeWeb(); active != "" {
		w.Header().Set("Location", "http://"+active+req.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
		fmt.Fprintln(w, "This is standby RM. The redirect url is: "+html.EscapeString(req.URL.RequestURI()))
		return
	}
	// No active RM: ask the browser to come back (Hadoop backs off 5 s
	// doubling; simrm always says 5).
	self := "http://" + r.Addrs().Web + req.URL.Path + "?next.refresh.interval=1"
	w.Header().Set("Refresh", "5;url="+self)
	w.WriteHeader(http.StatusTemporaryRedirect)
	fmt.Fprintln(w, "Can not find any active RM. Will retry in next 5 seconds.")
}
