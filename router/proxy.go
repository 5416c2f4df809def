package router

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hostport"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/router/rest"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// /proxy/{appid}/... relays to the application's tracking URL through the
// home RM's web proxy, as Hadoop's Router does: the RM's proxy already
// checks the app, its state and its owner, and follows the AM wherever it
// moves. The router finds the home, forwards the request to the home RM's
// /proxy/{appid}/..., and streams status, headers and body back, with
// links and redirects that name the RM's proxy rewritten to the router's.
// A request is bounded by the web server's write timeout; the RM must
// send headers within the call timeout.

// hopHeaders are per-connection headers a proxy must not forward
// (RFC 9110 section 7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func (r *Router) proxyClient() *http.Client {
	r.proxyOnce.Do(func() {
		r.proxyHTTP = &http.Client{
			Transport: &http.Transport{
				DialContext:           (&net.Dialer{Timeout: r.cfg.DialTimeout.D()}).DialContext,
				ResponseHeaderTimeout: r.cfg.CallTimeout.D(),
				MaxIdleConnsPerHost:   16,
				IdleConnTimeout:       time.Minute,
			},
			// Redirects go back to the client, rewritten, as a proxy must.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	})
	return r.proxyHTTP
}

func (r *Router) proxyApp(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	err := r.proxyApp1(w, req)
	r.metrics.observe("REST proxy", start, err)
	if err != nil {
		status, body := rest.Failure(err)
		restwire.Write(w, status, restwire.WantsXML(req), body, body.RemoteException)
	}
}

// proxyApp1 returns an error only while nothing has been written.
func (r *Router) proxyApp1(w http.ResponseWriter, req *http.Request) error {
	id, err := rest.AppIDParam(req)
	if err != nil {
		return err
	}
	// proxy_guard.go: the app's ACL, a path that stays under the app, no
	// identity parameters the router did not authenticate.
	if err := r.restAPI.AppCheck(req.Context(), req); err != nil {
		return err
	}
	target, err := proxyTarget(req.URL.Path, yarnid.AppIDString(id))
	if err != nil {
		return err
	}
	query := proxyQuery(req.URL.RawQuery, hadoopipc.UserName(req.Context()), r.webAuth != nil)
	ctx, cancel := context.WithTimeout(req.Context(), r.cfg.Web.WriteTimeout.D())
	defer cancel()
	home, _, err := r.homeOf(ctx, id)
	if err != nil {
		return err
	}
	sc, ok := r.members.get(home)
	if !ok {
		return r.homeDown(home, fmt.Errorf("home sub-cluster %s of %s is not registered", home, yarnid.AppIDString(id)))
	}
	addrs := hostport.SplitList(sc.RMWebServiceAddress)
	if len(addrs) == 0 {
		return r.homeDown(home, &SubClusterError{SubCluster: home, Method: "proxy", Err: rest.ErrNoWeb})
	}
	// A body is read once: buffer small ones so an HA list can be tried;
	// bodies to an AM through the proxy are rare and small (forms).
	var body []byte
	if req.Body != nil && req.Method != http.MethodGet && req.Method != http.MethodHead {
		if body, err = restwire.ReadBody(req); err != nil {
			return err
		}
	}
	var lastErr error
	for _, a := range addrs {
		out, err := http.NewRequestWithContext(ctx, req.Method, "http://"+a+target, bytes.NewReader(body))
		if err != nil {
			return restwire.BadRequest("%v", err)
		}
		out.URL.RawQuery = query
		if body == nil {
			out.Body, out.ContentLength = http.NoBody, 0
		}
		copyHeaders(out.Header, req.Header)
		out.Header.Del("Host")
		// Links in compressed bodies cannot be rewritten: let the transport
		// negotiate (and undo) compression with the RM instead of the client.
		out.Header.Del("Accept-Encoding")
		if ip, _, err := net.SplitHostPort(req.RemoteAddr); err == nil {
			out.Header.Set("X-Forwarded-For", strings.TrimLeft(out.Header.Get("X-Forwarded-For")+", "+ip, ", "))
		}
		resp, err := r.proxyClient().Do(out)
		if err != nil {
			lastErr = err
			if timedOut(err) {
				break
			}
			continue
		}
		if resp.StatusCode == http.StatusServiceUnavailable && len(addrs) > 1 {
			resp.Body.Close()
			lastErr = fmt.Errorf("%s: HTTP 503 (standby?)", a)
			continue
		}
		defer resp.Body.Close()
		r.relayProxied(w, req, resp, a)
		return nil
	}
	return r.homeDown(home, &SubClusterError{SubCluster: home, Method: "proxy", Err: lastErr})
}

func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
	for _, h := range hopHeaders {
		dst.Del(h)
	}
	if c := src.Get("Connection"); c != "" {
		for _, f := range strings.Split(c, ",") {
			dst.Del(strings.TrimSpace(f))
		}
	}
}

// relayProxied streams resp to w, pointing the RM proxy's URLs at the
// router: Location/Refresh/Content-Location headers, and absolute links in
// HTML, CSS and JavaScript bodies (an AM behind the proxy renders links
// with the proxy's absolute address).
func (r *Router) relayProxied(w http.ResponseWriter, req *http.Request, resp *http.Response, rmAddr string) {
	from := []string{"http://" + rmAddr + "/proxy/"}
	if host, port, err := net.SplitHostPort(rmAddr); err == nil && (host == "127.0.0.1" || host == "localhost") {
		from = append(from, "http://localhost:"+port+"/proxy/", "http://127.0.0.1:"+port+"/proxy/")
	}
	to := rest.RequestURL(req, "/proxy/")
	h := w.Header()
	copyHeaders(h, resp.Header)
	for _, k := range []string{"Location", "Content-Location", "Refresh", "Link"} {
		if v := h.Get(k); v != "" {
			for _, f := range from {
				v = strings.ReplaceAll(v, f, to)
			}
			h.Set(k, v)
		}
	}
	rewrite := textual(resp.Header.Get("Content-Type")) && resp.Header.Get("Content-Encoding") == ""
	if rewrite {
		h.Del("Content-Length") // the length changes with the links
	}
	w.WriteHeader(resp.StatusCode)
	var dst io.Writer = flushWriter{w}
	if rewrite {
		rw := newReplacingWriter(dst, from, to)
		defer rw.Close()
		dst = rw
	}
	if _, err := io.Copy(dst, resp.Body); err != nil && !errors.Is(err, context.Canceled) {
		r.log.Debug("proxy: relaying body ended early", "path", req.URL.Path, "err", err)
	}
}

func textual(ctype string) bool {
	ct := strings.ToLower(ctype)
	return strings.HasPrefix(ct, "text/") || strings.Contains(ct, "javascript") || strings.Contains(ct, "json") ||
		strings.Contains(ct, "xml")
}

// flushWriter flushes after each write so a streaming AM page (logs, live
// progress) reaches the client as it is produced.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// replacingWriter replaces any of several byte strings with one in a
// stream, holding back just enough bytes to catch a match split across
// writes.
type replacingWriter struct {
	dst  io.Writer
	from [][]byte
	to   []byte
	keep int
	buf  []byte
}

func newReplacingWriter(dst io.Writer, from []string, to string) *replacingWriter {
	rw := &replacingWriter{dst: dst, to: []byte(to)}
	for _, f := range from {
		rw.from = append(rw.from, []byte(f))
		rw.keep = max(rw.keep, len(f)-1)
	}
	return rw
}

func (rw *replacingWriter) Write(p []byte) (int, error) {
	rw.buf = append(rw.buf, p...)
	out := rw.replaceAll(rw.buf)
	// Hold back a tail that could be the start of a match.
	hold := min(rw.keep, len(out))
	if err := rw.emit(out[:len(out)-hold]); err != nil {
		return 0, err
	}
	rw.buf = append(rw.buf[:0], out[len(out)-hold:]...)
	return len(p), nil
}

func (rw *replacingWriter) replaceAll(b []byte) []byte {
	for _, f := range rw.from {
		b = bytes.ReplaceAll(b, f, rw.to)
	}
	return b
}

func (rw *replacingWriter) emit(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := rw.dst.Write(b)
	return err
}

// Close writes what is held back.
func (rw *replacingWriter) Close() error {
	err := rw.emit(rw.buf)
	rw.buf = nil
	return err
}
