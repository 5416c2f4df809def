package appacl

import (
	"context"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// Application ACLs (yarn.acl.enable), checked in the router as an RM with
// ACLs on checks them (ClientRMService + ApplicationACLsManager): the
// owner and the admins (yarn.admin.acl, here admin_acl) may do anything;
// others need the application's VIEW_APP or MODIFY_APP list, which the
// submitter set in its AM ContainerLaunchContext (absent: no one).
//
// The router learns an application's owner and lists when the submission
// passes through it, and keeps them in a bounded LRU. For an application
// it has not seen submitted (another router, a restart, an LRU eviction,
// a submission made straight to an RM) it decides nothing and forwards:
// reports do not carry ACLs, and the home RM, reached as the caller
// (doAs), enforces its own ACLs when it runs with them on. router/DESIGN.md,
// "Application ACLs", says why.

// appAccess is what the router knows about one application's ACLs.
type appAccess struct {
	owner  string
	view   ACL
	modify ACL
}

// Table holds the owners and lists of applications submitted through
// this router (and read from the store).
type Table struct {
	admins ACL
	groups hadoopipc.GroupMapping
	known  *lru.Cache[string, appAccess]
	// load reads an application's owner and lists from the state store
	// (store.go; nil: the store cannot), for an application another
	// router or an earlier run of this one placed.
	load func(ctx context.Context, app string) (appAccess, bool)
}

// defaultCacheSize bounds the applications whose ACLs are kept.
const defaultCacheSize = 100_000

// NewTable returns a Table: admins may do anything, groups maps users to
// their groups, size bounds the cache (< 1: defaultCacheSize).
func NewTable(admins ACL, groups hadoopipc.GroupMapping, size int) *Table {
	if size < 1 {
		size = defaultCacheSize
	}
	c, _ := lru.New[string, appAccess](size) // size >= 1: cannot fail
	return &Table{admins: admins, groups: groups, known: c}
}

// Record notes the owner and lists of a submitted application. A
// resubmission does not overwrite them: the RM answers a resubmitted id
// with success whoever sends it, so a second submitter must not become
// the owner.
func (a *Table) Record(app, owner string, asc *yarnpb.ApplicationSubmissionContextProto) {
	if a == nil || app == "" || owner == "" {
		return
	}
	acc := appAccess{owner: hadoopipc.ShortName(owner)}
	acc.view, acc.modify = listsOf(asc.GetAmContainerSpec())
	a.known.ContainsOrAdd(app, acc)
}

// parseAppACL reads an application's list; unlike admin_acl an empty list
// means no one (Hadoop's AccessControlList("")), and a malformed one too.
func parseAppACL(s string) ACL {
	if s == "" {
		return ACL{}
	}
	l, err := ParseACL(s)
	if err != nil {
		return ACL{}
	}
	return l
}

// Kind is Hadoop's ApplicationAccessType.
type Kind int

// The access types.
const (
	View Kind = iota
	Modify
)

func (k Kind) String() string {
	if k == Modify {
		return "MODIFY_APP"
	}
	return "VIEW_APP"
}

// Allowed reports whether user may access app; known is false when the
// router does not know the application's ACLs (not in the cache, and not
// in the store's row, or ctx is a listing's: see CacheOnly).
func (a *Table) Allowed(ctx context.Context, user, app string, kind Kind) (ok, known bool) {
	acc, found := a.known.Get(app)
	if !found && a.load != nil && ctx.Value(cacheOnlyKey{}) == nil {
		if acc, found = a.load(ctx, app); found {
			a.known.ContainsOrAdd(app, acc)
		}
	}
	if !found {
		return true, false
	}
	short := hadoopipc.ShortName(user)
	if short == acc.owner || a.admins.Allows(short, a.groups.Groups) {
		return true, true
	}
	l := acc.view
	if kind == Modify {
		l = acc.modify
	}
	return l.Allows(short, a.groups.Groups), true
}
