package routertest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/testpoll"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
)

// Fed is a router in front of fake RMs and a fake store: the fixture the
// router's tests (root, rest, webui) share.
type Fed struct {
	T      testing.TB
	Store  *Store
	RMs    map[router.SubClusterID]*RM
	Router *router.Router
	Client *hadoopipc.Client // alice's client of Router
	Reg    *prometheus.Registry
}

// Logger is the routers' logger in tests: silent, or debug to stderr
// with ROUTER_TEST_LOG set.
func Logger(t testing.TB) *slog.Logger {
	if os.Getenv("ROUTER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// NewFed starts a router over n fake RMs SC-1..SC-n (all RUNNING).
func NewFed(t testing.TB, n int, mod func(*router.Config)) *Fed {
	t.Helper()
	f := &Fed{T: t, Store: NewStore(), RMs: map[router.SubClusterID]*RM{}, Reg: prometheus.NewRegistry()}
	var rms []*RM
	for i := 1; i <= n; i++ {
		id := router.SubClusterID("SC-" + string(rune('0'+i)))
		rm := NewRM(id, int64(1000*i))
		f.RMs[id] = rm
		rms = append(rms, rm)
		f.Store.Put(router.SubClusterInfo{ID: id, ClientRMServiceAddress: "fake-" + string(id) + ":8032", State: router.StateRunning})
	}
	f.Router = f.NewRouter(mod, rms...)
	return f
}

// NewRouter starts another router over f's store and rms (all of f's
// RMs when none are given); the first one f starts is f.Router's.
func (f *Fed) NewRouter(mod func(*router.Config), rms ...*RM) *router.Router {
	t := f.T
	if rms == nil {
		for _, rm := range f.RMs {
			rms = append(rms, rm)
		}
	}
	cfg := router.DefaultConfig()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ClientListener = ln
	cfg.WebAddress = ""
	cfg.Store = f.Store
	cfg.Dial = Dialer(rms...)
	cfg.Logger = Logger(t)
	cfg.FailoverWait = router.Duration(2 * time.Second)
	cfg.RetryInterval = router.Duration(time.Millisecond)
	cfg.MembershipRefresh = router.Duration(20 * time.Millisecond)
	if mod != nil {
		mod(&cfg)
	}
	r := StartRouter(t, cfg)
	if f.Client == nil {
		f.Client = f.Dial(r)
	}
	return r
}

// Dial is alice's ApplicationClientProtocol client of r.
func (f *Fed) Dial(r *router.Router) *hadoopipc.Client {
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{
		Addresses: []string{r.ClientRMAddr().String()},
		Protocol:  hadoopipc.ProtocolApplicationClient,
		User:      "alice",
	})
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() { _ = c.Close() })
	return c
}

// Ctx is a context that ends with the test (20 s at most).
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// NewApp asks c for a new application id.
func (f *Fed) NewApp(c *hadoopipc.Client) *yarnpb.ApplicationIdProto {
	f.T.Helper()
	resp := &yarnpb.GetNewApplicationResponseProto{}
	if err := c.Call(Ctx(f.T), "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, resp); err != nil {
		f.T.Fatalf("getNewApplication: %v", err)
	}
	return resp.GetApplicationId()
}

// SubmitReq submits app id "test" to queue.
func SubmitReq(id *yarnpb.ApplicationIdProto, queue string) *yarnpb.SubmitApplicationRequestProto {
	return &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: id, ApplicationName: proto.String("test"), Queue: proto.String(queue),
	}}
}

// Submit submits id to the default queue through c.
func (f *Fed) Submit(c *hadoopipc.Client, id *yarnpb.ApplicationIdProto) error {
	return c.Call(Ctx(f.T), "submitApplication", SubmitReq(id, "default"), &yarnpb.SubmitApplicationResponseProto{})
}

// Report is id's report through c.
func (f *Fed) Report(c *hadoopipc.Client, id *yarnpb.ApplicationIdProto) (*yarnpb.ApplicationReportProto, error) {
	resp := &yarnpb.GetApplicationReportResponseProto{}
	err := c.Call(Ctx(f.T), "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, resp)
	return resp.GetApplicationReport(), err
}

// Holders lists the RMs that hold app.
func (f *Fed) Holders(app string) []router.SubClusterID {
	var out []router.SubClusterID
	for id, rm := range f.RMs {
		for _, a := range rm.Apps() {
			if a == app {
				out = append(out, id)
			}
		}
	}
	return out
}

// RemoteClass is the Java class of err's RemoteError ("" for none).
func RemoteClass(err error) string {
	var re *hadoopipc.RemoteError
	if errors.As(err, &re) {
		return re.Class
	}
	return ""
}

// Poll waits for cond (no sleeps in assertions), 10 s at most: the
// tests' one poll helper, internal/testpoll, re-exported for the router's
// tests.
func Poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testpoll.Poll(t, what, cond)
}

// DialAs is user's ApplicationClientProtocol client of r.
func (f *Fed) DialAs(r *router.Router, user string) *hadoopipc.Client {
	f.T.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{
		Addresses: []string{r.ClientRMAddr().String()}, Protocol: hadoopipc.ProtocolApplicationClient, User: user,
	})
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() { _ = c.Close() })
	return c
}

// SubmitWithACLs submits as c's user with VIEW_APP "bob viewers" and
// MODIFY_APP " ops".
func (f *Fed) SubmitWithACLs(c *hadoopipc.Client) *yarnpb.ApplicationIdProto {
	f.T.Helper()
	id := f.NewApp(c)
	req := SubmitReq(id, "default")
	req.ApplicationSubmissionContext.AmContainerSpec = &yarnpb.ContainerLaunchContextProto{
		Application_ACLs: []*yarnpb.ApplicationACLMapProto{
			{AccessType: yarnpb.ApplicationAccessTypeProto_APPACCESS_VIEW_APP.Enum(), Acl: proto.String("bob viewers")},
			{AccessType: yarnpb.ApplicationAccessTypeProto_APPACCESS_MODIFY_APP.Enum(), Acl: proto.String(" ops")},
		},
	}
	if err := c.Call(Ctx(f.T), "submitApplication", req, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		f.T.Fatalf("submit: %v", err)
	}
	return id
}

// Do sends an HTTP request to f.Router's web handler: status and body.
func (f *Fed) Do(method, path, accept, ctype, body string) (int, []byte) {
	code, b, _ := f.DoH(method, path, accept, ctype, body)
	return code, b
}

// DoH is Do with the answer's headers.
func (f *Fed) DoH(method, path, accept, ctype, body string) (int, []byte, http.Header) {
	f.T.Helper()
	srv := httptest.NewServer(f.Router.Handler())
	defer srv.Close()
	req, _ := http.NewRequestWithContext(Ctx(f.T), method, srv.URL+path, strings.NewReader(body))
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}
