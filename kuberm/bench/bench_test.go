package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// fakeYARN is a FAKE RM and NodeManager in one hadoopipc server (the three
// protocols the bench speaks), with just the behaviour the bench relies on:
// the unmanaged AM's token in the owner's report, asks replacing the
// outstanding count, NM tokens with the first container on the node,
// RUNNING/SCHEDULED before RUNNING/RUNNING, completions after a stop, an
// unregister answered false once. It is not a YARN model.
type fakeYARN struct {
	t    *testing.T
	addr string
	node *yarnpb.NodeIdProto
	// extra is handed out beyond the ask in the first round (an RM may
	// over-allocate): the bench must release it and see it completed.
	extra int
	// failStart makes every container report COMPLETE instead of running.
	failStart bool
	// lateStart holds every startContainers after the first this long
	// before it answers, so a round can fail while a start is in flight.
	lateStart time.Duration

	mu          sync.Mutex
	state       yarnpb.YarnApplicationStateProto
	final       yarnpb.FinalApplicationStatusProto
	outstanding int32
	seq         int64
	nmTokenSent bool
	polls       map[string]int                 // container -> status polls
	live        map[string]bool                // handed out, not completed
	done        []*yarnpb.ContainerStatusProto // completions not yet reported
	unregCalls  int
	killed      bool
	startedAll  int
}

var fakeApp = yarnid.AppID{ClusterTimestamp: 1700000000000, ID: 7}

func startFake(t *testing.T) *fakeYARN {
	t.Helper()
	f := &fakeYARN{t: t, state: yarnpb.YarnApplicationStateProto_NEW, polls: map[string]int{}, live: map[string]bool{}}
	cfg := hadoopipc.DefaultServerConfig()
	cfg.Secrets = fakeSecrets{}
	srv := hadoopipc.NewServer(cfg)
	for _, p := range []hadoopipc.Protocol{f.clientProtocol(), f.amProtocol(), f.nmProtocol()} {
		if err := srv.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	f.addr = ln.Addr().String()
	_, port, _ := net.SplitHostPort(f.addr)
	p, _ := strconv.Atoi(port)
	f.node = &yarnpb.NodeIdProto{Host: proto.String("127.0.0.1"), Port: proto.Int32(int32(p))}
	return f
}

// fakeSecrets accepts any token whose password is "pw".
type fakeSecrets struct{}

func (fakeSecrets) RetrievePassword(id []byte) ([]byte, string, error) {
	return []byte("pw"), string(id), nil
}

func fakeToken(id string) *commonpb.TokenProto {
	return &commonpb.TokenProto{Identifier: []byte(id), Password: []byte("pw"), Kind: proto.String("fake"), Service: proto.String("")}
}

func (f *fakeYARN) target(name string) Target {
	return Target{Name: name, ClientRM: f.addr, Scheduler: f.addr}
}

func (f *fakeYARN) clientProtocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{Name: hadoopipc.ProtocolApplicationClient, Version: 1, Methods: []hadoopipc.Method{
		hadoopipc.NewMethod("getNewApplication", func() *yarnpb.GetNewApplicationRequestProto { return &yarnpb.GetNewApplicationRequestProto{} },
			func(context.Context, *yarnpb.GetNewApplicationRequestProto) (*yarnpb.GetNewApplicationResponseProto, error) {
				return &yarnpb.GetNewApplicationResponseProto{ApplicationId: yarnid.AppPB(fakeApp)}, nil
			}),
		hadoopipc.NewMethod("submitApplication", func() *yarnpb.SubmitApplicationRequestProto { return &yarnpb.SubmitApplicationRequestProto{} },
			func(_ context.Context, req *yarnpb.SubmitApplicationRequestProto) (*yarnpb.SubmitApplicationResponseProto, error) {
				if !req.GetApplicationSubmissionContext().GetUnmanagedAm() {
					f.t.Errorf("the bench submitted a managed application")
				}
				f.mu.Lock()
				f.state = yarnpb.YarnApplicationStateProto_ACCEPTED
				f.mu.Unlock()
				return &yarnpb.SubmitApplicationResponseProto{}, nil
			}),
		hadoopipc.NewMethod("getApplicationReport", func() *yarnpb.GetApplicationReportRequestProto { return &yarnpb.GetApplicationReportRequestProto{} },
			func(context.Context, *yarnpb.GetApplicationReportRequestProto) (*yarnpb.GetApplicationReportResponseProto, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				rep := &yarnpb.ApplicationReportProto{ApplicationId: yarnid.AppPB(fakeApp), YarnApplicationState: f.state.Enum(), FinalApplicationStatus: f.final.Enum()}
				if f.state == yarnpb.YarnApplicationStateProto_ACCEPTED {
					rep.AmRmToken = fakeToken("amrm")
				}
				return &yarnpb.GetApplicationReportResponseProto{ApplicationReport: rep}, nil
			}),
		hadoopipc.NewMethod("forceKillApplication", func() *yarnpb.KillApplicationRequestProto { return &yarnpb.KillApplicationRequestProto{} },
			func(context.Context, *yarnpb.KillApplicationRequestProto) (*yarnpb.KillApplicationResponseProto, error) {
				f.mu.Lock()
				f.killed = true
				f.state = yarnpb.YarnApplicationStateProto_KILLED
				f.mu.Unlock()
				return &yarnpb.KillApplicationResponseProto{}, nil
			}),
	}}
}

