package policies

import (
	"math/rand/v2"
	"sync"
)

// Source is the random source policies draw from; math/rand/v2's Source
// satisfies it. It must be safe for concurrent use: policies are shared by
// every request goroutine.
type Source interface {
	Uint64() uint64
}

// globalSource draws from math/rand/v2's goroutine-safe, lock-free global
// generator: the production default.
type globalSource struct{}

func (globalSource) Uint64() uint64 { return rand.Uint64() }

// lockedSource serialises a deterministic PCG so tests can replay decisions.
type lockedSource struct {
	mu  sync.Mutex
	pcg *rand.PCG
}

// Uint64 is reachable only from tests, through NewSeededSource (see there).
func (s *lockedSource) Uint64() uint64 {
	s.mu.Lock()
	v := s.pcg.Uint64()
	s.mu.Unlock()
	return v
}

// NewSeededSource returns a deterministic, goroutine-safe Source. No binary
// uses it (deadcode lists it); it stays here, not in a _test file, because
// policiestest and this package's own tests both need it, and policiestest
// imports this package. The same
// seed and the same sequence of calls give the same decisions.
func NewSeededSource(seed uint64) Source {
	return &lockedSource{pcg: rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)}
}

func sourceOrDefault(s Source) Source {
	if s == nil {
		return globalSource{}
	}
	return s
}

// float64From returns a uniform float in [0, 1).
func float64From(s Source) float64 {
	return float64(s.Uint64()>>11) * (1.0 / (1 << 53))
}

// intnFrom returns a uniform int in [0, n); n must be > 0. The modulo bias
// is below 2^-40 for any n a federation can have.
func intnFrom(s Source, n int) int {
	return int(s.Uint64() % uint64(n))
}
