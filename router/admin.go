package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
)

// The router's admin port serves ResourceManagerAdministrationProtocol as
// Hadoop 3.4's RouterRMAdminService does: the federation calls of `yarn
// routeradmin` (queue policies, sub-cluster deregistration, app-home
// cleanup) against the state store, and the RM admin calls of `yarn
// rmadmin` fanned out to every active sub-cluster's RM, or sent to the one
// the request's sub_cluster_id names. Everything that changes something
// needs the admin ACL.

const (
	// defaultWeightsManager is the manager a weight save without a class
	// name is stored under (as `yarnfedctl policy save` defaults).
	defaultWeightsManager = "WeightedLocality"
	// subClusterExpiry is Hadoop's yarn.router.subcluster.heartbeat.expiration.time
	// default: deregisterSubCluster without an id marks sub-clusters whose
	// last heartbeat is older than this SC_LOST.
	subClusterExpiry = 30 * time.Minute
	// javaDate is java.util.Date.toString(), which Hadoop uses for
	// heartbeat times in these replies.
	javaDate = "Mon Jan 02 15:04:05 MST 2006"
)

var errNoAdminStore = errors.New("the state store does not support federation admin writes")

func (r *Router) adminProtocol() hadoopipc.Protocol {
	reg := policies.NewDefaultRegistry()
	return hadoopipc.Protocol{
		Name:    hadoopipc.ProtocolRMAdmin,
		Version: 1,
		Methods: []hadoopipc.Method{
			// Federation: the state store.
			adminCall(r, "deregisterSubCluster", newMsg[yarnpb.DeregisterSubClusterRequestProto], r.deregisterSubCluster),
			adminCall(r, "saveFederationQueuePolicy", newMsg[yarnpb.SaveFederationQueuePolicyRequestProto],
				func(ctx context.Context, q *yarnpb.SaveFederationQueuePolicyRequestProto) (*yarnpb.SaveFederationQueuePolicyResponseProto, error) {
					w := q.GetFederationQueueWeight()
					manager := q.GetPolicyManagerClassName()
					if manager == "" {
						manager = w.GetPolicyManagerClassName()
					}
					if err := r.saveQueueWeights(ctx, reg, []queueWeight{{q.GetQueue(), w, manager}}); err != nil {
						return nil, err
					}
					return &yarnpb.SaveFederationQueuePolicyResponseProto{Message: proto.String("save policy success.")}, nil
				}),
			adminCall(r, "batchSaveFederationQueuePolicies", newMsg[yarnpb.BatchSaveFederationQueuePoliciesRequestProto],
				func(ctx context.Context, q *yarnpb.BatchSaveFederationQueuePoliciesRequestProto) (*yarnpb.BatchSaveFederationQueuePoliciesResponseProto, error) {
					ws := make([]queueWeight, len(q.GetFederationQueueWeights()))
					for i, w := range q.GetFederationQueueWeights() {
						ws[i] = queueWeight{w.GetQueue(), w, w.GetPolicyManagerClassName()}
					}
					if err := r.saveQueueWeights(ctx, reg, ws); err != nil {
						return nil, err
					}
					return &yarnpb.BatchSaveFederationQueuePoliciesResponseProto{Message: proto.String("batch save policies success.")}, nil
				}),
			adminCall(r, "listFederationQueuePolicies", newMsg[yarnpb.QueryFederationQueuePoliciesRequestProto], r.listQueuePolicies),
			adminCall(r, "deleteFederationPoliciesByQueues", newMsg[yarnpb.DeleteFederationQueuePoliciesRequestProto], r.deleteQueuePolicies),
			adminCall(r, "deleteFederationApplication", newMsg[yarnpb.DeleteFederationApplicationRequestProto], r.deleteFederationApplication),
			adminCall(r, "getFederationSubClusters", newMsg[yarnpb.GetSubClustersRequestProto], r.getFederationSubClusters),
			// RM admin: every active sub-cluster, or the named one.
			rmAdmin(r, "refreshQueues", false, newMsg[yarnpb.RefreshQueuesRequestProto], newMsg[yarnpb.RefreshQueuesResponseProto], nil),
			rmAdmin(r, "refreshNodes", false, newMsg[yarnpb.RefreshNodesRequestProto], newMsg[yarnpb.RefreshNodesResponseProto], nil),
			rmAdmin(r, "refreshSuperUserGroupsConfiguration", false, newMsg[yarnpb.RefreshSuperUserGroupsConfigurationRequestProto], newMsg[yarnpb.RefreshSuperUserGroupsConfigurationResponseProto], nil),
			rmAdmin(r, "refreshUserToGroupsMappings", false, newMsg[yarnpb.RefreshUserToGroupsMappingsRequestProto], newMsg[yarnpb.RefreshUserToGroupsMappingsResponseProto], nil),
			rmAdmin(r, "refreshAdminAcls", false, newMsg[yarnpb.RefreshAdminAclsRequestProto], newMsg[yarnpb.RefreshAdminAclsResponseProto], nil),
			rmAdmin(r, "refreshServiceAcls", false, newMsg[yarnpb.RefreshServiceAclsRequestProto], newMsg[yarnpb.RefreshServiceAclsResponseProto], nil),
			rmAdmin(r, "refreshNodesResources", false, newMsg[yarnpb.RefreshNodesResourcesRequestProto], newMsg[yarnpb.RefreshNodesResourcesResponseProto], nil),
			rmAdmin(r, "refreshClusterMaxPriority", false, newMsg[yarnpb.RefreshClusterMaxPriorityRequestProto], newMsg[yarnpb.RefreshClusterMaxPriorityResponseProto], nil),
			rmAdmin(r, "addToClusterNodeLabels", false, newMsg[yarnpb.AddToClusterNodeLabelsRequestProto], newMsg[yarnpb.AddToClusterNodeLabelsResponseProto], nil),
			rmAdmin(r, "removeFromClusterNodeLabels", false, newMsg[yarnpb.RemoveFromClusterNodeLabelsRequestProto], newMsg[yarnpb.RemoveFromClusterNodeLabelsResponseProto], nil),
			// Node-level changes name nodes of one sub-cluster.
			rmAdmin(r, "updateNodeResource", true, newMsg[yarnpb.UpdateNodeResourceRequestProto], newMsg[yarnpb.UpdateNodeResourceResponseProto], nil),
			rmAdmin(r, "replaceLabelsOnNodes", true, newMsg[yarnpb.ReplaceLabelsOnNodeRequestProto], newMsg[yarnpb.ReplaceLabelsOnNodeResponseProto], nil),
			rmAdmin(r, "mapAttributesToNodes", true, newMsg[yarnpb.NodesToAttributesMappingRequestProto], newMsg[yarnpb.NodesToAttributesMappingResponseProto], nil),
			rmAdmin(r, "checkForDecommissioningNodes", false, newMsg[yarnpb.CheckForDecommissioningNodesRequestProto], newMsg[yarnpb.CheckForDecommissioningNodesResponseProto],
				func(rs []*yarnpb.CheckForDecommissioningNodesResponseProto) *yarnpb.CheckForDecommissioningNodesResponseProto {
					out := &yarnpb.CheckForDecommissioningNodesResponseProto{}
					for _, x := range rs {
						out.DecommissioningNodes = append(out.DecommissioningNodes, x.GetDecommissioningNodes()...)
					}
					return out
				}),
			rmAdmin(r, "getGroupsForUser", false, newMsg[yarnpb.GetGroupsForUserRequestProto], newMsg[yarnpb.GetGroupsForUserResponseProto],
				func(rs []*yarnpb.GetGroupsForUserResponseProto) *yarnpb.GetGroupsForUserResponseProto {
					out := &yarnpb.GetGroupsForUserResponseProto{}
					for _, x := range rs {
						for _, g := range x.GetGroups() {
							if !slices.Contains(out.Groups, g) {
								out.Groups = append(out.Groups, g)
							}
						}
					}
					return out
				}),
		},
	}
}

