package store

import (
	"sync"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// hub fans applied changes out to watchers. It keeps a ring of recent
// events so a watcher that reconnects with the last index it saw can catch
// up without a RESET; a watcher that falls further behind than its buffer
// is cut off with a RESET rather than slowing down Apply.
type hub struct {
	mu   sync.Mutex
	ring []*pb.WatchEvent
	next int  // ring write position
	full bool // ring has wrapped
	// lost is the highest index whose events may be missing from the ring
	// (evicted, or the state was replaced by a restore or format).
	lost uint64
	subs map[*Subscription]struct{}
}

// Subscription receives events in index order. C is closed when the
// subscriber falls behind or the hub stops; the receiver must then treat
// its cache as stale (Lagged reports which).
type Subscription struct {
	C      chan *pb.WatchEvent
	h      *hub
	lagged bool
}

const subscriptionBuffer = 4096

func newHub(ringSize int) *hub {
	return &hub{ring: make([]*pb.WatchEvent, ringSize), subs: map[*Subscription]struct{}{}}
}

// publish is called by the FSM after a batch commits.
func (h *hub) publish(evs []*pb.WatchEvent) {
	if len(evs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range evs {
		if e.GetKind() == pb.WatchEvent_RESET {
			// Everything before a reset is meaningless to a new watcher.
			h.clearLocked(e.GetIndex())
		} else {
			if old := h.ring[h.next]; old != nil && old.GetIndex() > h.lost {
				h.lost = old.GetIndex()
			}
			h.ring[h.next] = e
			h.next = (h.next + 1) % len(h.ring)
			if h.next == 0 {
				h.full = true
			}
		}
		for s := range h.subs {
			select {
			case s.C <- e:
			default:
				s.lagged = true
				close(s.C)
				delete(h.subs, s)
			}
		}
	}
}

func (h *hub) clearLocked(index uint64) {
	for i := range h.ring {
		h.ring[i] = nil
	}
	h.next, h.full = 0, false
	if index > h.lost {
		h.lost = index
	}
}

// subscribe registers a watcher. With after > 0 it first replays buffered
// events with a higher index; if some of those may be gone it starts with a
// RESET instead. The caller must call Cancel.
func (h *hub) subscribe(after uint64) *Subscription {
	s := &Subscription{C: make(chan *pb.WatchEvent, subscriptionBuffer), h: h}
	h.mu.Lock()
	defer h.mu.Unlock()
	if after > 0 {
		if after < h.lost {
			s.C <- &pb.WatchEvent{Kind: pb.WatchEvent_RESET, Index: h.lost}
		} else {
			n := len(h.ring)
			start := 0
			if h.full {
				start = h.next
			} else {
				n = h.next
			}
			for i := 0; i < n; i++ {
				e := h.ring[(start+i)%len(h.ring)]
				if e.GetIndex() <= after {
					continue
				}
				select {
				case s.C <- e:
				default:
					s.lagged = true
					close(s.C)
					return s
				}
			}
		}
	}
	h.subs[s] = struct{}{}
	return s
}

// Lagged reports whether C was closed because the subscriber fell behind.
func (s *Subscription) Lagged() bool {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return s.lagged
}

// Cancel unregisters the subscription.
func (s *Subscription) Cancel() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if _, ok := s.h.subs[s]; ok {
		delete(s.h.subs, s)
		close(s.C)
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		close(s.C)
		delete(h.subs, s)
	}
}
