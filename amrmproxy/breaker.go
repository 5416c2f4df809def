package amrmproxy

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sony/gobreaker/v2"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
)

// breakers holds one circuit breaker per secondary sub-cluster, as the
// router does: a dead RM costs one timeout per OpenFor, not one per AM
// heartbeat, and an open breaker keeps the sub-cluster out of splitting.
type breakers struct {
	cfg BreakerConfig
	mu  sync.Mutex
	m   map[string]*gobreaker.CircuitBreaker[struct{}]
}

func newBreakers(cfg BreakerConfig) *breakers {
	return &breakers{cfg: cfg, m: map[string]*gobreaker.CircuitBreaker[struct{}]{}}
}

func (b *breakers) get(sc string) *gobreaker.CircuitBreaker[struct{}] {
	b.mu.Lock()
	defer b.mu.Unlock()
	cb, ok := b.m[sc]
	if !ok {
		cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
			Name:        sc,
			MaxRequests: 1,
			Timeout:     b.cfg.OpenFor.D(),
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= b.cfg.ConsecutiveFailures },
			IsExcluded:  func(err error) bool { return errors.Is(err, context.Canceled) },
			IsSuccessful: func(err error) bool {
				return err == nil || !rmDown(err)
			},
		})
		b.m[sc] = cb
	}
	return cb
}

// do runs f under sc's breaker; an open breaker fails at once with
// ErrSubClusterUnavailable.
func (b *breakers) do(sc string, f func() error) error {
	_, err := b.get(sc).Execute(func() (struct{}, error) { return struct{}{}, f() })
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return fmt.Errorf("%w: %s: %w", ErrSubClusterUnavailable, sc, err)
	}
	return err
}

func (b *breakers) open(sc string) bool {
	b.mu.Lock()
	cb, ok := b.m[sc]
	b.mu.Unlock()
	return ok && cb.State() == gobreaker.StateOpen
}

// rmDown: the RM did not serve the call (unreachable, standby, fatal
// reply, timeout); an application error proves it alive.
func rmDown(err error) bool {
	if err == nil {
		return false
	}
	var re *hadoopipc.RemoteError
	if errors.As(err, &re) {
		return re.Fatal || re.Class == hadoopipc.ClassStandby || re.Class == hadoopipc.ClassRetriable
	}
	return !errors.Is(err, context.Canceled)
}