// readOnlyAdmin lists the admin calls anyone may make (they change
// nothing); every other call needs the admin ACL, as on an RM.
var readOnlyAdmin = map[string]bool{
	"listFederationQueuePolicies": true, "getFederationSubClusters": true, "getGroupsForUser": true,
}

// adminCall wraps an admin handler: the ACL check before it runs and an
// audit line for every call that changes something.
func adminCall[Req, Resp proto.Message](r *Router, name string, newReq func() Req, h func(context.Context, Req) (Resp, error)) hadoopipc.Method {
	return handle(r, name, newReq, func(ctx context.Context, req Req) (Resp, error) {
		var zero Resp
		if err := r.checkAdmin(ctx, name); err != nil {
			return zero, err
		}
		resp, err := h(ctx, req)
		if !readOnlyAdmin[name] {
			u, _ := hadoopipc.UserFromContext(ctx)
			attrs := []any{"user", u.Name, "operation", name, "target", "RouterRMAdminService", "result", "SUCCESS"}
			if err != nil {
				attrs[len(attrs)-1] = "FAILURE"
				attrs = append(attrs, "err", err.Error())
			}
			r.log.Info("audit", attrs...)
		}
		return resp, err
	})
}

// checkAdmin refuses a caller outside the admin ACL.
func (r *Router) checkAdmin(ctx context.Context, method string) error {
	if readOnlyAdmin[method] {
		return nil
	}
	u, _ := hadoopipc.UserFromContext(ctx)
	if r.adminACL.Allows(u.Name, r.groupsOf) {
		return nil
	}
	r.log.Warn("admin call refused", "user", u.Name, "operation", method)
	return hadoopipc.Errorf(hadoopipc.ClassAccessControl, "User %s doesn't have permission to call '%s'", u.Name, method)
}

