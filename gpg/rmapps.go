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
	var errs []error
	for _, addr := range strings.Split(sc.GetRmWebServiceAddress(), ",") {
		if addr = strings.TrimSpace(addr); addr == "" {
			continue
		}
		c := rmrest.NewClient(addr)
		c.HTTP, c.User, c.SPNEGO = l.http, l.user, l.spnego
		before, err := c.GetClusterInfo(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if before.HAState != "ACTIVE" {
			errs = append(errs, fmt.Errorf("%s is %s", addr, before.HAState))
			continue
		}
		if up := l.now().Sub(time.UnixMilli(before.StartedOn)); up < l.minUptime {
			return nil, fmt.Errorf("%w: %s up for %v", ErrRMRecovering, addr, up.Round(time.Second))
		}
		apps, err := c.GetApps(ctx, rmrest.AppsQuery{DeSelects: []string{"resourceRequests"}})
		if err != nil {
			return nil, fmt.Errorf("%s: list applications: %w", addr, err)
		}
		after, err := c.GetClusterInfo(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrRMRestarted, addr, err)
		}
		if after.ID != before.ID || after.StartedOn != before.StartedOn || after.HAState != "ACTIVE" {
			return nil, fmt.Errorf("%w: %s", ErrRMRestarted, addr)
		}
		out := make(map[string]AppState, len(apps))
		for _, a := range apps {
			st := AppState{Final: a.State == "FINISHED" || a.State == "FAILED" || a.State == "KILLED"}
			if a.FinishedTime > 0 {
				st.FinishedAt = time.UnixMilli(a.FinishedTime)
			}
			out[a.ID] = mergeAppState(out[a.ID], st, out[a.ID] != (AppState{}))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w in %s: %w", ErrNoActiveRM, sc.GetSubClusterId(), errors.Join(errs...))
}

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
