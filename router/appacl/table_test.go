package appacl_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/appacl"
)

func groups(t *testing.T) hadoopipc.GroupMapping {
	t.Helper()
	g, err := hadoopipc.ParseStaticGroups("carol=viewers;dave=ops;bob=;admin=", nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func submission(view, modify string) *yarnpb.ApplicationSubmissionContextProto {
	return &yarnpb.ApplicationSubmissionContextProto{AmContainerSpec: &yarnpb.ContainerLaunchContextProto{
		Application_ACLs: []*yarnpb.ApplicationACLMapProto{
			{AccessType: yarnpb.ApplicationAccessTypeProto_APPACCESS_VIEW_APP.Enum(), Acl: proto.String(view)},
			{AccessType: yarnpb.ApplicationAccessTypeProto_APPACCESS_MODIFY_APP.Enum(), Acl: proto.String(modify)},
		}}}
}

// fakeSubmissions is a fake SubmissionStore: stored contexts by app.
type fakeSubmissions map[string][]byte

var errFakeNoHome = errors.New("fake: no home")

func (f fakeSubmissions) GetApplicationSubmission(_ context.Context, app string) ([]byte, error) {
	b, ok := f[app]
	if !ok {
		return nil, errFakeNoHome
	}
	return b, nil
}

type want struct {
	user      string
	kind      appacl.Kind
	ok, known bool
}

func check(t *testing.T, ctx context.Context, tab *appacl.Table, app string, cases []want) {
	t.Helper()
	for _, c := range cases {
		if ok, known := tab.Allowed(ctx, c.user, app, c.kind); ok != c.ok || known != c.known {
			t.Errorf("%s %s %s: allowed=%v known=%v, want %v %v", app, c.user, c.kind, ok, known, c.ok, c.known)
		}
	}
}

// TestTableDecides: owner and admins may do anything, others what the
// app's lists give them (by name or group; an empty list is no one), an
// unknown app is allowed but not known, and a resubmission does not make
// its sender the owner.
func TestTableDecides(t *testing.T) {
	admins, err := appacl.ParseACL("admin")
	if err != nil {
		t.Fatal(err)
	}
	tab := appacl.NewTable(admins, groups(t), 10)
	ctx := context.Background()
	tab.Record("app_1", "alice@EXAMPLE.COM", submission(" viewers", "dave"))
	tab.Record("app_1", "mallory", submission("*", "*")) // resubmission
	check(t, ctx, tab, "app_1", []want{
		{"alice", appacl.Modify, true, true},
		{"admin", appacl.Modify, true, true},
		{"carol", appacl.View, true, true},
		{"carol", appacl.Modify, false, true},
		{"dave", appacl.Modify, true, true},
		{"dave", appacl.View, false, true},
		{"mallory", appacl.View, false, true},
		{"bob", appacl.View, false, true},
	})
	check(t, ctx, tab, "app_2", []want{{"bob", appacl.Modify, true, false}})
}

// TestTableLoadsFromStore: a router that did not see the submission reads
// owner and lists from the stored ACL-only spec (Spec), except under
// CacheOnly (lists); a row without an owner stays unknown.
func TestTableLoadsFromStore(t *testing.T) {
	asc := &yarnpb.ApplicationSubmissionContextProto{AmContainerSpec: appacl.Spec(submission("carol", "").GetAmContainerSpec(), "alice/host@R")}
	stored, err := proto.Marshal(asc)
	if err != nil {
		t.Fatal(err)
	}
	noOwner, err := proto.Marshal(submission("*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if appacl.Spec(&yarnpb.ContainerLaunchContextProto{}, "") != nil {
		t.Error("Spec without ACLs or owner is not nil")
	}
	tab := appacl.NewTable(appacl.ACL{}, groups(t), 10)
	tab.LoadFrom(fakeSubmissions{"app_1": stored, "app_3": noOwner})
	ctx := context.Background()
	check(t, appacl.CacheOnly(ctx), tab, "app_1", []want{{"bob", appacl.View, true, false}})
	check(t, ctx, tab, "app_1", []want{
		{"alice", appacl.Modify, true, true},
		{"carol", appacl.View, true, true},
		{"carol", appacl.Modify, false, true},
		{"bob", appacl.View, false, true},
	})
	// Cached now: a listing sees it too.
	check(t, appacl.CacheOnly(ctx), tab, "app_1", []want{{"bob", appacl.View, false, true}})
	check(t, ctx, tab, "app_3", []want{{"bob", appacl.Modify, true, false}})
	check(t, ctx, tab, "app_9", []want{{"bob", appacl.Modify, true, false}})
}
