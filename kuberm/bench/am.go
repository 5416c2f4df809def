package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// protocolContainerManagement is the NodeManager protocol's wire name
// (kuberm's NM face serves the same one).
const protocolContainerManagement = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB"

// Errors of a run, each wrapped with the target and what happened.
var (
	ErrLaunch    = errors.New("the unmanaged AM was not launched")
	ErrContainer = errors.New("a container did not reach running")
	ErrLeft      = errors.New("something of the run was left")
)

// am is the bench's unmanaged ApplicationMaster on one target.
type am struct {
	cfg       Config
	t         Target
	log       *slog.Logger
	rm        *hadoopipc.Client // ApplicationClientProtocol, as cfg.User
	amrm      *hadoopipc.Client // ApplicationMasterProtocol, with the AMRMToken
	app       *yarnpb.ApplicationIdProto
	appID     string
	setupTook time.Duration
	respID    int32

	// workers are the round's startAndWait goroutines; abort waits for
	// them, so a start still in flight when a round fails is stopped too.
	workers sync.WaitGroup

	mu       sync.Mutex
	nmTokens map[string]*commonpb.TokenProto // NodeId -> the latest NM token the RM sent
	nms      map[string]*hadoopipc.Client    // NodeId -> client with that token

	registered, finished bool
	samples              []Sample
	asked, allocated     int
	outstanding          map[string]*container // handed out, not yet reported completed
	completed            int
	finalState           string
	finalStatus          string
}

// container is one container handed out to the bench.
type container struct {
	id    *yarnpb.ContainerIdProto
	key   string // its id's text
	node  string // NodeId host:port
	token *commonpb.TokenProto
	// sent: startContainers was sent, so the NodeManager may run it even
	// if no answer came back, and it must be stopped.
	sent bool
	// started: startContainers succeeded.
	started bool
}

func nodeKey(n *yarnpb.NodeIdProto) string {
	return net.JoinHostPort(n.GetHost(), strconv.Itoa(int(n.GetPort())))
}

// launch submits an unmanaged application to t, waits for its AMRMToken in
// the report (the RM gives it to the owner while the attempt is LAUNCHED)
// and registers with it.
func launch(ctx context.Context, cfg Config, t Target) (*am, error) {
	begin := time.Now()
	a := &am{cfg: cfg, t: t, log: cfg.Logger.With("target", t.Name), nmTokens: map[string]*commonpb.TokenProto{},
		nms: map[string]*hadoopipc.Client{}, outstanding: map[string]*container{}}
	var err error
	a.rm, err = hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{t.ClientRM}, Protocol: hadoopipc.ProtocolApplicationClient,
		User: cfg.User, DialTimeout: 10 * time.Second, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.Setup)
	defer cancel()
	fail := func(what string, err error) (*am, error) {
		a.abort()
		return nil, fmt.Errorf("%s: %w: %s: %w", t.Name, ErrLaunch, what, err)
	}
	newApp := &yarnpb.GetNewApplicationResponseProto{}
	if err := a.rm.Call(sctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, newApp); err != nil {
		return fail("getNewApplication", err)
	}
	a.app = newApp.GetApplicationId()
	a.appID = yarnid.AppIDString(a.app)
	sub := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId:   a.app,
		ApplicationName: proto.String("yarnfed-bench-kuberm"),
		ApplicationType: proto.String("YARNFED-BENCH"),
		Queue:           proto.String(cfg.Queue),
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{},
		UnmanagedAm:     proto.Bool(true),
		MaxAppAttempts:  proto.Int32(1),
		Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(cfg.MemoryMB), VirtualCores: proto.Int32(cfg.VCores)},
		Priority:        &yarnpb.PriorityProto{Priority: proto.Int32(0)},
	}}
	if err := a.rm.Call(sctx, "submitApplication", sub, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		return fail("submitApplication", err)
	}
	tok, err := a.waitToken(sctx)
	if err != nil {
		return fail("AMRMToken", err)
	}
	a.amrm, err = a.amrmClient(tok)
	if err != nil {
		return fail("AMRM client", err)
	}
	host, _ := os.Hostname()
	reg := &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String(host), RpcPort: proto.Int32(-1), TrackingUrl: proto.String("")}
	if err := a.amrm.Call(sctx, "registerApplicationMaster", reg, &yarnpb.RegisterApplicationMasterResponseProto{}); err != nil {
		return fail("registerApplicationMaster", err)
	}
	a.registered = true
	a.setupTook = time.Since(begin)
	a.log.Info("registered", "application", a.appID, "took", a.setupTook)
	return a, nil
}

