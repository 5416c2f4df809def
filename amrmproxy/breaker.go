package amrmproxy

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sony/gobreaker/v2"

	"github.com/yarnfed/yarnfed/internal/rmbreaker"
)

// breakers holds one circuit breaker per secondary sub-cluster, with the
// router's rule (internal/rmbreaker): a dead RM costs one timeout per
// OpenFor, not one per AM heartbeat, and an open breaker keeps the
// sub-cluster out of splitting. A refused login (one submitter a
// proxy-user rule does not admit) is not "RM down".
type breakers struct {
	cfg      BreakerConfig
	onChange func(sc string, to gobreaker.State)
	mu       sync.Mutex
	m        map[string]*gobreaker.CircuitBreaker[struct{}]
}

func newBreakers(cfg BreakerConfig, onChange func(sc string, to gobreaker.State)) *breakers {
	return &breakers{cfg: cfg, onChange: onChange, m: map[string]*gobreaker.CircuitBreaker[struct{}]{}}
}

func (b *breakers) get(sc string) *gobreaker.CircuitBreaker[struct{}] {
	b.mu.Lock()
	defer b.mu.Unlock()
	cb, ok := b.m[sc]
	if !ok {
		rc := rmbreaker.Config{ConsecutiveFailures: b.cfg.ConsecutiveFailures, OpenFor: b.cfg.OpenFor.D()}
		cb = gobreaker.NewCircuitBreaker[struct{}](rmbreaker.Settings(sc, rc, func(name string, _, to gobreaker.State) {
			if b.onChange != nil {
				b.onChange(name, to)
			}
		}))
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
// reply other than a refused login, timeout); an application error or a
// refused login proves it alive.
func rmDown(err error) bool { return rmbreaker.RMDown(err) }
