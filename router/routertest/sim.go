package routertest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
)

// StartSim starts a simulated RM (internal/simrm) as sub-cluster id, its
// apps running until killed, and stops it when the test ends.
func StartSim(t testing.TB, id string, ts int64) *simrm.RM {
	t.Helper()
	cfg := simrm.TestConfig()
	cfg.ClusterID, cfg.ClusterTimestamp = id, ts            // distinct timestamps: app ids must not collide across SCs
	cfg.SimAM.ContainerRuntime = config.Duration(time.Hour) // apps stay running until killed
	rm, err := simrm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rm.Close() })
	return rm
}

// SimFed is a router over two simulated RMs (real IPC and REST), with its
// web handler behind an httptest server.
type SimFed struct {
	*Fed
	Sims map[router.SubClusterID]*simrm.RM
	Web  *httptest.Server
}

// NewSimFed starts it, mods applied to the router's Config.
func NewSimFed(t testing.TB, mods ...func(*router.Config)) *SimFed {
	t.Helper()
	store := NewStore()
	sims := map[router.SubClusterID]*simrm.RM{
		"SC-1": StartSim(t, "SC-1", 1_700_000_000_000),
		"SC-2": StartSim(t, "SC-2", 1_700_000_000_001),
	}
	for id, rm := range sims {
		a := rm.Addrs()
		store.Put(router.SubClusterInfo{ID: id, ClientRMServiceAddress: a.Client, AMRMServiceAddress: a.Scheduler,
			RMAdminServiceAddress: a.Admin, RMWebServiceAddress: a.Web, State: router.StateRunning, LastHeartbeat: time.Now()})
	}
	cfg := router.DefaultConfig()
	cfg.WebAddress, cfg.Store, cfg.Logger = "", store, Logger(t)
	cfg.MembershipRefresh = router.Duration(20 * time.Millisecond)
	for _, m := range mods {
		m(&cfg)
	}
	rt := StartRouter(t, cfg)
	f := &Fed{T: t, Store: store, Router: rt}
	f.Client = f.Dial(rt)
	web := httptest.NewServer(rt.Handler())
	t.Cleanup(web.Close)
	return &SimFed{Fed: f, Sims: sims, Web: web}
}

// Call sends a request to the router's web port; redirects are not followed.
func (s *SimFed) Call(method, path, accept, ctype, body string) (int, http.Header, []byte) {
	s.T.Helper()
	req, _ := http.NewRequestWithContext(Ctx(s.T), method, s.Web.URL+path, strings.NewReader(body))
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		s.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// SubmitApp submits a SIMTEST app (unmanaged: no AM) through s.Client.
func (s *SimFed) SubmitApp(unmanaged bool) *yarnpb.ApplicationIdProto {
	s.T.Helper()
	id := s.NewApp(s.Client)
	req := SubmitReq(id, "default")
	req.ApplicationSubmissionContext.UnmanagedAm = proto.Bool(unmanaged)
	req.ApplicationSubmissionContext.ApplicationType = proto.String("SIMTEST")
	if err := s.Client.Call(Ctx(s.T), "submitApplication", req, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		s.T.Fatal(err)
	}
	return id
}