func (a *am) amrmClient(tok *commonpb.TokenProto) (*hadoopipc.Client, error) {
	return hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{a.t.Scheduler}, Protocol: hadoopipc.ProtocolApplicationMaster,
		Token: tok, DialTimeout: 10 * time.Second, Logger: a.cfg.Logger})
}

// waitToken polls the application report until it carries the AMRMToken.
func (a *am) waitToken(ctx context.Context) (*commonpb.TokenProto, error) {
	for {
		resp := &yarnpb.GetApplicationReportResponseProto{}
		if err := a.rm.Call(ctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: a.app}, resp); err != nil {
			return nil, err
		}
		rep := resp.GetApplicationReport()
		switch st := rep.GetYarnApplicationState(); st {
		case yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.YarnApplicationStateProto_KILLED:
			return nil, fmt.Errorf("application %s is %s: %s", a.appID, st, rep.GetDiagnostics())
		}
		if tok := rep.GetAmRmToken(); len(tok.GetIdentifier()) > 0 {
			return tok, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no token in the report of %s (state %s): %w", a.appID, rep.GetYarnApplicationState(), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// allocate sends one heartbeat and takes what the answer carries: NM
// tokens, a rolled AMRMToken, completed containers.
func (a *am) allocate(ctx context.Context, asks []*yarnpb.ResourceRequestProto, release []*yarnpb.ContainerIdProto) (*yarnpb.AllocateResponseProto, error) {
	req := &yarnpb.AllocateRequestProto{Ask: asks, Release: release, ResponseId: proto.Int32(a.respID), Progress: proto.Float32(0.5)}
	resp := &yarnpb.AllocateResponseProto{}
	if err := a.amrm.Call(ctx, "allocate", req, resp); err != nil {
		return nil, fmt.Errorf("%s: allocate: %w", a.t.Name, err)
	}
	a.respID = resp.GetResponseId()
	a.mu.Lock()
	for _, nt := range resp.GetNmTokens() {
		k := nodeKey(nt.GetNodeId())
		a.nmTokens[k] = nt.GetToken()
		if c := a.nms[k]; c != nil { // a new token: a new login
			c.Close()
			delete(a.nms, k)
		}
	}
	for _, st := range resp.GetCompletedContainerStatuses() {
		k := yarnid.ContainerFromPB(st.GetContainerId()).String()
		if c := a.outstanding[k]; c != nil {
			delete(a.outstanding, k)
			a.completed++
			a.log.Debug("container completed", "container", k, "exit", st.GetExitStatus(), "diagnostics", st.GetDiagnostics())
		}
	}
	a.mu.Unlock()
	if tok := resp.GetAmRmToken(); len(tok.GetIdentifier()) > 0 {
		c, err := a.amrmClient(tok)
		if err != nil {
			return nil, err
		}
		a.amrm.Close()
		a.amrm = c
	}
	return resp, nil
}

// nm is the client of the NodeManager at node, logged in with its NM token.
func (a *am) nm(node string) (*hadoopipc.Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.nms[node]; c != nil {
		return c, nil
	}
	tok := a.nmTokens[node]
	if tok == nil {
		return nil, fmt.Errorf("the RM sent no NM token for %s", node)
	}
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{node}, Protocol: protocolContainerManagement,
		Token: tok, DialTimeout: 10 * time.Second, Logger: a.cfg.Logger})
	if err != nil {
		return nil, err
	}
	a.nms[node] = c
	return c, nil
}

// result is one container's start and wait.
type result struct {
	c   *container
	s   Sample
	err error
}

