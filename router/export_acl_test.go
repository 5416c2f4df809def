package router

import (
	"net/http"

	"github.com/yarnfed/yarnfed/router/rest"
)

// patternRecorder registers on a real mux and remembers each pattern.
type patternRecorder struct {
	*http.ServeMux
	patterns []string
}

func (p *patternRecorder) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	p.patterns = append(p.patterns, pattern)
	p.ServeMux.HandleFunc(pattern, h)
}

func (p *patternRecorder) Handle(pattern string, h http.Handler) {
	p.patterns = append(p.patterns, pattern)
	p.ServeMux.Handle(pattern, h)
}

// RESTPatterns lists the patterns the REST API (and /proxy/) registers.
func (r *Router) RESTPatterns() []string {
	rec := &patternRecorder{ServeMux: http.NewServeMux()}
	r.webRoutes(rec)
	return rec.patterns
}

// RESTAppRule describes the ACL rule of an app-scoped pattern: access
// (VIEW_APP or MODIFY_APP), open, filtered; ok is false without a rule.
func RESTAppRule(pattern string) (access string, open, filtered, ok bool) {
	kind, open, filtered, ok := rest.AppRule(pattern)
	return kind.String(), open, filtered, ok
}

// IPCAppAccess is the access an ApplicationClientProtocol method needs
// (checkAppCall's table); ok is false when it has none.
func IPCAppAccess(method string) (string, bool) {
	k, ok := appAccessOf[method]
	return k.String(), ok
}
