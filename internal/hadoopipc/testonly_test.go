package hadoopipc

import "context"

// Test-only helpers, kept out of the production files (deadcode).

// GroupMappingFunc adapts a function to GroupMapping.
type GroupMappingFunc func(user string) []string

// Groups calls f.
func (f GroupMappingFunc) Groups(user string) []string { return f(user) }

// stats reports live and idle workers.
func (p *workerPool) stats() (live, idle int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live, len(p.idle)
}

// StaticAddr is an address function for NewDialingRelay that always
// returns addr.
func StaticAddr(addr string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return addr, nil }
}