// round asks for cfg.Containers containers at once, starts each as soon as
// it is handed out and polls its NodeManager until it runs; once all run,
// stops them and heartbeats until the RM reports every one completed.
func (a *am) round(ctx context.Context, n int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RoundTimeout)
	defer cancel()
	k := a.cfg.Containers
	results := make(chan result, k)
	var round []*container
	var release []*yarnpb.ContainerIdProto
	wanted, running := k, 0
	asked := time.Now()
	a.asked += k
	asks := []*yarnpb.ResourceRequestProto{a.ask(k)}
	for running < k {
		resp, err := a.allocate(ctx, asks, release)
		if err != nil {
			return 0, err
		}
		got := time.Now()
		asks, release = nil, nil
		for _, ct := range resp.GetAllocatedContainers() {
			c := a.handedOut(ct)
			if wanted == 0 { // more than asked: give it back
				release = append(release, c.id)
				continue
			}
			wanted--
			round = append(round, c)
			a.workers.Go(func() { a.startAndWait(ctx, c, Sample{Asked: asked, Allocated: got}, results) })
		}
	drain:
		for {
			select {
			case r := <-results:
				if r.err != nil {
					return 0, fmt.Errorf("%s: round %d: %w: %s: %w", a.t.Name, n, ErrContainer, r.c.key, r.err)
				}
				a.samples = append(a.samples, r.s)
				running++
			default:
				break drain
			}
		}
		if running == k {
			break
		}
		if err := a.completedEarly(round); err != nil {
			return 0, fmt.Errorf("%s: round %d: %w", a.t.Name, n, err)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%s: round %d: %d of %d containers running: %w", a.t.Name, n, running, k, ctx.Err())
		case <-time.After(a.cfg.Heartbeat):
		}
	}
	took := time.Since(asked)
	select {
	case <-ctx.Done():
		return 0, fmt.Errorf("%s: round %d: %w", a.t.Name, n, ctx.Err())
	case <-time.After(a.cfg.Hold):
	}
	if err := a.stop(ctx, round); err != nil {
		return 0, fmt.Errorf("%s: round %d: %w", a.t.Name, n, err)
	}
	// Every container of the round (and any released extra) must be
	// reported completed before the next round asks again.
	for {
		a.mu.Lock()
		left := len(a.outstanding)
		a.mu.Unlock()
		if left == 0 {
			return took, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%s: round %d: %w: %d containers not reported completed after their stop: %w", a.t.Name, n, ErrLeft, left, ctx.Err())
		case <-time.After(a.cfg.Heartbeat):
		}
		if _, err := a.allocate(ctx, nil, release); err != nil {
			return 0, err
		}
		release = nil
	}
}

// ask is the resource request for k containers of the configured size.
func (a *am) ask(k int) *yarnpb.ResourceRequestProto {
	return &yarnpb.ResourceRequestProto{
		Priority:      &yarnpb.PriorityProto{Priority: proto.Int32(0)},
		ResourceName:  proto.String("*"),
		Capability:    &yarnpb.ResourceProto{Memory: proto.Int64(a.cfg.MemoryMB), VirtualCores: proto.Int32(a.cfg.VCores)},
		NumContainers: proto.Int32(int32(k)),
		RelaxLocality: proto.Bool(true),
	}
}

// handedOut records a container the RM allocated as outstanding until the
// RM reports it completed.
func (a *am) handedOut(ct *yarnpb.ContainerProto) *container {
	c := &container{id: ct.GetId(), key: yarnid.ContainerFromPB(ct.GetId()).String(), node: nodeKey(ct.GetNodeId()), token: ct.GetContainerToken()}
	a.mu.Lock()
	a.allocated++
	a.outstanding[c.key] = c
	a.mu.Unlock()
	return c
}

// completedEarly fails the round if one of its containers was reported
// completed before it ran (it exited, or the RM took it back).
func (a *am) completedEarly(round []*container) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range round {
		if a.outstanding[c.key] == nil && !c.started {
			return fmt.Errorf("%w: %s completed before it ran", ErrContainer, c.key)
		}
	}
	return nil
}

// startAndWait starts c on its NodeManager with the container token and
// polls its status until it runs.
func (a *am) startAndWait(ctx context.Context, c *container, s Sample, out chan<- result) {
	err := a.start(ctx, c)
	s.Started = time.Now()
	if err == nil {
		s.Running, err = a.waitRunning(ctx, c)
	}
	out <- result{c: c, s: s, err: err}
}

