package amrmproxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/amrmproxy/uam"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/statestore/client"
	storepb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// uamRegistry is the state store's UAM registry (the federation-wide
// record Hadoop's in-NM proxy keeps in its FederationRegistryClient): one
// row per application and secondary sub-cluster with the UAM's attempt,
// AMRMToken and the proxy and AM attempt it serves. *client.Client
// implements it. Rows hold live tokens: only the amrmproxy and router
// roles may read them.
type uamRegistry interface {
	PutUAM(ctx context.Context, r *storepb.UAMRecord) (*storepb.UAMRecord, error)
	GetUAMs(ctx context.Context, appID string, opts ...client.ReadOption) ([]*storepb.UAMRecord, error)
	ListUAMs(ctx context.Context, subClusterID string, limit int, opts ...client.ReadOption) ([]*storepb.UAMRecord, error)
	DeleteUAM(ctx context.Context, appID, subClusterID string) (int, error)
}

var _ uamRegistry = (*client.Client)(nil)

// ErrRegistry: a write to the UAM registry failed; a UAM not yet recorded
// is not used.
var ErrRegistry = errors.New("UAM registry")

// registryTimeout bounds one registry call on the AM's path.
const registryTimeout = 10 * time.Second

// uamRow is the registry row of u as this proxy sees it now.
func (u *uamConn) uamRow(registered bool) *storepb.UAMRecord {
	a := u.a
	u.mu.Lock()
	tok := u.token
	nm := u.nm.list()
	u.mu.Unlock()
	r := &storepb.UAMRecord{ApplicationId: a.id.AppKey(), SubClusterId: u.sc, HomeSubClusterId: a.home,
		Proxy: a.p.proxyID, AmAttemptId: a.id.String(), User: a.user, Queue: a.queue, Registered: registered,
		NmTokens: marshalNMTokens(nm)}
	if tok != nil {
		r.AmrmToken = mustMarshal(tok)
		if at, _, err := ParseAMRMTokenIdentifier(tok.GetIdentifier()); err == nil {
			r.UamAttemptId = at.String()
		}
	}
	return r
}

// putRow writes u's registry row. Without a registry (none configured) it
// does nothing.
func (u *uamConn) putRow(ctx context.Context, registered bool) error {
	p := u.a.p
	if p.registry == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	if _, err := p.registry.PutUAM(ctx, u.uamRow(registered)); err != nil {
		p.metrics.registryErrors.WithLabelValues("put").Inc()
		return fmt.Errorf("%w: put %s/%s: %w", ErrRegistry, u.a.id.AppKey(), u.sc, err)
	}
	return nil
}

// deleteRow removes u's registry row (after it unregistered or was
// killed), retrying a few times: a row left behind is found by the GPG's
// reaper, but should not be.
func (p *Proxy) deleteRow(ctx context.Context, app, sc string) {
	if p.registry == nil {
		return
	}
	err := uam.Retry(ctx, 3, 200*time.Millisecond, nil, func() error {
		cctx, cancel := context.WithTimeout(ctx, registryTimeout)
		defer cancel()
		_, err := p.registry.DeleteUAM(cctx, app, sc)
		return err
	})
	if err != nil {
		p.metrics.registryErrors.WithLabelValues("delete").Inc()
		p.log.Error("cannot delete the UAM's registry row; the GPG reaper will", "application", app, "subcluster", sc, "err", err)
	}
}

// previousUAM is a UAM an earlier AM attempt of the application launched,
// to be re-attached by this one.
type previousUAM struct {
	sc         string
	token      *commonpb.TokenProto
	registered bool
	from       string // the proxy/attempt it came from (for the audit line)
	// nmTokens: the latest NM token per node the UAM received, and the AM
	// attempt (number) that last held the UAM (which source is newer).
	nmTokens  []*yarnpb.NMTokenProto
	amAttempt int32
}

