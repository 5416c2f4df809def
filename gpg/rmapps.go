package gpg

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// AppState is what the cleaner needs to know of one application an RM
// lists.
type AppState struct {
	// Final: FINISHED, FAILED or KILLED.
	Final      bool
	FinishedAt time.Time
}

// AppLister asks one sub-cluster's RM for every application it knows.
// It must fail rather than return a list that might be incomplete: an RM
// that is down, standby, restarting or still recovering answers an error
// (the cleaner then deletes nothing).
type AppLister interface {
	ListApps(ctx context.Context, sc *pb.SubClusterInfo) (map[string]AppState, error)
}

// Reasons an RM's answer is not trusted as complete.
var (
	ErrNoActiveRM   = errors.New("gpg: no active RM answered")
	ErrRMRecovering = errors.New("gpg: RM started too recently; it may still be recovering applications")
	ErrRMRestarted  = errors.New("gpg: RM restarted or failed over while listing applications")
)

// restLister lists applications through the RM REST API
// (/ws/v1/cluster/info and /ws/v1/cluster/apps).
type restLister struct {
	http      *http.Client
	spnego    *rmrest.SPNEGO // nil: no Kerberos
	user      string
	minUptime time.Duration
	now       func() time.Time
}

// ListApps reads /info, then /apps, then /info again from the active RM of
// sc. The list is trusted only if the same RM incarnation (cluster id and
// start time) was ACTIVE before and after, and has been up for at least
// minUptime: this is what rules out YARN-11387, where a list taken from an
// RM in the middle of a restart is partial.
func (l *restLister) ListApps(ctx context.Context, sc *pb.SubClusterInfo) (map[string]AppState, error) {
	c, before, err := l.active(ctx, sc)
	if err != nil {
		return nil, err
	}
	addr := c.BaseURL
	if up := l.now().Sub(time.UnixMilli(before.StartedOn)); up < l.minUptime {
		return nil, fmt.Errorf("%w: %s up for %v", ErrRMRecovering, addr, up.Round(time.Second))
	}
	apps, err := c.GetApps(ctx, rmrest.AppsQuery{DeSelects: []string{"resourceRequests"}})
	if err != nil {
		return nil, fmt.Errorf("%s: list applications: %w", addr, err)
	}
	if err := sameIncarnation(ctx, c, before); err != nil {
		return nil, err
	}
	out := make(map[string]AppState, len(apps))
	for _, a := range apps {
		st := AppState{Final: finalState(a.State)}
		if a.FinishedTime > 0 {
			st.FinishedAt = time.UnixMilli(a.FinishedTime)
		}
		out[a.ID] = mergeAppState(out[a.ID], st, out[a.ID] != (AppState{}))
	}
	return out, nil
}

// active returns a client of sc's ACTIVE RM (an HA list of web addresses
// is tried in order) and the /info it answered.
func (l *restLister) active(ctx context.Context, sc *pb.SubClusterInfo) (*rmrest.Client, *rmrest.ClusterInfo, error) {
	var errs []error
	for _, addr := range strings.Split(sc.GetRmWebServiceAddress(), ",") {
		if addr = strings.TrimSpace(addr); addr == "" {
			continue
		}
		c := rmrest.NewClient(addr)
		c.HTTP, c.User, c.SPNEGO = l.http, l.user, l.spnego
		info, err := c.GetClusterInfo(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if info.HAState != "ACTIVE" {
			errs = append(errs, fmt.Errorf("%s is %s", addr, info.HAState))
			continue
		}
		return c, info, nil
	}
	return nil, nil, fmt.Errorf("%w in %s: %w", ErrNoActiveRM, sc.GetSubClusterId(), errors.Join(errs...))
}

// sameIncarnation checks, after a listing, that the RM whose /info said
// before is still the same ACTIVE incarnation (cluster id and start time):
// a restart or failover in between may have made the answer partial.
func sameIncarnation(ctx context.Context, c *rmrest.Client, before *rmrest.ClusterInfo) error {
	after, err := c.GetClusterInfo(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrRMRestarted, c.BaseURL, err)
	}
	if after.ID != before.ID || after.StartedOn != before.StartedOn || after.HAState != "ACTIVE" {
		return fmt.Errorf("%w: %s", ErrRMRestarted, c.BaseURL)
	}
	return nil
}

// finalState: FINISHED, FAILED or KILLED.
func finalState(s string) bool { return s == "FINISHED" || s == "FAILED" || s == "KILLED" }

// mergeAppState combines two sightings of one application (its home copy
// and unmanaged copies in other sub-clusters): final only if both are,
// finished at the later time.
func mergeAppState(a, b AppState, haveA bool) AppState {
	if !haveA {
		return b
	}
	out := AppState{Final: a.Final && b.Final, FinishedAt: a.FinishedAt}
	if b.FinishedAt.After(out.FinishedAt) {
		out.FinishedAt = b.FinishedAt
	}
	return out
}
