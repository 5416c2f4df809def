package appacl

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// Application ACLs kept in the state store (issue 21): the trimmed
// submission context stored with an application's home keeps, of the AM
// container spec, only its application ACLs, plus the submitter's short
// name in the environment entry ownerEnv. A router that did not see the
// submission (another replica, a restart, an LRU eviction) reads them
// from the row on its first check of that application and caches them,
// so every router decides the same way. Rows written before this (no
// owner entry) stay unknown: such apps are left to their RM, as before.
// Lists (getApplications, GET /apps) filter with what is cached only:
// one store read per listed application would make a list cost
// thousands of reads.

// ownerEnv names the submitter in the stored ACL-only spec. It is never
// sent to an RM (the stored context is only compared and read here).
const ownerEnv = "YARNFED_APP_OWNER"

// SubmissionStore is optionally implemented by a StateStore that returns
// the trimmed submission context stored with a home; the router then
// reads application ACLs it has not cached from it.
type SubmissionStore interface {
	// GetApplicationSubmission returns the stored context (nil: none);
	// an error when the application has no home.
	GetApplicationSubmission(ctx context.Context, app string) ([]byte, error)
}

// Spec is the part of spec the store keeps: its application ACLs and the
// owner (nil with neither).
func Spec(spec *yarnpb.ContainerLaunchContextProto, owner string) *yarnpb.ContainerLaunchContextProto {
	owner = hadoopipc.ShortName(owner)
	acls := spec.GetApplication_ACLs()
	if owner == "" && len(acls) == 0 {
		return nil
	}
	out := &yarnpb.ContainerLaunchContextProto{}
	for _, e := range acls {
		out.Application_ACLs = append(out.Application_ACLs, proto.Clone(e).(*yarnpb.ApplicationACLMapProto))
	}
	if owner != "" {
		out.Environment = []*yarnpb.StringStringMapProto{{Key: proto.String(ownerEnv), Value: proto.String(owner)}}
	}
	return out
}

// accessFromSubmission reads the owner and lists back from a stored
// context; false when it has no owner (an older row, or none).
func accessFromSubmission(b []byte) (appAccess, bool) {
	if len(b) == 0 {
		return appAccess{}, false
	}
	asc := &yarnpb.ApplicationSubmissionContextProto{}
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(b, asc); err != nil {
		return appAccess{}, false
	}
	acc := appAccess{}
	for _, e := range asc.GetAmContainerSpec().GetEnvironment() {
		if e.GetKey() == ownerEnv {
			acc.owner = e.GetValue()
		}
	}
	if acc.owner == "" {
		return appAccess{}, false
	}
	acc.view, acc.modify = listsOf(asc.GetAmContainerSpec())
	return acc, true
}

// listsOf parses a spec's VIEW_APP and MODIFY_APP lists (absent: no one).
func listsOf(spec *yarnpb.ContainerLaunchContextProto) (view, modify ACL) {
	for _, e := range spec.GetApplication_ACLs() {
		l := parseAppACL(e.GetAcl())
		switch e.GetAccessType() {
		case yarnpb.ApplicationAccessTypeProto_APPACCESS_VIEW_APP:
			view = l
		case yarnpb.ApplicationAccessTypeProto_APPACCESS_MODIFY_APP:
			modify = l
		}
	}
	return view, modify
}

// LoadFrom makes a read ACLs it has not cached from s's rows; a failed
// read (store down, no home) is unknown for this call and tried again on
// the next. Call it before the Table is shared.
func (a *Table) LoadFrom(s SubmissionStore) {
	a.load = func(ctx context.Context, app string) (appAccess, bool) {
		b, err := s.GetApplicationSubmission(ctx, app)
		if err != nil {
			return appAccess{}, false
		}
		return accessFromSubmission(b)
	}
}

type cacheOnlyKey struct{}

// CacheOnly marks ctx so ACL checks under it use the cache only (lists).
func CacheOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, cacheOnlyKey{}, true)
}
