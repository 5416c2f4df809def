package router_test

import (
	"testing"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
)

// TestIPCAppAccessPerMethod writes out, by hand, the application access
// each ApplicationClientProtocol method needs at the router (what
// ClientRMService checks: MODIFY_APP for changes, VIEW_APP for attempt
// and container reads), and compares checkAppCall's table with it for
// every method of the service. TestEveryAppScopedIPCMethodChecked only
// proves an entry exists; this pins its value, so a move or a signal
// that needs only VIEW_APP fails here. Methods not listed must have no
// entry (not per-application, or filtered as getApplicationReport).
func TestIPCAppAccessPerMethod(t *testing.T) {
	want := map[string]string{
		"forceKillApplication":        "MODIFY_APP",
		"failApplicationAttempt":      "MODIFY_APP",
		"moveApplicationAcrossQueues": "MODIFY_APP",
		"updateApplicationPriority":   "MODIFY_APP",
		"updateApplicationTimeouts":   "MODIFY_APP",
		"signalToContainer":           "MODIFY_APP",
		"getApplicationAttemptReport": "VIEW_APP",
		"getApplicationAttempts":      "VIEW_APP",
		"getContainerReport":          "VIEW_APP",
		"getContainers":               "VIEW_APP",
	}
	sd := yarnpb.File_applicationclient_protocol_proto.Services().ByName("ApplicationClientProtocolService")
	if sd == nil {
		t.Fatal("no ApplicationClientProtocolService descriptor")
	}
	seen := 0
	for i := 0; i < sd.Methods().Len(); i++ {
		name := string(sd.Methods().Get(i).Name())
		got, ok := router.IPCAppAccess(name)
		w, listed := want[name]
		if listed {
			seen++
		}
		switch {
		case listed && !ok:
			t.Errorf("%s: no application-ACL entry, want %s", name, w)
		case listed && got != w:
			t.Errorf("%s: needs %s, want %s", name, got, w)
		case !listed && ok:
			t.Errorf("%s: has an application-ACL entry (%s) this test does not expect; add it here on purpose", name, got)
		}
	}
	if seen != len(want) {
		t.Fatalf("only %d of the %d methods here are in the service: the list names a method that is gone", seen, len(want))
	}
}

// TestRESTAppRulePerRoute writes out, by hand, the rule each app-scoped
// REST route has (RMWebServices: the state, queue and priority reads are
// shown to anyone, the app itself is filtered, the changes need
// MODIFY_APP, the rest VIEW_APP) and compares rest/appacl.go's table with
// it. TestEveryAppRouteHasACLRule proves each rule is applied as
// declared; this proves the declaration is the RM's.
func TestRESTAppRulePerRoute(t *testing.T) {
	type rule struct {
		access         string // "" when open
		open, filtered bool
	}
	const root = "/ws/v1/cluster/apps/{appid}"
	view, modify := rule{access: "VIEW_APP"}, rule{access: "MODIFY_APP"}
	open := rule{open: true}
	want := map[string]rule{
		"GET " + root:                                                       {access: "VIEW_APP", filtered: true},
		"GET " + root + "/state":                                            open,
		"PUT " + root + "/state":                                            modify,
		"GET " + root + "/priority":                                         open,
		"PUT " + root + "/priority":                                         modify,
		"GET " + root + "/queue":                                            open,
		"PUT " + root + "/queue":                                            modify,
		"GET " + root + "/timeouts":                                         view,
		"GET " + root + "/timeouts/{type}":                                  view,
		"PUT " + root + "/timeout":                                          modify,
		"GET " + root + "/appattempts":                                      view,
		"GET " + root + "/appattempts/{attemptid}":                          view,
		"GET " + root + "/appattempts/{attemptid}/containers":               view,
		"GET " + root + "/appattempts/{attemptid}/containers/{containerid}": view,
		"/proxy/{appid}":                                                    view,
		"/proxy/{appid}/{rest...}":                                          view,
	}
	for pattern, w := range want {
		access, isOpen, filtered, ok := router.RESTAppRule(pattern)
		if !ok {
			t.Errorf("%s: no application-ACL rule", pattern)
			continue
		}
		if isOpen != w.open || filtered != w.filtered || (!w.open && access != w.access) {
			t.Errorf("%s: rule %s open=%v filtered=%v, want %s open=%v filtered=%v", pattern, access, isOpen, filtered, w.access, w.open, w.filtered)
		}
	}
}
