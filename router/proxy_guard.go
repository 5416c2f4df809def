package router

import (
	"net/url"
	"path"
	"strings"

	"github.com/yarnfed/yarnfed/router/restwire"
)

// What /proxy/ forwards (issue 21): the path as the router understood it,
// and no identity the router did not establish itself.

// proxyTarget is the path to request from the home RM's proxy: req's
// decoded path (%2e%2e is "..") cleaned, which must stay under
// /proxy/<app>; re-escaped. A path that climbs out is a 400: forwarding
// the raw escaped path would let the RM resolve "%2e%2e" to somewhere the
// router never checked (another application's proxy, its REST API).
func proxyTarget(decodedPath, app string) (string, error) {
	root := "/proxy/" + app
	clean := path.Clean(decodedPath)
	if clean != root && !strings.HasPrefix(clean, root+"/") {
		return "", restwire.BadRequest("proxy path %q leaves %s", decodedPath, root)
	}
	if strings.HasSuffix(decodedPath, "/") && !strings.HasSuffix(clean, "/") {
		clean += "/" // AM UIs tell "dir/" from "dir"
	}
	return (&url.URL{Path: clean}).EscapedPath(), nil
}

// proxyQuery is rawQuery without the identity parameters the router did
// not authenticate: doAs (any case; the proxy does not act for others) is
// always dropped, and user.name too unless it is what the router took as
// the caller (pseudo authentication). With SPNEGO the caller's
// authenticated name is sent as user.name instead (the RM's web proxy is
// reached without Kerberos, pseudo auth, so it names the caller).
func proxyQuery(rawQuery, user string, spnego bool) string {
	var kept []string
	for _, kv := range strings.Split(rawQuery, "&") {
		if kv == "" {
			continue
		}
		k, _, _ := strings.Cut(kv, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if strings.EqualFold(name, "doAs") || (name == "user.name" && spnego) {
			continue
		}
		kept = append(kept, kv)
	}
	if spnego && user != "" {
		kept = append(kept, "user.name="+url.QueryEscape(user))
	}
	return strings.Join(kept, "&")
}