func (f *fakeYARN) amProtocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{Name: hadoopipc.ProtocolApplicationMaster, Version: 1, Methods: []hadoopipc.Method{
		hadoopipc.NewMethod("registerApplicationMaster", func() *yarnpb.RegisterApplicationMasterRequestProto {
			return &yarnpb.RegisterApplicationMasterRequestProto{}
		},
			func(context.Context, *yarnpb.RegisterApplicationMasterRequestProto) (*yarnpb.RegisterApplicationMasterResponseProto, error) {
				f.mu.Lock()
				f.state = yarnpb.YarnApplicationStateProto_RUNNING
				f.mu.Unlock()
				return &yarnpb.RegisterApplicationMasterResponseProto{}, nil
			}),
		hadoopipc.NewMethod("allocate", func() *yarnpb.AllocateRequestProto { return &yarnpb.AllocateRequestProto{} }, f.allocate),
		hadoopipc.NewMethod("finishApplicationMaster", func() *yarnpb.FinishApplicationMasterRequestProto {
			return &yarnpb.FinishApplicationMasterRequestProto{}
		},
			func(_ context.Context, req *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				f.unregCalls++
				if f.unregCalls == 1 { // as an RM storing the unregistration
					return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(false)}, nil
				}
				f.state, f.final = yarnpb.YarnApplicationStateProto_FINISHED, req.GetFinalApplicationStatus()
				return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
			}),
	}}
}

func (f *fakeYARN) allocate(_ context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &yarnpb.AllocateResponseProto{ResponseId: proto.Int32(req.GetResponseId() + 1)}
	for _, a := range req.GetAsk() {
		f.outstanding = a.GetNumContainers() // replaces, as on an RM
	}
	for _, id := range req.GetRelease() {
		f.complete(yarnid.ContainerFromPB(id).String(), id, -100)
	}
	if n := f.outstanding; n > 0 {
		n += int32(f.extra)
		f.extra = 0
		for range n {
			f.seq++
			cid := yarnid.ContainerPB(yarnid.NewContainerID(yarnid.AttemptID{App: fakeApp, Attempt: 1}, 0, f.seq))
			f.live[yarnid.ContainerFromPB(cid).String()] = true
			resp.AllocatedContainers = append(resp.AllocatedContainers, &yarnpb.ContainerProto{Id: cid, NodeId: f.node, ContainerToken: fakeToken("container")})
		}
		if !f.nmTokenSent {
			resp.NmTokens = []*yarnpb.NMTokenProto{{NodeId: f.node, Token: fakeToken("nm")}}
			f.nmTokenSent = true
		}
		f.outstanding = 0
	}
	resp.CompletedContainerStatuses, f.done = f.done, nil
	return resp, nil
}

// complete marks a live container completed, to be reported once.
func (f *fakeYARN) complete(key string, id *yarnpb.ContainerIdProto, exit int32) {
	if !f.live[key] {
		return
	}
	delete(f.live, key)
	f.done = append(f.done, &yarnpb.ContainerStatusProto{ContainerId: id, State: yarnpb.ContainerStateProto_C_COMPLETE.Enum(), ExitStatus: proto.Int32(exit)})
}