func (r *Router) adminStore() (AdminStore, error) {
	as, ok := r.store.(AdminStore)
	if !ok {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "%v", errNoAdminStore)
	}
	return as, nil
}

// queueWeight is one queue's weights as routeradmin sends them.
type queueWeight struct {
	queue   string
	w       *yarnpb.FederationQueueWeightProto
	manager string
}

// saveQueueWeights validates every queue's weights (a bad one refuses the
// lot, nothing written), then stores them in order. The stored bytes are
// exactly those `yarnfedctl policy save` stores for the same weights: both
// go through policies.ParsePolicySaveString and Registry.QueuePolicyConfig.
func (r *Router) saveQueueWeights(ctx context.Context, reg *policies.Registry, ws []queueWeight) error {
	as, err := r.adminStore()
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		return hadoopipc.Errorf(hadoopipc.ClassYarnException, "Missing FederationQueueWeights information.")
	}
	cfgs := make([]policies.PolicyConfig, len(ws))
	for i, x := range ws {
		switch {
		case strings.TrimSpace(x.queue) == "":
			return hadoopipc.Errorf(hadoopipc.ClassYarnException, "Missing Queue information.")
		case x.w == nil:
			return hadoopipc.Errorf(hadoopipc.ClassYarnException, "queue %s: Missing FederationQueueWeight information.", x.queue)
		case strings.Contains(x.queue, ";"):
			return hadoopipc.Errorf(hadoopipc.ClassYarnException, "queue %q: a queue name cannot contain ';'", x.queue)
		}
		q, err := policies.ParsePolicySaveString(strings.Join([]string{x.queue, x.w.GetRouterWeight(), x.w.GetAmrmWeight(), x.w.GetHeadRoomAlpha()}, ";"))
		if err != nil {
			return hadoopipc.Errorf(hadoopipc.ClassYarnException, "queue %s: %v", x.queue, err)
		}
		manager := x.manager
		if manager == "" {
			manager = defaultWeightsManager
		}
		if class, err := reg.ManagerClass(manager); err == nil && !reg.SupportsWeights(class) {
			// Stock routeradmin sends its yarn.federation.policy-manager,
			// by default UniformBroadcast, which would ignore the weights.
			return hadoopipc.Errorf(hadoopipc.ClassYarnException,
				"queue %s: policy manager %s does not use queue weights; set yarn.federation.policy-manager in the routeradmin "+
					"client's configuration to a weighted manager (WeightedLocalityPolicyManager, PriorityBroadcastPolicyManager, "+
					"WeightedHomePolicyManager)", x.queue, class)
		}
		if cfgs[i], err = reg.QueuePolicyConfig(q, manager, policies.Env{}); err != nil {
			return hadoopipc.Errorf(hadoopipc.ClassYarnException, "queue %s: %v", x.queue, err)
		}
	}
	for i, cfg := range cfgs {
		if err := as.SavePolicy(ctx, PolicyConfiguration{Queue: cfg.Queue, Type: cfg.Type, Params: cfg.Params}); err != nil {
			saved := make([]string, i)
			for j := range saved {
				saved[j] = cfgs[j].Queue
			}
			return fmt.Errorf("queue %s: save policy: %w (saved before the failure: [%s])", cfg.Queue, err, strings.Join(saved, ","))
		}
	}
	return nil
}

