package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/rest"
)

// fakeCore is a fake rest.Core: the calls these tests make answer from its
// fields; any other call panics (the embedded interface is nil), which
// fails the test that made it.
type fakeCore struct {
	rest.Core
	report   func(id *yarnpb.ApplicationIdProto) (*yarnpb.ApplicationReportProto, error)
	proxyErr error

	mu      sync.Mutex
	audited []string // op + " " + app + " " + result
	methods []string // Observe'd
}

func (c *fakeCore) GetApplicationReport(_ context.Context, req *yarnpb.GetApplicationReportRequestProto) (*yarnpb.GetApplicationReportResponseProto, error) {
	rep, err := c.report(req.GetApplicationId())
	return &yarnpb.GetApplicationReportResponseProto{ApplicationReport: rep}, err
}

func (c *fakeCore) CheckAppCall(context.Context, string, *yarnpb.ApplicationIdProto, proto.Message) error {
	return nil
}

func (c *fakeCore) KillApp(context.Context, *yarnpb.ApplicationIdProto) (*yarnpb.KillApplicationResponseProto, error) {
	return &yarnpb.KillApplicationResponseProto{IsKillCompleted: proto.Bool(true)}, nil
}

func (c *fakeCore) AuthorizeProxyUser(context.Context, hadoopipc.User, net.Addr) error {
	return c.proxyErr
}

func (c *fakeCore) Observe(method string, _ time.Time, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.methods = append(c.methods, method)
}

func (c *fakeCore) Audit(_ context.Context, op string, a *fed.Audit, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	result := "SUCCESS"
	if err != nil {
		result = "FAILURE"
	}
	c.audited = append(c.audited, op+" "+a.App+" "+result)
}

// pseudoUser is the web identity without SPNEGO: ?user.name=, else dr.who.
func pseudoUser(serve func(http.ResponseWriter, *http.Request, hadoopipc.User)) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		user := req.URL.Query().Get("user.name")
		if user == "" {
			user = "dr.who"
		}
		serve(w, req, hadoopipc.User{Name: user, AuthMethod: hadoopipc.AuthMethodSimple})
	}
}

func serveFake(t *testing.T, core *fakeCore) *httptest.Server {
	t.Helper()
	api := rest.New(core, rest.Config{CallTimeout: time.Second, Started: time.UnixMilli(1_700_000_000_000), WebUser: pseudoUser})
	mux := http.NewServeMux()
	api.Routes(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func send(t *testing.T, method, url, body string) (int, rmrest.RemoteExceptionResponse, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var re rmrest.RemoteExceptionResponse
	_ = json.Unmarshal(b, &re)
	return resp.StatusCode, re, string(b)
}

// TestAPIOverFakeCore: the REST API is a room of its own: built on a fake
// rest.Core (no router, no RM), it maps the core's routing errors to the
// RM's statuses and exception classes, applies doAs through the core's
// proxy-user rule, and counts and audits through the core.
func TestAPIOverFakeCore(t *testing.T) {
	const app = "application_1700000000000_0001"
	core := &fakeCore{report: func(id *yarnpb.ApplicationIdProto) (*yarnpb.ApplicationReportProto, error) {
		switch id.GetId() {
		case 1:
			return &yarnpb.ApplicationReportProto{ApplicationId: id, YarnApplicationState: yarnpb.YarnApplicationStateProto_KILLED.Enum()}, nil
		case 2:
			return nil, fmt.Errorf("%w: home SC-1 failing over", fed.ErrSubClusterDown)
		}
		return nil, fmt.Errorf("no such app: %w", fed.ErrAppNotFound)
	}}
	srv := serveFake(t, core)
	base := srv.URL + "/ws/v1/cluster"

	if code, _, body := send(t, "GET", base+"/info", ""); code != http.StatusOK || !strings.Contains(body, `"startedOn":1700000000000`) {
		t.Errorf("info: %d %s", code, body)
	}
	for _, tc := range []struct {
		name, path string
		status     int
		class      string
	}{
		{"state", "/apps/" + app + "/state", http.StatusOK, ""},
		{"home down", "/apps/application_1700000000000_0002/state", http.StatusServiceUnavailable, rmrest.ClassWebApp},
		{"unknown", "/apps/application_1700000000000_0003/state", http.StatusNotFound, rmrest.ClassNotFound},
		{"bad id", "/apps/app_x/state", http.StatusBadRequest, rmrest.ClassBadRequest},
	} {
		code, re, body := send(t, "GET", base+tc.path, "")
		if code != tc.status || re.RemoteException.JavaClassName != tc.class {
			t.Errorf("%s: %d %s, want %d %s", tc.name, code, body, tc.status, tc.class)
		}
	}

	// A kill is audited with its app; the app is final, so 200.
	if code, _, body := send(t, "PUT", base+"/apps/"+app+"/state?user.name=alice", `{"state":"KILLED"}`); code != http.StatusOK {
		t.Errorf("kill: %d %s", code, body)
	}
	core.mu.Lock()
	audited, methods := strings.Join(core.audited, ";"), strings.Join(core.methods, ";")
	core.mu.Unlock()
	if audited != "REST app-state-put "+app+" SUCCESS" {
		t.Errorf("audit lines %q", audited)
	}
	if !strings.Contains(methods, "REST info") || !strings.Contains(methods, "REST app-state-put") {
		t.Errorf("observed %q", methods)
	}

	// doAs goes through the core's proxy-user rule: refused is a 403.
	core.proxyErr = errors.New("User: alice is not allowed to impersonate bob")
	code, re, body := send(t, "GET", base+"/apps/"+app+"/state?user.name=alice&doAs=bob", "")
	if code != http.StatusForbidden || re.RemoteException.JavaClassName != hadoopipc.ClassAuthorization {
		t.Errorf("refused doAs: %d %s", code, body)
	}
}
