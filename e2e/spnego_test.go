//go:build interop

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/krblogin"
	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/subclusteragent"
)

// hadoopWebRequest is what KerberosWebServer's servlet saw of one request
// Hadoop's AuthenticationFilter let through.
type hadoopWebRequest struct {
	Path      string `json:"path"`
	User      string `json:"user"`
	Negotiate bool   `json:"negotiate"`
	Cookie    bool   `json:"cookie"`
}

type kerberosWebServer struct {
	addr string // localhost:port (SPN HTTP/localhost)
	mu   sync.Mutex
	reqs []hadoopWebRequest
}

func (s *kerberosWebServer) take() []hadoopWebRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reqs
	s.reqs = nil
	return r
}

// takeAtLeast waits until the servlet has reported n requests (its lines
// arrive on the JVM's stdout after the HTTP answers do) and takes them.
func (s *kerberosWebServer) takeAtLeast(t *testing.T, n int) []hadoopWebRequest {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		got := len(s.reqs)
		s.mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			return s.take()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startKerberosWebServer runs KerberosWebServer: Jetty with Hadoop's
// AuthenticationFilter in Kerberos mode (what an RM's web port runs with
// hadoop.http.authentication.type=kerberos) in front of RM-shaped
// /ws/v1/cluster/info and /metrics.
func startKerberosWebServer(t *testing.T, j *javaEnv, args ...string) *kerberosWebServer {
	t.Helper()
	s := &kerberosWebServer{}
	l := startJavaServer(t, j, "KerberosWebServer", func(l driverLine) {
		var r hadoopWebRequest
		if l.Op == "request" && json.Unmarshal(l.Result, &r) == nil {
			s.mu.Lock()
			s.reqs = append(s.reqs, r)
			s.mu.Unlock()
		}
	}, args...)
	var r struct{ Port int }
	l.decode(t, &r)
	s.addr = fmt.Sprintf("localhost:%d", r.Port)
	return s
}

// Our SPNEGO client (rmrest, gokrb5 tokens) against Hadoop's own
// AuthenticationFilter + KerberosAuthenticationHandler (the JDK's SPNEGO
// acceptor, Hadoop's signed hadoop.auth cookie): the first call answers the
// Negotiate challenge, later calls ride the cookie; a client without a
// login is refused with ErrKerberosRequired; the sub-cluster agent, logged
// in from its keytab, probes the endpoint and registers it.
func TestGoSPNEGOClientAgainstHadoopAuthFilter(t *testing.T) {
	j := needJava(t)
	kdc := krbtest.Start(t, krbtest.Options{})
	httpKT := kdc.AddService(t, "HTTP/localhost")
	agentKT := kdc.AddService(t, "yarnfed/localhost")
	web := startKerberosWebServer(t, j, "--krb5conf", kdc.ConfPath, "--principal", "HTTP/localhost@"+kdc.Realm, "--keytab", httpKT)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if _, err := rmrest.NewClient(web.addr).GetClusterInfo(ctx); !errors.Is(err, rmrest.ErrKerberosRequired) {
		t.Fatalf("no login: %v, want ErrKerberosRequired", err)
	}
	if r := web.take(); len(r) != 0 {
		t.Fatalf("Hadoop let an unauthenticated request through: %+v", r)
	}

	k := krblogin.Config{Principal: kdc.Principal("yarnfed/localhost"), Keytab: agentKT, Krb5Conf: kdc.ConfPath}
	login, err := k.Login(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer login.Destroy()
	c := rmrest.NewClient(web.addr)
	c.SPNEGO = rmrest.NewSPNEGO(login, "")
	for i := 0; i < 3; i++ {
		info, err := c.GetClusterInfo(ctx)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if info.ID != 42 || info.HAState != "ACTIVE" {
			t.Fatalf("info %+v", info)
		}
	}
	reqs := web.takeAtLeast(t, 3)
	if len(reqs) != 3 {
		t.Fatalf("servlet saw %d requests, want 3: %+v", len(reqs), reqs)
	}
	for i, r := range reqs {
		// Hadoop's DEFAULT auth_to_local: yarnfed/localhost@REALM -> yarnfed.
		if r.User != "yarnfed" || r.Negotiate != (i == 0) || r.Cookie != (i > 0) {
			t.Fatalf("request %d: %+v; want user yarnfed, a token on the first only, the hadoop.auth cookie after", i, r)
		}
	}

	st := &agentRecStore{}
	acfg := subclusteragent.DefaultConfig()
	acfg.SubClusterID, acfg.Store, acfg.Kerberos = "SC-KRB", st, k
	acfg.RMs = []subclusteragent.RMEndpoint{{ClientRM: "localhost:1", AMRM: "localhost:2", Admin: "localhost:3", Web: web.addr}}
	acfg.HeartbeatInterval = config.Duration(time.Hour)
	a, err := subclusteragent.New(acfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Step(ctx)
	a.Step(ctx)
	// Registered once, RUNNING, with the capability read through SPNEGO.
	st.mu.Lock()
	defer st.mu.Unlock()
	var cm rmrest.ClusterMetricsResponse
	if len(st.regs) != 1 || st.regs[0].State != subclusteragent.StateRunning ||
		json.Unmarshal([]byte(st.regs[0].Capability), &cm) != nil || cm.ClusterMetrics.TotalNodes != 3 {
		t.Fatalf("registrations %+v", st.regs)
	}
	// Two probe rounds, each at least one request: wait for their lines,
	// then count the negotiations among them.
	negotiated := 0
	for _, r := range web.takeAtLeast(t, 2) {
		if r.Negotiate {
			negotiated++
		}
	}
	if negotiated != 1 {
		t.Fatalf("the agent negotiated %d times in two probe rounds, want 1", negotiated)
	}
}

// agentRecStore records an agent's registrations (a fake store).
type agentRecStore struct {
	mu   sync.Mutex
	regs []subclusteragent.Registration
}

func (s *agentRecStore) RegisterSubCluster(_ context.Context, r subclusteragent.Registration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.regs = append(s.regs, r)
	return nil
}

func (s *agentRecStore) SubClusterHeartbeat(context.Context, string, subclusteragent.State, string) error {
	return nil
}
