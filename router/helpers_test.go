package router_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// fed is a router in front of fake RMs and a fake store.
type fed struct {
	t      testing.TB
	store  *routertest.Store
	rms    map[router.SubClusterID]*routertest.RM
	router *router.Router
	client *hadoopipc.Client
	reg    *prometheus.Registry
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("ROUTER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// newFed starts a router over n fake RMs SC-1..SC-n (all RUNNING).
func newFed(t testing.TB, n int, mod func(*router.Config)) *fed {
	t.Helper()
	f := &fed{t: t, store: routertest.NewStore(), rms: map[router.SubClusterID]*routertest.RM{}, reg: prometheus.NewRegistry()}
	var rms []*routertest.RM
	for i := 1; i <= n; i++ {
		id := router.SubClusterID("SC-" + string(rune('0'+i)))
		rm := routertest.NewRM(id, int64(1000*i))
		f.rms[id] = rm
		rms = append(rms, rm)
		f.store.Put(router.SubClusterInfo{ID: id, ClientRMServiceAddress: "fake-" + string(id) + ":8032", State: router.StateRunning})
	}
	f.router = f.newRouter(mod, rms...)
	return f
}

func (f *fed) newRouter(mod func(*router.Config), rms ...*routertest.RM) *router.Router {
	t := f.t
	if rms == nil {
		for _, rm := range f.rms {
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
	cfg.Store = f.store
	cfg.Dial = routertest.Dialer(rms...)
	cfg.Logger = testLogger(t)
	cfg.FailoverWait = router.Duration(2 * time.Second)
	cfg.RetryInterval = router.Duration(time.Millisecond)
	cfg.MembershipRefresh = router.Duration(20 * time.Millisecond)
	if mod != nil {
		mod(&cfg)
	}
	r, err := router.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("router Run: %v", err)
		}
	})
	if f.client == nil {
		f.client = f.dial(r)
	}
	return r
}

func (f *fed) dial(r *router.Router) *hadoopipc.Client {
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{
		Addresses: []string{r.ClientRMAddr().String()},
		Protocol:  hadoopipc.ProtocolApplicationClient,
		User:      "alice",
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (f *fed) newApp(c *hadoopipc.Client) *yarnpb.ApplicationIdProto {
	f.t.Helper()
	resp := &yarnpb.GetNewApplicationResponseProto{}
	if err := c.Call(ctxT(f.t), "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, resp); err != nil {
		f.t.Fatalf("getNewApplication: %v", err)
	}
	return resp.GetApplicationId()
}

func submitReq(id *yarnpb.ApplicationIdProto, queue string) *yarnpb.SubmitApplicationRequestProto {
	return &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: id, ApplicationName: proto.String("test"), Queue: proto.String(queue),
	}}
}

func (f *fed) submit(c *hadoopipc.Client, id *yarnpb.ApplicationIdProto) error {
	return c.Call(ctxT(f.t), "submitApplication", submitReq(id, "default"), &yarnpb.SubmitApplicationResponseProto{})
}

func (f *fed) report(c *hadoopipc.Client, id *yarnpb.ApplicationIdProto) (*yarnpb.ApplicationReportProto, error) {
	resp := &yarnpb.GetApplicationReportResponseProto{}
	err := c.Call(ctxT(f.t), "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, resp)
	return resp.GetApplicationReport(), err
}

// holders lists the RMs that hold app.
func (f *fed) holders(app string) []router.SubClusterID {
	var out []router.SubClusterID
	for id, rm := range f.rms {
		for _, a := range rm.Apps() {
			if a == app {
				out = append(out, id)
			}
		}
	}
	return out
}

func remoteClass(err error) string {
	var re *hadoopipc.RemoteError
	if errors.As(err, &re) {
		return re.Class
	}
	return ""
}

// poll waits for cond (no sleeps in assertions; bounded by the test ctx).
func poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
