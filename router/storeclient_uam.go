package router

import (
	"context"
	"fmt"
	"time"

	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/storepb"
)

// The UAM registry through statestore/client (the amrmproxy writes the
// rows; the router reads them to kill and to show where an application
// runs, and deletes them after a kill).

// GetUAMs reads app's rows: linearizable for a kill (a row written just
// before must be seen), a replica's copy for display.
func (s *ClientStore) GetUAMs(ctx context.Context, app string, stale bool) ([]UAMRow, error) {
	var opts []client.ReadOption
	if stale {
		opts = append(opts, client.Stale())
	}
	recs, err := s.c.GetUAMs(ctx, app, opts...)
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
	n, err := s.c.DeleteUAM(ctx, app, string(sc))
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
