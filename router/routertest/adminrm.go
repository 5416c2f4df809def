package routertest

// The fake admin RM here is reached from tests only (deadcode lists it): `yarnfed bench
// router` links this package for its in-memory store (NewStore), which
// pulls the whole package into the binary.

import (
	"context"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
)

// AdminRM is a fake RM admin endpoint (ResourceManagerAdministrationProtocol)
// that records the calls it gets and answers with empty replies, except
// for the data-bearing ones configured below.
type AdminRM struct {
	ID router.SubClusterID
	// Groups answers getGroupsForUser; Decommissioning answers
	// checkForDecommissioningNodes.
	Groups          []string
	Decommissioning []*yarnpb.NodeIdProto
	// Fail, if set, fails every call with it.
	Fail error

	mu    sync.Mutex
	calls map[string]int
}

// NewAdminRM returns an admin endpoint for sub-cluster id.
func NewAdminRM(id router.SubClusterID) *AdminRM {
	return &AdminRM{ID: id, calls: map[string]int{}}
}

// Calls reports how many times method reached this endpoint.
func (a *AdminRM) Calls(method string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[method]
}

// Call serves one admin call.
func (a *AdminRM) Call(_ context.Context, method string, _, resp proto.Message) error {
	a.mu.Lock()
	a.calls[method]++
	a.mu.Unlock()
	if a.Fail != nil {
		return a.Fail
	}
	switch out := resp.(type) {
	case *yarnpb.GetGroupsForUserResponseProto:
		out.Groups = append([]string(nil), a.Groups...)
	case *yarnpb.CheckForDecommissioningNodesResponseProto:
		for _, n := range a.Decommissioning {
			out.DecommissioningNodes = append(out.DecommissioningNodes, proto.Clone(n).(*yarnpb.NodeIdProto))
		}
	}
	return nil
}

// Close is a no-op.
func (a *AdminRM) Close() error { return nil }

// AdminDialer returns a router.DialFunc that connects to the given fakes by
// sub-cluster id (for Config.AdminDial).
func AdminDialer(rms ...*AdminRM) router.DialFunc {
	return dialByID("fake admin RM", func(rm *AdminRM) router.SubClusterID { return rm.ID }, rms)
}
