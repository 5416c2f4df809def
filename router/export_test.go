package router

// Test hooks (compiled only into this package's tests).

// Crash steps of submitApplication.
const (
	StepPolicy = stepPolicy
	StepHome   = stepHome
	StepSubmit = stepSubmit
)

// SetCrashAt makes submitApplication abort (as a router crash would) at the
// steps for which f returns true.
func (r *Router) SetCrashAt(f func(step string) bool) { r.crashAt = f }

// BreakerOpen reports whether sc's breaker is open.
func (r *Router) BreakerOpen(sc SubClusterID) bool { return r.brk.open(sc) }

// MethodNames lists the ApplicationClientProtocol methods the router registers.
func (r *Router) MethodNames() []string {
	var out []string
	for _, m := range r.clientProtocol().Methods {
		out = append(out, m.Name())
	}
	return out
}

// Member returns the router's cached membership row of sc.
func (r *Router) Member(sc SubClusterID) (SubClusterInfo, bool) { return r.members.get(sc) }

// FromPB converts a store row as ClientStore does.
var FromPB = fromPB
