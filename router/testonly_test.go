package router

// Test-only helpers, kept out of the production files (deadcode).

// len is the number of clients in the pool (evicted ones still finishing
// calls are not counted).
func (p *pool) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lru.Len()
}
