package store

import (
	"context"
	"slices"
	"time"
)

// raftPeersRefresh is how often the Raft TLS layer's peer list is rebuilt
// from the configuration (a joined or removed replica, a host name that
// now resolves elsewhere).
const raftPeersRefresh = 2 * time.Second

// refreshRaftPeers keeps the TLS layer's peer list (security.StreamLayer.
// SetPeers: the pool a flood from other addresses cannot fill) equal to
// the bootstrap peers plus the current Raft configuration's addresses.
func (s *Store) refreshRaftPeers() {
	defer s.wg.Done()
	t := time.NewTicker(raftPeersRefresh)
	defer t.Stop()
	for {
		addrs := s.raftPeerAddrs()
		ctx, cancel := context.WithTimeout(context.Background(), raftPeersRefresh)
		s.layer.SetPeers(ctx, addrs)
		cancel()
		select {
		case <-s.done:
			return
		case <-t.C:
		}
	}
}

func (s *Store) raftPeerAddrs() []string {
	var addrs []string
	for _, p := range s.cfg.Peers {
		addrs = append(addrs, p.RaftAddr)
	}
	if cf := s.raft.GetConfiguration(); cf.Error() == nil {
		for _, srv := range cf.Configuration().Servers {
			addrs = append(addrs, string(srv.Address))
		}
	}
	slices.Sort(addrs)
	return slices.Compact(addrs)
}
