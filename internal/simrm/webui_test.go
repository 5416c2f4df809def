package simrm

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// noFollow answers a request without following redirects, as a probe that
// inspects the standby's 307 does.
func noFollow(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestWebPagesFindActiveRM: clients that find the active RM of a pair by
// GET <rm>/cluster (PyPI's yarn-api-client) see a 200 from the active one;
// the standby redirects to the active one (307 + Location) and, with no
// active RM, answers 307 with a Refresh header and no Location, as Hadoop's
// RMWebAppFilter does. /cluster/cluster and /isActive are answered in place.
func TestWebPagesFindActiveRM(t *testing.T) {
	rm := startRM(t, nil)
	sb, err := NewStandby(rm, TestConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	act, stb := "http://"+rm.Addrs().Web, "http://"+sb.Addrs().Web

	if resp, body := noFollow(t, act+"/cluster"); resp.StatusCode != 200 || resp.Header.Get("Refresh") != "" || !strings.Contains(body, "All Applications") {
		t.Fatalf("active /cluster: %d %q", resp.StatusCode, body)
	}
	if resp, body := noFollow(t, act+"/cluster/cluster"); resp.StatusCode != 200 || !strings.Contains(body, "active") {
		t.Fatalf("active /cluster/cluster: %d %q", resp.StatusCode, body)
	}
	if resp, body := noFollow(t, act+"/isActive"); resp.StatusCode != 200 || !strings.Contains(body, "I am Active!") {
		t.Fatalf("active /isActive: %d %q", resp.StatusCode, body)
	}
	resp, _ := noFollow(t, stb+"/cluster?x=1")
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != act+"/cluster?x=1" {
		t.Fatalf("standby /cluster: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Following the redirect lands on the active RM's page.
	if code, body := httpGet(t, stb+"/cluster", ""); code != 200 || !strings.Contains(body, "All Applications") {
		t.Fatalf("standby /cluster followed: %d %q", code, body)
	}
	if resp, body := noFollow(t, stb+"/cluster/cluster"); resp.StatusCode != 200 || !strings.Contains(body, "standby") {
		t.Fatalf("standby /cluster/cluster: %d %q", resp.StatusCode, body)
	}
	if resp, _ := noFollow(t, stb+"/isActive"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("standby /isActive: %d", resp.StatusCode)
	}
	// Both standby: no Location, a Refresh to try again.
	rm.TransitionToStandby()
	resp, body := noFollow(t, stb+"/cluster")
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "" ||
		!strings.HasPrefix(resp.Header.Get("Refresh"), "5;url=") || !strings.Contains(body, "Can not find any active RM") {
		t.Fatalf("no active: %d %v %q", resp.StatusCode, resp.Header, body)
	}
}