// listQueuePolicies pages through the stored policies as Hadoop's router
// does (pageSize and currentPage must be positive; a queue filter returns
// at most that queue; queues filter a list), sorted by queue so pages are
// stable.
func (r *Router) listQueuePolicies(ctx context.Context, q *yarnpb.QueryFederationQueuePoliciesRequestProto) (*yarnpb.QueryFederationQueuePoliciesResponseProto, error) {
	if q.GetPageSize() <= 0 {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "PageSize cannot be negative or zero.")
	}
	if q.GetCurrentPage() <= 0 {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "CurrentPage cannot be negative or zero.")
	}
	all, err := r.sortedPolicies(ctx)
	if err != nil {
		return nil, err
	}
	want := func(queue string) bool { return true }
	switch {
	case strings.TrimSpace(q.GetQueue()) != "":
		want = func(queue string) bool { return queue == q.GetQueue() }
	case len(q.GetQueues()) > 0:
		want = func(queue string) bool { return slices.Contains(q.GetQueues(), queue) }
	}
	var rows []*yarnpb.FederationQueueWeightProto
	for _, p := range all {
		if want(p.Queue) {
			rows = append(rows, queueWeightProto(p))
		}
	}
	if len(rows) == 0 {
		return &yarnpb.QueryFederationQueuePoliciesResponseProto{}, nil
	}
	size, page := int(q.GetPageSize()), int(q.GetCurrentPage())
	start := (page - 1) * size
	if start > len(rows) {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "The index of the records to be retrieved has exceeded the maximum index.")
	}
	end := min(start+size, len(rows))
	return &yarnpb.QueryFederationQueuePoliciesResponseProto{
		TotalSize: proto.Int32(int32(len(rows))), TotalPage: proto.Int32(int32((len(rows) + size - 1) / size)),
		CurrentPage: proto.Int32(int32(page)), PageSize: proto.Int32(int32(size)),
		FederationQueueWeights: rows[start:end],
	}, nil
}

// queueWeightProto renders a stored policy as routeradmin lists it; a
// policy without weights (RejectAll, Uniform...) shows its manager only.
func queueWeightProto(p PolicyConfiguration) *yarnpb.FederationQueueWeightProto {
	out := &yarnpb.FederationQueueWeightProto{Queue: proto.String(p.Queue), PolicyManagerClassName: proto.String(p.Type)}
	if w, err := policies.QueueWeightOf(policies.PolicyConfig{Queue: p.Queue, Type: p.Type, Params: p.Params}); err == nil {
		out.RouterWeight, out.AmrmWeight, out.HeadRoomAlpha = proto.String(w.RouterWeight), proto.String(w.AmrmWeight), proto.String(w.HeadRoomAlpha)
	}
	return out
}

func (r *Router) deleteQueuePolicies(ctx context.Context, q *yarnpb.DeleteFederationQueuePoliciesRequestProto) (*yarnpb.DeleteFederationQueuePoliciesResponseProto, error) {
	if len(q.GetQueues()) == 0 {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "queues cannot be null.")
	}
	as, err := r.adminStore()
	if err != nil {
		return nil, err
	}
	if err := as.DeletePolicies(ctx, q.GetQueues()); err != nil {
		return nil, err
	}
	return &yarnpb.DeleteFederationQueuePoliciesResponseProto{
		Message: proto.String("queues = " + strings.Join(q.GetQueues(), ",") + " delete success."),
	}, nil
}

