package policies

import (
	"context"
	"fmt"
	"io"
)

// Test-only helpers, kept out of the production files (deadcode).

// FormatPolicySaveString is the inverse of ParsePolicySaveString.
func FormatPolicySaveString(q QueuePolicy) string {
	return q.Queue + ";" + FormatWeightString(q.Info.RouterWeights) + ";" +
		FormatWeightString(q.Info.AMRMWeights) + ";" + JavaFloatString(q.Info.HeadroomAlpha)
}

// ParseMachineList reads a machine-list file's content.
func ParseMachineList(r io.Reader) (*MachineList, error) {
	t, err := parseMachineTable(r)
	if err != nil {
		return nil, err
	}
	m := &MachineList{}
	m.table.Store(t)
	return m, nil
}

// HomeSubCluster routes app with its queue's router policy (the facade
// tests' way in; the router builds its managers itself, the AMRMProxy
// asks only for AMRMPolicy).
func (f *Facade) HomeSubCluster(ctx context.Context, snap *Snapshot, app *AppSubmission, blacklist []SubClusterID) (SubClusterID, error) {
	if app == nil {
		return "", fmt.Errorf("%w: nil application submission", ErrInvalidRequest)
	}
	m, err := f.Manager(ctx, app.QueueOrDefault())
	if err != nil {
		return "", err
	}
	return m.Router().HomeSubCluster(ctx, snap, app, blacklist)
}