// previousUAMs lists the UAMs of earlier attempts of a's application: the
// registry's rows of other attempts, and those of superseded attempts this
// very proxy held (their tokens are in memory; this covers a proxy
// without a registry too).
func (a *attempt) previousUAMs(ctx context.Context, local map[string]previousUAM) ([]previousUAM, error) {
	out := map[string]previousUAM{}
	for sc, pu := range local {
		out[sc] = pu
	}
	// Attempt 1 has no earlier attempts: no store read on every first
	// registration.
	if reg := a.p.registry; reg != nil && a.id.Attempt > 1 {
		cctx, cancel := context.WithTimeout(ctx, registryTimeout)
		rows, err := reg.GetUAMs(cctx, a.id.AppKey())
		cancel()
		if err != nil {
			a.p.metrics.registryErrors.WithLabelValues("get").Inc()
			return nil, fmt.Errorf("%w: get %s: %w", ErrRegistry, a.id.AppKey(), err)
		}
		for _, r := range rows {
			if r.GetAmAttemptId() == a.id.String() || r.GetSubClusterId() == a.home {
				continue
			}
			if len(r.GetAmrmToken()) == 0 {
				// Submitted, token never recorded: the RM hands it out only
				// before registration, so ask once more below.
				out[r.GetSubClusterId()] = previousUAM{sc: r.GetSubClusterId(), from: r.GetProxy() + "/" + r.GetAmAttemptId()}
				continue
			}
			tok := &commonpb.TokenProto{}
			if err := proto.Unmarshal(r.GetAmrmToken(), tok); err != nil {
				a.p.log.Error("UAM registry row holds a token that does not decode; not re-attaching", "application", r.GetApplicationId(),
					"subcluster", r.GetSubClusterId(), "err", err)
				continue
			}
			nm, bad := unmarshalNMTokens(r.GetNmTokens())
			if bad > 0 {
				a.p.log.Warn("UAM registry row holds NM tokens that do not decode; skipping them", "application", r.GetApplicationId(),
					"subcluster", r.GetSubClusterId(), "bad", bad)
			}
			pu := previousUAM{sc: r.GetSubClusterId(), token: tok, registered: r.GetRegistered(),
				from: r.GetProxy() + "/" + r.GetAmAttemptId(), nmTokens: nm}
			if id, err := parseAttemptID(r.GetAmAttemptId()); err == nil {
				pu.amAttempt = id.Attempt
			}
			if loc, ok := out[pu.sc]; ok {
				// This proxy held the UAM too: the one that heard from the RM
				// last knows the current tokens (a tie goes to the local
				// copy, which the row is written from).
				pu.nmTokens = mergeNMTokens(loc.nmTokens, loc.amAttempt, pu.nmTokens, pu.amAttempt)
			}
			out[pu.sc] = pu
		}
	}
	list := make([]previousUAM, 0, len(out))
	for _, pu := range out {
		list = append(list, pu)
	}
	return list, nil
}

// keepContainers says whether the application keeps containers across
// attempts, and how that was learnt: the submission context the router
// stored beside the application's home (keep_containers_across_application_attempts),
// else the home's register response (containers handed back means keep),
// else no (the RM's default).
func (a *attempt) keepContainers(ctx context.Context, homeResp *yarnpb.RegisterApplicationMasterResponseProto) (bool, string) {
	if src, ok := a.p.cfg.Store.(SubmissionSource); ok {
		cctx, cancel := context.WithTimeout(ctx, registryTimeout)
		asc, err := src.Submission(cctx, a.id.AppKey())
		cancel()
		switch {
		case err != nil:
			a.p.log.Warn("cannot read the application's submission context from the store", "attempt", a.id, "err", err)
		case asc != nil:
			return asc.GetKeepContainersAcrossApplicationAttempts(), "store"
		}
	}
	if len(homeResp.GetContainersFromPreviousAttempts()) > 0 {
		return true, "register-response"
	}
	return false, "default"
}

// SubmissionSource is what the proxy reads of an application's home row:
// the submission context the router stored (nil when none was stored).
// ClientStore implements it.
type SubmissionSource interface {
	Submission(ctx context.Context, appID string) (*yarnpb.ApplicationSubmissionContextProto, error)
}

// adoptPrevious re-attaches the UAMs of the application's earlier
// attempts to a (Hadoop's reAttachUAMAndMergeRegisterResponse). Each is
// registered again with its stored token (an RM lets an unmanaged,
// keep-containers attempt register again, answering with its live
// containers). With keep-containers those containers join a's container
// map and the AM's register response (containers and NM tokens from
// previous attempts); without, they are released on their RM before the
// AM gets its answer, and never shown to it. Either way the UAM then
// serves a, and its registry row names this proxy and a. Called with a.mu
// held, before a.regResp is set.
func (a *attempt) adoptPrevious(ctx context.Context, prev []previousUAM, resp *yarnpb.RegisterApplicationMasterResponseProto) {
	type result struct {
		u    *uamConn
		reg  *yarnpb.RegisterApplicationMasterResponseProto
		err  error
		from string
	}
	results := make(chan result, len(prev))
	for _, pu := range prev {
		if pu.token == nil || pu.sc == a.home {
			continue
		}
		u := newUAMConn(a, pu.sc)
		u.nm.putAll(pu.nmTokens)
		a.uams[pu.sc] = u
		go func() {
			reg, err := u.adopt(ctx, a.p, pu.token, a.keep)
			results <- result{u, reg, err, pu.from}
		}()
	}
	add := map[string]string{}
	gone := map[string]string{}
	for range cap(results) - countNil(prev, a.home) {
		r := <-results
		if r.err != nil {
			a.p.log.Warn("cannot re-attach the UAM of an earlier attempt", "attempt", a.id, "subcluster", r.u.sc, "from", r.from, "err", r.err)
			a.p.audit.Info("uam-reattach", "attempt", a.id.String(), "subcluster", r.u.sc, "from", r.from, "result", "error")
			continue
		}
		n := 0
		for _, c := range r.reg.GetContainersFromPreviousAttempts() {
			k := keyOf(c.GetId())
			if a.keep {
				a.containers[k] = r.u.sc
				add[k.String()] = r.u.sc
				resp.ContainersFromPreviousAttempts = append(resp.ContainersFromPreviousAttempts, c)
			} else {
				// Released already; its completion must not reach the AM.
				a.aborted[k] = r.u.sc
				gone[k.String()] = r.u.sc
			}
			n++
		}
		// The NM tokens go to the AM with or without keep-containers: the
		// UAM's attempt id is attempt 1's, and an RM that handed these
		// tokens out on the re-register counts them as held by that
		// attempt, so it never sends them again with a new container on
		// those nodes (YARN-8980's shape; a real distributed shell AM
		// failed to start its containers with "No NMToken sent").
		resp.NmTokensFromPreviousAttempts = append(resp.NmTokensFromPreviousAttempts, r.reg.GetNmTokensFromPreviousAttempts()...)
		a.p.metrics.reattached.WithLabelValues(r.u.sc).Inc()
		a.p.audit.Info("uam-reattach", "attempt", a.id.String(), "subcluster", r.u.sc, "from", r.from, "result", "ok",
			"keep_containers", a.keep, "keep_from", a.keepHow, "containers", n)
	}
	if err := a.p.state.UpdateContainers(a.id.String(), add, nil, gone, nil); err != nil {
		a.p.log.Error("cannot persist the containers of re-attached UAMs; will retry", "attempt", a.id, "err", err)
		a.p.metrics.stateErrors.Inc()
		a.unsaved, a.unsavedAborted = add, gone
	}
}