func (r *Router) deleteFederationApplication(ctx context.Context, q *yarnpb.DeleteFederationApplicationRequestProto) (*yarnpb.DeleteFederationApplicationResponseProto, error) {
	if strings.TrimSpace(q.GetApplication()) == "" {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "ApplicationId cannot be null.")
	}
	id, err := yarnid.ParseAppIDProto(q.GetApplication())
	if err != nil {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "%v", err)
	}
	as, err := r.adminStore()
	if err != nil {
		return nil, err
	}
	app := yarnid.AppIDString(id)
	auditOf(ctx).App = app
	if err := as.RemoveApplicationHome(ctx, app); err != nil {
		return nil, err
	}
	r.homes.drop(app)
	return &yarnpb.DeleteFederationApplicationResponseProto{Message: proto.String("applicationId = " + app + " delete success.")}, nil
}

func (r *Router) getFederationSubClusters(ctx context.Context, _ *yarnpb.GetSubClustersRequestProto) (*yarnpb.GetSubClustersResponseProto, error) {
	scs, err := r.store.GetSubClusters(ctx, false)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(scs, func(a, b SubClusterInfo) int { return strings.Compare(string(a.ID), string(b.ID)) })
	out := &yarnpb.GetSubClustersResponseProto{}
	for _, sc := range scs {
		out.SubClusters = append(out.SubClusters, &yarnpb.FederationSubClusterProto{
			SubClusterId: proto.String(string(sc.ID)), SubClusterState: proto.String(sc.State.String()),
			LastHeartBeatTime: proto.String(sc.LastHeartbeat.Format(javaDate)),
		})
	}
	return out, nil
}

// deregisterSubCluster marks the named sub-cluster SC_LOST if it is usable
// (NEW or RUNNING); without a name, every usable sub-cluster whose last
// heartbeat is older than subClusterExpiry. Each result says what happened,
// as Hadoop's reply does. (Hadoop 3.4 compares the heartbeat age the wrong
// way round and so marks live sub-clusters lost; here an expired heartbeat
// is what marks one, and a named deregistration always applies, as
// `yarnfedctl subcluster deregister` does.)
func (r *Router) deregisterSubCluster(ctx context.Context, q *yarnpb.DeregisterSubClusterRequestProto) (*yarnpb.DeregisterSubClusterResponseProto, error) {
	as, err := r.adminStore()
	if err != nil {
		return nil, err
	}
	scs, err := r.store.GetSubClusters(ctx, false)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(scs, func(a, b SubClusterInfo) int { return strings.Compare(string(a.ID), string(b.ID)) })
	usable := func(s SubClusterState) bool { return s == StateNew || s == StateRunning }
	result := func(sc SubClusterInfo, outcome, info string) *yarnpb.DeregisterSubClustersProto {
		return &yarnpb.DeregisterSubClustersProto{SubClusterId: proto.String(string(sc.ID)), DeregisterState: proto.String(outcome),
			LastHeartBeatTime: proto.String(sc.LastHeartbeat.Format(javaDate)), Information: proto.String(info),
			SubClusterState: proto.String(sc.State.String())}
	}
	deregister := func(sc SubClusterInfo, why string) *yarnpb.DeregisterSubClustersProto {
		if err := as.SetSubClusterState(ctx, sc.ID, StateLost); err != nil {
			return result(sc, "FAILED", "DeregisterSubClusters Failed: "+err.Error())
		}
		r.log.Warn("sub-cluster deregistered through the admin port", "subcluster", sc.ID, "was", sc.State.String(), "why", why)
		sc.State = StateLost
		return result(sc, "SUCCESS", why)
	}
	out := &yarnpb.DeregisterSubClusterResponseProto{}
	if id := strings.TrimSpace(q.GetSubClusterId()); id != "" {
		i := slices.IndexFunc(scs, func(sc SubClusterInfo) bool { return string(sc.ID) == id })
		switch {
		case i < 0:
			out.DeregisterSubClusters = append(out.DeregisterSubClusters, &yarnpb.DeregisterSubClustersProto{
				SubClusterId: proto.String(id), DeregisterState: proto.String("FAILED"), LastHeartBeatTime: proto.String("UNKNOWN"),
				Information: proto.String("SubCluster " + id + " does not exist."), SubClusterState: proto.String("UNKNOWN")})
		case !usable(scs[i].State):
			out.DeregisterSubClusters = append(out.DeregisterSubClusters, result(scs[i], "FAILED", "The subCluster is Unusable, So it can't be Deregistered"))
		default:
			out.DeregisterSubClusters = append(out.DeregisterSubClusters, deregister(scs[i], "Deregistered by an administrator"))
		}
		return out, nil
	}
	now := time.Now()
	for _, sc := range scs {
		if !usable(sc.State) {
			continue
		}
		if age := now.Sub(sc.LastHeartbeat); age < subClusterExpiry {
			out.DeregisterSubClusters = append(out.DeregisterSubClusters, result(sc, "NONE", "Normal Heartbeat"))
			continue
		}
		out.DeregisterSubClusters = append(out.DeregisterSubClusters,
			deregister(sc, fmt.Sprintf("Heartbeat Time >= %dminutes", int(subClusterExpiry.Minutes()))))
	}
	return out, nil
}