func (a *am) start(ctx context.Context, c *container) error {
	nm, err := a.nm(c.node)
	if err != nil {
		return err
	}
	clc := &yarnpb.ContainerLaunchContextProto{Command: []string{launchCommand(a.cfg.Command)}}
	req := &yarnpb.StartContainersRequestProto{StartContainerRequest: []*yarnpb.StartContainerRequestProto{{ContainerLaunchContext: clc, ContainerToken: c.token}}}
	resp := &yarnpb.StartContainersResponseProto{}
	a.mu.Lock()
	c.sent = true
	a.mu.Unlock()
	if err := nm.Call(ctx, "startContainers", req, resp); err != nil {
		return fmt.Errorf("startContainers at %s: %w", c.node, err)
	}
	for _, f := range resp.GetFailedRequests() {
		return fmt.Errorf("startContainers at %s refused: %s: %s", c.node, f.GetException().GetClassName(), f.GetException().GetMessage())
	}
	a.mu.Lock()
	c.started = true
	a.mu.Unlock()
	return nil
}

// launchCommand is the container's command line: the command as a group
// whose output goes to the container's stdout and stderr files (the
// NodeManager expands <LOG_DIR>, kuberm's launcher too; the launch
// script's own output goes elsewhere).
func launchCommand(cmd string) string {
	return "{ " + strings.TrimRight(strings.TrimSpace(cmd), "; ") + "; } 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"
}

