package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/storepb"
)

// The UAM registry through statestore/client (UAMAPI.md). The client's UAM
// methods are written by another change; until it is merged they are
// reached through uamClient, so this package compiles either way. Once
// merged, *client.Client satisfies uamClient and nothing here changes
// (TestClientStoreReachesUAMRegistry fails until then).

// uamClient is the part of *client.Client the adapter uses.
type uamClient interface {
	GetUAMs(ctx context.Context, appID string, opts ...client.ReadOption) ([]*storepb.UAMRecord, error)
	DeleteUAM(ctx context.Context, appID, subClusterID string) (int, error)
}

// ErrNoUAMRegistry: the store client has no UAM registry methods.
var ErrNoUAMRegistry = errors.New("the state store client has no UAM registry")

func (s *ClientStore) uams() (uamClient, error) {
	c, ok := any(s.c).(uamClient)
	if !ok {
		return nil, ErrNoUAMRegistry
	}
	return c, nil
}

// GetUAMs reads app's rows: linearizable for a kill (a row written just
// before must be seen), a replica's copy for display.
func (s *ClientStore) GetUAMs(ctx context.Context, app string, stale bool) ([]UAMRow, error) {
	c, err := s.uams()
	if err != nil {
		return nil, err
	}
	var opts []client.ReadOption
	if stale {
		opts = append(opts, client.Stale())
	}
	recs, err := c.GetUAMs(ctx, app, opts...)
	if err != nil {
		return nil, fmt.Errorf("UAMs of %s: %w", app, err)
	}
	out := make([]UAMRow, 0, len(recs))
	for _, r := range recs {
		out = append(out, uamRowFromPB(r))
	}
	return out, nil
}

// DeleteUAM is idempotent, so the client may resend it after an unknown
// outcome.
func (s *ClientStore) DeleteUAM(ctx context.Context, app string, sc SubClusterID) (int, error) {
	c, err := s.uams()
	if err != nil {
		return 0, err
	}
	n, err := c.DeleteUAM(ctx, app, string(sc))
	if err != nil {
		return 0, fmt.Errorf("delete UAM rows of %s (%q): %w", app, sc, err)
	}
	return n, nil
}

func uamRowFromPB(r *storepb.UAMRecord) UAMRow {
	return UAMRow{
		App: r.GetApplicationId(), SubCluster: SubClusterID(r.GetSubClusterId()), Home: SubClusterID(r.GetHomeSubClusterId()),
		Attempt: r.GetUamAttemptId(), Proxy: r.GetProxy(), AMAttempt: r.GetAmAttemptId(), User: r.GetUser(), Queue: r.GetQueue(),
		Registered: r.GetRegistered(), Created: time.UnixMilli(r.GetCreateTimeMs()), Updated: time.UnixMilli(r.GetUpdateTimeMs()),
	}
}