func (f *fakeYARN) nmProtocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{Name: protocolContainerManagement, Version: 1, Methods: []hadoopipc.Method{
		hadoopipc.NewMethod("startContainers", func() *yarnpb.StartContainersRequestProto { return &yarnpb.StartContainersRequestProto{} },
			func(_ context.Context, req *yarnpb.StartContainersRequestProto) (*yarnpb.StartContainersResponseProto, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				if f.lateStart > 0 && f.startedAll > 0 {
					f.mu.Unlock()
					time.Sleep(f.lateStart)
					f.mu.Lock()
				}
				resp := &yarnpb.StartContainersResponseProto{}
				for _, r := range req.GetStartContainerRequest() {
					if string(r.GetContainerToken().GetIdentifier()) != "container" {
						f.t.Errorf("start without the container token")
					}
					cmd := strings.Join(r.GetContainerLaunchContext().GetCommand(), " ")
					if want := "{ sleep 30; } 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"; cmd != want {
						f.t.Errorf("command %q, want %q", cmd, want)
					}
					f.startedAll++
				}
				return resp, nil
			}),
		hadoopipc.NewMethod("getContainerStatuses", func() *yarnpb.GetContainerStatusesRequestProto { return &yarnpb.GetContainerStatusesRequestProto{} },
			func(_ context.Context, req *yarnpb.GetContainerStatusesRequestProto) (*yarnpb.GetContainerStatusesResponseProto, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				resp := &yarnpb.GetContainerStatusesResponseProto{}
				for _, id := range req.GetContainerId() {
					k := yarnid.ContainerFromPB(id).String()
					f.polls[k]++
					st := &yarnpb.ContainerStatusProto{ContainerId: id, State: yarnpb.ContainerStateProto_C_RUNNING.Enum(), ContainerSubState: yarnpb.ContainerSubStateProto_CSS_SCHEDULED.Enum()}
					switch {
					case f.failStart:
						st.State, st.ContainerSubState, st.ExitStatus = yarnpb.ContainerStateProto_C_COMPLETE.Enum(), nil, proto.Int32(127)
					case f.polls[k] > 2:
						st.ContainerSubState = yarnpb.ContainerSubStateProto_CSS_RUNNING.Enum()
					}
					resp.Status = append(resp.Status, st)
				}
				return resp, nil
			}),
		hadoopipc.NewMethod("stopContainers", func() *yarnpb.StopContainersRequestProto { return &yarnpb.StopContainersRequestProto{} },
			func(_ context.Context, req *yarnpb.StopContainersRequestProto) (*yarnpb.StopContainersResponseProto, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				for _, id := range req.GetContainerId() {
					f.complete(yarnid.ContainerFromPB(id).String(), id, -105)
				}
				return &yarnpb.StopContainersResponseProto{SucceededRequests: req.GetContainerId()}, nil
			}),
	}}
}

func fastConfig(subject, peer *fakeYARN) Config {
	cfg := DefaultConfig()
	cfg.Subject, cfg.Peer = subject.target("kuberm"), peer.target("hadoop")
	cfg.Rounds, cfg.Containers = 3, 2
	cfg.Heartbeat, cfg.StatusPoll, cfg.Hold = 5*time.Millisecond, 5*time.Millisecond, time.Millisecond
	cfg.RoundTimeout, cfg.Setup = 20*time.Second, 20*time.Second
	return cfg
}

// TestRunAgainstFakes: the whole AM cycle on two fakes: both applications
// FINISHED/SUCCEEDED, every sample ordered and counted, the extra container
// released and reported completed, every container stopped, the outcome
// lines and the ratio last.
func TestRunAgainstFakes(t *testing.T) {
	subject, peer := startFake(t), startFake(t)
	peer.extra = 1
	var out bytes.Buffer
	res, err := Run(context.Background(), fastConfig(subject, peer), &out)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	for _, c := range []struct {
		o     Outcome
		f     *fakeYARN
		extra int
	}{{res.Subject, subject, 0}, {res.Peer, peer, 1}} {
		if len(c.o.Samples) != 6 || c.o.Asked != 6 || c.o.Allocated != 6+c.extra || c.o.Completed != c.o.Allocated {
			t.Errorf("%s: %d samples, %d asked, %d allocated, %d completed", c.o.Target.Name, len(c.o.Samples), c.o.Asked, c.o.Allocated, c.o.Completed)
		}
		for _, s := range c.o.Samples {
			if s.Allocated.Before(s.Asked) || s.Started.Before(s.Allocated) || s.Running.Before(s.Started) {
				t.Errorf("%s: sample out of order: %+v", c.o.Target.Name, s)
			}
		}
		if c.o.FinalState != "FINISHED" || c.o.FinalStatus != "APP_SUCCEEDED" {
			t.Errorf("%s ended %s %s", c.o.Target.Name, c.o.FinalState, c.o.FinalStatus)
		}
		c.f.mu.Lock()
		if len(c.f.live) != 0 || c.f.startedAll != 6 || c.f.killed {
			t.Errorf("%s: fake left with %d live containers, %d started, killed %v", c.o.Target.Name, len(c.f.live), c.f.startedAll, c.f.killed)
		}
		c.f.mu.Unlock()
	}
	text := out.String()
	for _, want := range []string{"kuberm: application_1700000000000_0007, 6 containers asked, 6 allocated, 6 running, 6 completed, FINISHED APP_SUCCEEDED",
		"hadoop: application_1700000000000_0007, 6 containers asked, 7 allocated, 6 running, 7 completed, FINISHED APP_SUCCEEDED",
		"request -> running", "allocated -> started (startContainers)"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "ratio kuberm / hadoop, request -> running p50: ") {
		t.Errorf("last line is not the ratio: %q", last)
	}
}