// rmAdmin forwards an RM admin call: to the sub-cluster the request's
// sub_cluster_id names, else (unless needsID) to every active sub-cluster
// concurrently; any failure fails the call, naming the sub-clusters.
// merge combines replies that carry data (nil: an empty reply).
func rmAdmin[Req, Resp proto.Message](r *Router, name string, needsID bool, newReq func() Req, newResp func() Resp, merge func([]Resp) Resp) hadoopipc.Method {
	return adminCall(r, name, newReq, func(ctx context.Context, req Req) (Resp, error) {
		var zero Resp
		targets, err := r.adminTargets(ctx, req, name, needsID)
		if err != nil {
			return zero, err
		}
		resps, failed := fanOut(ctx, r.cfg.fan(), targets, func(ctx context.Context, sc SubClusterInfo) (Resp, error) {
			resp := newResp()
			cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout.D())
			defer cancel()
			if err := r.adminPool.call(cctx, sc, hadoopipc.UserName(ctx), name, req, resp); err != nil {
				return zero, &SubClusterError{SubCluster: sc.ID, Method: name, Err: err}
			}
			return resp, nil
		})
		if len(failed) > 0 {
			return zero, joinSC(failed)
		}
		if merge != nil {
			return merge(resps), nil
		}
		return newResp(), nil
	})
}

// adminTargets picks the sub-clusters of an RM admin call.
func (r *Router) adminTargets(ctx context.Context, req proto.Message, method string, needsID bool) ([]SubClusterInfo, error) {
	if err := r.members.ensure(ctx); err != nil {
		return nil, fmt.Errorf("read membership: %w", err)
	}
	var id string
	if fd := req.ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name("sub_cluster_id")); fd != nil {
		id = strings.TrimSpace(req.ProtoReflect().Get(fd).String())
	}
	if id != "" {
		// As Hadoop's router: a named sub-cluster must be active (RUNNING);
		// a deregistered or lost one is refused, not called.
		sc, ok := r.members.get(SubClusterID(id))
		if !ok || !sc.State.Active() {
			return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "subClusterId = %s is not an active subCluster.", id)
		}
		return []SubClusterInfo{sc}, nil
	}
	if needsID {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "Missing %s SubClusterId.", method)
	}
	var out []SubClusterInfo
	for _, sc := range r.members.all() {
		if sc.State.Active() {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "%s: %v", method, ErrNoActiveSubCluster)
	}
	return out, nil
}

// sortedPolicies is every stored queue policy, sorted by queue: what
// `routeradmin -policy -l` pages through and what the UI shows.
func (r *Router) sortedPolicies(ctx context.Context) ([]PolicyConfiguration, error) {
	as, err := r.adminStore()
	if err != nil {
		return nil, err
	}
	all, err := as.ListPolicies(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b PolicyConfiguration) int { return strings.Compare(a.Queue, b.Queue) })
	return all, nil
}
