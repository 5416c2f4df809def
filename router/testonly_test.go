package router

import "strings"

// Test-only helpers, kept out of the production files (deadcode).

// len is the number of clients in the pool (evicted ones still finishing
// calls are not counted).
func (p *pool) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lru.Len()
}

// String renders the list in Hadoop's syntax.
func (a ACL) String() string {
	if a.all {
		return "*"
	}
	return strings.Join(a.users, ",") + " " + strings.Join(a.groups, ",")
}