// TestRunFailureEndsApplications: a container that completes instead of
// running fails the run with ErrContainer, and neither side is left with
// anything: both applications ended (unregistered FAILED, or killed), the
// failing side's started containers stopped.
//
// With lateStart, the round fails on the first container while the second
// one's startContainers is still unanswered: the NodeManager may run it,
// so abort must wait for that start and stop it (CI once saw it left).
func TestRunFailureEndsApplications(t *testing.T) {
	for _, late := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run(fmt.Sprintf("lateStart=%v", late), func(t *testing.T) {
			subject, peer := startFake(t), startFake(t)
			peer.failStart, peer.lateStart = true, late
			_, err := Run(context.Background(), fastConfig(subject, peer), &bytes.Buffer{})
			if !errors.Is(err, ErrContainer) {
				t.Fatalf("Run: %v, want ErrContainer", err)
			}
			for name, f := range map[string]*fakeYARN{"subject": subject, "peer": peer} {
				f.mu.Lock()
				if f.state == yarnpb.YarnApplicationStateProto_RUNNING || f.state == yarnpb.YarnApplicationStateProto_ACCEPTED {
					t.Errorf("%s: application left %s", name, f.state)
				}
				if f.final == yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED {
					t.Errorf("%s: a failed run unregistered SUCCEEDED", name)
				}
				if len(f.live) != 0 {
					t.Errorf("%s: %d containers left live", name, len(f.live))
				}
				f.mu.Unlock()
			}
		})
	}
}

// TestAbortReleasesUnstarted: containers handed out but never started
// (the round failed first) are released by abort, not left to the RM.
func TestAbortReleasesUnstarted(t *testing.T) {
	f := startFake(t)
	cfg := fastConfig(f, f)
	cfg.Logger = slog.New(slog.DiscardHandler)
	a, err := launch(context.Background(), cfg, f.target("hadoop"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.allocate(context.Background(), []*yarnpb.ResourceRequestProto{a.ask(2)}, nil)
	if err != nil || len(resp.GetAllocatedContainers()) != 2 {
		t.Fatalf("allocate: %v, %d containers", err, len(resp.GetAllocatedContainers()))
	}
	for _, ct := range resp.GetAllocatedContainers() {
		a.handedOut(ct)
	}
	a.abort()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.live) != 0 || f.startedAll != 0 || f.final != yarnpb.FinalApplicationStatusProto_APP_FAILED {
		t.Errorf("after abort: %d containers live, %d started, unregistered %s", len(f.live), f.startedAll, f.final)
	}
}

// TestLaunchCommand: the whole command's output goes to the log dir's
// files, whatever its trailing separators.
func TestLaunchCommand(t *testing.T) {
	for in, want := range map[string]string{
		"sleep 30":                     "{ sleep 30; } 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr",
		" echo a $X; exec sleep 30 ; ": "{ echo a $X; exec sleep 30; } 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr",
	} {
		if got := launchCommand(in); got != want {
			t.Errorf("launchCommand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseTarget(t *testing.T) {
	got, err := ParseTarget("kuberm", "clientrm=10.0.0.2:8032, amrm=10.0.0.2:8030")
	if err != nil || got != (Target{Name: "kuberm", ClientRM: "10.0.0.2:8032", Scheduler: "10.0.0.2:8030"}) {
		t.Errorf("ParseTarget = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "clientrm=a:1", "amrm=a:1", "clientrm=a:1,amrm=nope", "clientrm=a:1,amrm=b:2,web=c:3", "clientrm"} {
		if _, err := ParseTarget("x", bad); !errors.Is(err, ErrBadTarget) {
			t.Errorf("ParseTarget(%q) = %v, want ErrBadTarget", bad, err)
		}
	}
}

func TestSummarize(t *testing.T) {
	var ss []Sample
	base := time.Unix(0, 0)
	for i := 100; i >= 1; i-- { // 1..100 ms, out of order
		ss = append(ss, Sample{Asked: base, Running: base.Add(time.Duration(i) * time.Millisecond)})
	}
	got := Summarize(ss, phases[3].of)
	if got != (Stats{N: 100, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}) {
		t.Errorf("Summarize = %+v", got)
	}
	if got := Summarize(ss[:1], phases[3].of); got.P50 != 100*time.Millisecond || got.P99 != got.Max {
		t.Errorf("one sample: %+v", got)
	}
	if got := Summarize(nil, phases[3].of); got != (Stats{}) {
		t.Errorf("no sample: %+v", got)
	}
}
