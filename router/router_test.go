package router_test

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

func TestSubmitAndReportThroughRouter(t *testing.T) {
	f := routertest.NewFed(t, 2, nil)
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatalf("submit: %v", err)
	}
	app := yarnid.AppIDString(id)
	home, ok := f.Store.Homes()[app]
	if !ok {
		t.Fatalf("no home row for %s", app)
	}
	if got := f.Holders(app); !slices.Equal(got, []router.SubClusterID{home}) {
		t.Fatalf("app on %v, home row says %s", got, home)
	}
	rep, err := f.Report(f.Client, id)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	if rep.GetRmClusterId() != string(home) {
		t.Fatalf("report from %s, want home %s", rep.GetRmClusterId(), home)
	}
}

func TestEveryMethodServed(t *testing.T) {
	f := routertest.NewFed(t, 1, nil)
	sd := yarnpb.File_applicationclient_protocol_proto.Services().ByName("ApplicationClientProtocolService")
	if sd == nil {
		t.Fatal("no ApplicationClientProtocolService descriptor")
	}
	registered := map[string]int{}
	for _, n := range f.Router.MethodNames() {
		registered[n]++
	}
	for i := 0; i < sd.Methods().Len(); i++ {
		m := sd.Methods().Get(i)
		name := string(m.Name())
		if registered[name] != 1 {
			t.Errorf("%s registered %d times, want 1", name, registered[name])
		}
		delete(registered, name)
		// Over the wire: anything but "no such method" proves the router
		// serves it (requests with required fields fail to marshal and
		// are covered by the registration check above).
		req, resp := newOf(m.Input()), newOf(m.Output())
		if !proto.Equal(req, req) || proto.CheckInitialized(req) != nil {
			continue
		}
		if err := f.Client.Call(routertest.Ctx(t), name, req, resp); routertest.RemoteClass(err) == hadoopipc.ClassNoSuchMethod {
			t.Errorf("%s: not served: %v", name, err)
		}
	}
	for n := range registered {
		t.Errorf("%s registered but not in ApplicationClientProtocolService", n)
	}
}

func TestErrorsNameSubClusterAndKeepClass(t *testing.T) {
	f := routertest.NewFed(t, 1, nil)
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	// A stored home for an app the RM never saw: the RM's own exception
	// reaches the client with its class, and the message names the SC.
	ghost := &yarnpb.ApplicationIdProto{Id: id.Id, ClusterTimestamp: new(int64(42))}
	_, _, _, _ = f.Store.AddApplicationHome(routertest.Ctx(t), yarnid.AppIDString(ghost), "SC-1", nil)
	_, err := f.Report(f.Client, ghost)
	if routertest.RemoteClass(err) != hadoopipc.ClassApplicationNotFound {
		t.Fatalf("class = %q (%v), want ApplicationNotFoundException", routertest.RemoteClass(err), err)
	}
	if !strings.Contains(err.Error(), "SC-1") {
		t.Fatalf("error %q does not name the sub-cluster", err)
	}
}
