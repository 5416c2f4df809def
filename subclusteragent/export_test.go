package subclusteragent

// Status returns a snapshot of the agent's view (for the tests; no binary
// reads it).
func (a *Agent) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}