// waitRunning polls getContainerStatuses until the container runs
// (RUNNING with the RUNNING sub-state: a NodeManager reports a localizing
// container RUNNING/SCHEDULED) and returns when that answer arrived.
func (a *am) waitRunning(ctx context.Context, c *container) (time.Time, error) {
	nm, err := a.nm(c.node)
	if err != nil {
		return time.Time{}, err
	}
	for {
		resp := &yarnpb.GetContainerStatusesResponseProto{}
		if err := nm.Call(ctx, "getContainerStatuses", &yarnpb.GetContainerStatusesRequestProto{ContainerId: []*yarnpb.ContainerIdProto{c.id}}, resp); err != nil {
			return time.Time{}, fmt.Errorf("getContainerStatuses at %s: %w", c.node, err)
		}
		at := time.Now()
		for _, f := range resp.GetFailedRequests() {
			return time.Time{}, fmt.Errorf("getContainerStatuses at %s refused: %s: %s", c.node, f.GetException().GetClassName(), f.GetException().GetMessage())
		}
		for _, st := range resp.GetStatus() {
			switch st.GetState() {
			case yarnpb.ContainerStateProto_C_RUNNING:
				if st.ContainerSubState == nil || st.GetContainerSubState() == yarnpb.ContainerSubStateProto_CSS_RUNNING {
					return at, nil
				}
			case yarnpb.ContainerStateProto_C_COMPLETE:
				return time.Time{}, fmt.Errorf("completed before running: exit %d: %s", st.GetExitStatus(), st.GetDiagnostics())
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("not running: %w", ctx.Err())
		case <-time.After(a.cfg.StatusPoll):
		}
	}
}

// stop stops the containers of cs whose start was sent, one call per
// NodeManager.
func (a *am) stop(ctx context.Context, cs []*container) error {
	byNode := map[string][]*yarnpb.ContainerIdProto{}
	a.mu.Lock()
	for _, c := range cs {
		if c.sent && a.outstanding[c.key] != nil {
			byNode[c.node] = append(byNode[c.node], c.id)
		}
	}
	a.mu.Unlock()
	var errs []error
	for node, ids := range byNode {
		nm, err := a.nm(node)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resp := &yarnpb.StopContainersResponseProto{}
		if err := nm.Call(ctx, "stopContainers", &yarnpb.StopContainersRequestProto{ContainerId: ids}, resp); err != nil {
			errs = append(errs, fmt.Errorf("stopContainers at %s: %w", node, err))
			continue
		}
		for _, f := range resp.GetFailedRequests() {
			errs = append(errs, fmt.Errorf("stopContainers at %s refused %s: %s: %s", node, yarnid.ContainerFromPB(f.GetContainerId()),
				f.GetException().GetClassName(), f.GetException().GetMessage()))
		}
	}
	return errors.Join(errs...)
}

// finish unregisters (SUCCEEDED) once nothing of the run is outstanding and
// waits for the report to say FINISHED.
func (a *am) finish(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Setup)
	defer cancel()
	a.mu.Lock()
	left := len(a.outstanding)
	a.mu.Unlock()
	if left > 0 {
		return fmt.Errorf("%s: %w: %d containers handed out were never reported completed", a.t.Name, ErrLeft, left)
	}
	req := &yarnpb.FinishApplicationMasterRequestProto{FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum(),
		Diagnostics: proto.String("yarnfed bench kuberm: done")}
	for {
		resp := &yarnpb.FinishApplicationMasterResponseProto{}
		if err := a.amrm.Call(ctx, "finishApplicationMaster", req, resp); err != nil {
			return fmt.Errorf("%s: finishApplicationMaster: %w", a.t.Name, err)
		}
		if resp.GetIsUnregistered() {
			break
		}
		select { // an RM answers false until the unregistration is stored
		case <-ctx.Done():
			return fmt.Errorf("%s: finishApplicationMaster never unregistered: %w", a.t.Name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	a.finished = true
	for {
		resp := &yarnpb.GetApplicationReportResponseProto{}
		if err := a.rm.Call(ctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: a.app}, resp); err != nil {
			return fmt.Errorf("%s: report after finish: %w", a.t.Name, err)
		}
		rep := resp.GetApplicationReport()
		switch rep.GetYarnApplicationState() {
		case yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.YarnApplicationStateProto_KILLED:
			a.finalState = rep.GetYarnApplicationState().String()
			a.finalStatus = rep.GetFinalApplicationStatus().String()
			a.close()
			if rep.GetYarnApplicationState() != yarnpb.YarnApplicationStateProto_FINISHED ||
				rep.GetFinalApplicationStatus() != yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED {
				return fmt.Errorf("%s: %w: application %s ended %s/%s: %s", a.t.Name, ErrLeft, a.appID, a.finalState, a.finalStatus, rep.GetDiagnostics())
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: application %s still %s after its AM unregistered: %w", a.t.Name, a.appID, rep.GetYarnApplicationState(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (a *am) outcome() Outcome {
	return Outcome{Target: a.t, App: a.appID, Samples: a.samples, Asked: a.asked, Allocated: a.allocated,
		Completed: a.completed, FinalState: a.finalState, FinalStatus: a.finalStatus}
}

// abort ends what a failed run left: once the round's starts have
// returned, stops every container whose start was sent, releases the ones
// never started, unregisters FAILED, or else kills the application; then
// closes the clients. Best effort, with its own deadline (the run's
// context may be over). An RM would take the containers back at the
// unregistration anyway; the bench does not leave that to it, so a
// failed run ends what it holds the same way on every RM.
func (a *am) abort() {
	a.workers.Wait() // the failed round's context is cancelled: they end soon
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if a.registered && !a.finished {
		var held []*container
		var unstarted []*yarnpb.ContainerIdProto
		a.mu.Lock()
		for _, c := range a.outstanding {
			held = append(held, c)
			if !c.sent {
				unstarted = append(unstarted, c.id)
			}
		}
		a.mu.Unlock()
		if err := a.stop(ctx, held); err != nil {
			a.log.Warn("abort: stop", "err", err)
		}
		if len(unstarted) > 0 {
			if _, err := a.allocate(ctx, nil, unstarted); err != nil {
				a.log.Warn("abort: release", "err", err)
			}
		}
		req := &yarnpb.FinishApplicationMasterRequestProto{FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_FAILED.Enum(),
			Diagnostics: proto.String("yarnfed bench kuberm: aborted")}
		for tries := 0; tries < 50 && !a.finished; tries++ { // false until the RM stored it
			resp := &yarnpb.FinishApplicationMasterResponseProto{}
			if err := a.amrm.Call(ctx, "finishApplicationMaster", req, resp); err != nil {
				a.log.Warn("abort: finishApplicationMaster", "err", err)
				break
			}
			if a.finished = resp.GetIsUnregistered(); !a.finished {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	if a.app != nil && !a.finished {
		kill := &yarnpb.KillApplicationRequestProto{ApplicationId: a.app, Diagnostics: proto.String("yarnfed bench kuberm: aborted")}
		if err := a.rm.Call(ctx, "forceKillApplication", kill, &yarnpb.KillApplicationResponseProto{}); err != nil {
			a.log.Warn("abort: forceKillApplication", "application", a.appID, "err", err)
		}
	}
	a.close()
}

func (a *am) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, c := range a.nms {
		c.Close()
		delete(a.nms, k)
	}
	if a.amrm != nil {
		a.amrm.Close()
	}
	if a.rm != nil {
		a.rm.Close()
	}
}