// adopt re-attaches this (new) UAM connection with tok, registers again
// and, without keep-containers, releases what the earlier attempt held.
// It ends like a launch: ready closed, err set on failure.
func (u *uamConn) adopt(ctx context.Context, p *Proxy, tok *commonpb.TokenProto, keep bool) (*yarnpb.RegisterApplicationMasterResponseProto, error) {
	u.callStarted(time.Now())
	resp, err := u.doAdopt(ctx, p, tok, keep)
	u.callEnded(err)
	if err != nil {
		p.metrics.rmErrors.WithLabelValues(u.sc).Inc()
	}
	u.up(p, err)
	return resp, err
}

func (u *uamConn) doAdopt(ctx context.Context, p *Proxy, tok *commonpb.TokenProto, keep bool) (*yarnpb.RegisterApplicationMasterResponseProto, error) {
	if err := u.attach(p, tok, false); err != nil {
		return nil, err
	}
	req := proto.Clone(u.a.regReq).(*yarnpb.RegisterApplicationMasterRequestProto)
	u.rel.setRegister(req)
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout.D())
	defer cancel()
	var resp *yarnpb.RegisterApplicationMasterResponseProto
	err := p.brk.do(u.sc, func() error {
		var err error
		resp, err = u.rel.rm.Register(cctx, req)
		return err
	})
	switch {
	case err == nil:
		u.rel.registered()
	case alreadyRegistered(err):
		// An RM without the re-register rule for unmanaged keep-containers
		// attempts: attached (the relayer finds the responseId), but its
		// containers cannot be listed.
		resp = &yarnpb.RegisterApplicationMasterResponseProto{}
	default:
		return nil, fmt.Errorf("re-register UAM: %w", err)
	}
	if !keep && len(resp.GetContainersFromPreviousAttempts()) > 0 {
		// Without keep-containers the earlier attempt's containers die with
		// it, as the home RM kills its own: release them before this
		// attempt uses the sub-cluster.
		rel := &yarnpb.AllocateRequestProto{}
		for _, c := range resp.GetContainersFromPreviousAttempts() {
			rel.Release = append(rel.Release, c.GetId())
		}
		var relResp *yarnpb.AllocateResponseProto
		if err := p.brk.do(u.sc, func() error {
			var err error
			relResp, _, err = u.rel.allocate(cctx, rel) // a fresh relayer: nothing to replay
			return err
		}); err != nil {
			return nil, fmt.Errorf("release the earlier attempt's containers: %w", err)
		}
		// Tokens the RM sent with this answer are sent once: keep them.
		u.mu.Lock()
		u.nm.putAll(relResp.GetNmTokens())
		u.mu.Unlock()
	}
	// The tokens the re-register minted are the newest for their nodes.
	u.mu.Lock()
	u.nm.putAll(resp.GetNmTokensFromPreviousAttempts())
	u.registered = true
	u.mu.Unlock()
	if err := p.state.PutUAM(u.a.id.String(), u.stateRecord(true)); err != nil {
		return nil, fmt.Errorf("persist UAM token: %w", err)
	}
	// The row exists (written by the earlier attempt) and holds this very
	// token, so the UAM stays findable if the update fails: it is used
	// and the update retried with its heartbeats.
	if err := u.putRow(ctx, true); err != nil {
		p.log.Error("cannot update the re-attached UAM's registry row; will retry", "attempt", u.a.id, "subcluster", u.sc, "err", err)
		u.mu.Lock()
		u.rowStale = true
		u.mu.Unlock()
	}
	return resp, nil
}

// countNil counts the entries of prev adoptPrevious skips.
func countNil(prev []previousUAM, home string) int {
	n := 0
	for _, pu := range prev {
		if pu.token == nil || pu.sc == home {
			n++
		}
	}
	return n
}
