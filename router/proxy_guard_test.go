package router

import (
	"errors"
	"net/url"
	"testing"
)

// TestProxyTarget: %2e%2e is resolved before forwarding; a path that
// leaves the application's proxy is refused (400), not forwarded for the
// RM to resolve.
func TestProxyTarget(t *testing.T) {
	const app = "application_1_0001"
	for _, tc := range []struct{ raw, want string }{
		{"/proxy/" + app + "/ws/v1/status", "/proxy/" + app + "/ws/v1/status"},
		{"/proxy/" + app + "/a/%2e%2e/ws/v1/status", "/proxy/" + app + "/ws/v1/status"},
		{"/proxy/" + app + "/jobs/", "/proxy/" + app + "/jobs/"},
		{"/proxy/" + app, "/proxy/" + app},
		{"/proxy/" + app + "/a%20b", "/proxy/" + app + "/a%20b"},
		{"/proxy/" + app + "/%2e%2e/application_1_0002/", ""},
		{"/proxy/" + app + "/%2E%2E/%2e%2e/ws/v1/cluster/apps", ""},
		{"/proxy/" + app + "/x/../../../ws", ""},
	} {
		u, err := url.Parse(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := proxyTarget(u.Path, app)
		if tc.want == "" {
			if !errors.Is(err, ErrBadRequest) {
				t.Errorf("%s: got %q %v, want a bad request", tc.raw, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q %v, want %q", tc.raw, got, err, tc.want)
		}
	}
}

// TestProxyQuery: doAs (any case, escaped or not) never reaches the RM;
// user.name is the caller the router took under pseudo auth and is
// replaced by the authenticated name under SPNEGO.
func TestProxyQuery(t *testing.T) {
	for _, tc := range []struct {
		raw, user string
		spnego    bool
		want      string
	}{
		{"a=1&doAs=root&b=2", "alice", false, "a=1&b=2"},
		{"DOAS=root&d%6fAs=root&a=1", "alice", false, "a=1"},
		{"user.name=alice&a=1", "alice", false, "user.name=alice&a=1"},
		{"user.name=root&a=1&doas=x", "alice", true, "a=1&user.name=alice"},
		{"user%2Ename=root", "alice", true, "user.name=alice"},
		{"", "alice", false, ""},
	} {
		if got := proxyQuery(tc.raw, tc.user, tc.spnego); got != tc.want {
			t.Errorf("proxyQuery(%q, %s, spnego %v) = %q, want %q", tc.raw, tc.user, tc.spnego, got, tc.want)
		}
	}
}
