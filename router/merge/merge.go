// Package merge turns the answers of every sub-cluster to one
// ApplicationClientProtocol call into the one answer a client of a single
// RM expects, the rules of Hadoop's RouterYarnClientUtils: application
// lists with the UAM copies of a federated app folded into its home report
// (usage summed by protobuf reflection), metrics summed, queues averaged,
// nodes, labels and attributes unioned. Pure functions: which sub-clusters
// are asked, and what a failure means, is the router's routing.
package merge

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// UAMName is the name Hadoop gives the unmanaged AM a federated app runs in
// each secondary sub-cluster (UnmanagedApplicationManager.APP_NAME).
const UAMName = "UnmanagedAM"

// PartialName marks an app reported only by its UAMs (its home did not
// answer) when partial results are on.
const PartialName = "Partial Report "

// IsUAMReport reports whether a is the report of an app's unmanaged AM
// copy in a secondary sub-cluster.
func IsUAMReport(a *yarnpb.ApplicationReportProto) bool {
	return a.GetUnmanagedApplication() && strings.HasPrefix(a.GetName(), UAMName)
}

// Applications merges per-sub-cluster application lists: one report per
// application id; the UAM copies of a federated app (same id, other
// sub-clusters) are folded into the home report (usage summed, tags
// joined). An app seen only through UAMs is dropped unless partial results
// are on, then it is shown as "Partial Report <id>". Order: first seen.
func Applications(lists [][]*yarnpb.ApplicationReportProto, partial bool) []*yarnpb.ApplicationReportProto {
	groups := GroupApps(lists, func(a *yarnpb.ApplicationReportProto) string { return yarnid.AppIDString(a.GetApplicationId()) }, IsUAMReport)
	out := make([]*yarnpb.ApplicationReportProto, 0, len(groups))
	for _, g := range groups {
		home, uams := g.Home, g.UAMs
		if !g.HasHome {
			if !partial {
				continue
			}
			home = proto.Clone(uams[0]).(*yarnpb.ApplicationReportProto)
			home.Name = proto.String(PartialName + g.ID)
			uams = uams[1:]
		} else if len(uams) > 0 {
			home = proto.Clone(home).(*yarnpb.ApplicationReportProto)
		}
		for _, u := range uams {
			FoldUAM(home, u)
		}
		out = append(out, home)
	}
	return out
}

// AppGroup is one application's reports across the sub-clusters: its
// home's (HasHome false when the home did not report it) and its UAM
// copies'.
type AppGroup[A any] struct {
	ID      string
	Home    A
	HasHome bool
	UAMs    []A
}

// GroupApps groups the sub-clusters' reports by application id (id), in
// first-seen order: the reports isUAM picks are UAM copies, the first other
// one is the home. A second managed report of one id would be a duplicate
// submission; it is dropped rather than summed with the first.
func GroupApps[A any](lists [][]A, id func(A) string, isUAM func(A) bool) []*AppGroup[A] {
	groups := map[string]*AppGroup[A]{}
	var out []*AppGroup[A]
	for _, l := range lists {
		for _, a := range l {
			k := id(a)
			g, ok := groups[k]
			if !ok {
				g = &AppGroup[A]{ID: k}
				groups[k] = g
				out = append(out, g)
			}
			switch {
			case isUAM(a):
				g.UAMs = append(g.UAMs, a)
			case !g.HasHome:
				g.Home, g.HasHome = a, true
			}
		}
	}
	return out
}

// FoldUAM adds a UAM copy's usage (every numeric field, by reflection)
// and tags into its home report.
func FoldUAM(home, uam *yarnpb.ApplicationReportProto) {
	if uam.GetAppResource_Usage() != nil {
		if home.AppResource_Usage == nil {
			home.AppResource_Usage = &yarnpb.ApplicationResourceUsageReportProto{}
		}
		sumNumeric(home.AppResource_Usage.ProtoReflect(), uam.GetAppResource_Usage().ProtoReflect())
	}
	seen := map[string]bool{}
	for _, t := range home.GetApplicationTags() {
		seen[t] = true
	}
	for _, t := range uam.GetApplicationTags() {
		if !seen[t] {
			seen[t] = true
			home.ApplicationTags = append(home.ApplicationTags, t)
		}
	}
}

// sumNumeric adds every numeric field of src into dst, recursing into
// singular messages and summing repeated key/value resource entries by key
// (ResourceProto.resource_value_map, StringLongMapProto lists). It is the
// "metrics summed" rule for any YARN counter message.
func sumNumeric(dst, src protoreflect.Message) {
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			sumKeyed(dst, fd, v.List())
		case fd.IsList() || fd.IsMap():
		case fd.Message() != nil:
			sumNumeric(dst.Mutable(fd).Message(), v.Message())
		default:
			cur := dst.Get(fd)
			switch fd.Kind() {
			case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
				protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
				dst.Set(fd, intValue(fd, cur.Int()+v.Int()))
			case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
				dst.Set(fd, uintValue(fd, cur.Uint()+v.Uint()))
			case protoreflect.FloatKind:
				dst.Set(fd, protoreflect.ValueOfFloat32(float32(cur.Float()+v.Float())))
			case protoreflect.DoubleKind:
				dst.Set(fd, protoreflect.ValueOfFloat64(cur.Float()+v.Float()))
			}
		}
		return true
	})
}

func intValue(fd protoreflect.FieldDescriptor, n int64) protoreflect.Value {
	if fd.Kind() == protoreflect.Int32Kind || fd.Kind() == protoreflect.Sint32Kind || fd.Kind() == protoreflect.Sfixed32Kind {
		return protoreflect.ValueOfInt32(int32(n))
	}
	return protoreflect.ValueOfInt64(n)
}

func uintValue(fd protoreflect.FieldDescriptor, n uint64) protoreflect.Value {
	if fd.Kind() == protoreflect.Uint32Kind || fd.Kind() == protoreflect.Fixed32Kind {
		return protoreflect.ValueOfUint32(uint32(n))
	}
	return protoreflect.ValueOfUint64(n)
}

// sumKeyed merges repeated messages that have a string "key" field, summing
// the rest by key; other repeated messages are left alone.
func sumKeyed(dst protoreflect.Message, fd protoreflect.FieldDescriptor, src protoreflect.List) {
	keyFd := fd.Message().Fields().ByName("key")
	if keyFd == nil || keyFd.Kind() != protoreflect.StringKind {
		return
	}
	dl := dst.Mutable(fd).List()
	idx := map[string]protoreflect.Message{}
	for i := 0; i < dl.Len(); i++ {
		m := dl.Get(i).Message()
		idx[m.Get(keyFd).String()] = m
	}
	for i := 0; i < src.Len(); i++ {
		sm := src.Get(i).Message()
		k := sm.Get(keyFd).String()
		if dm, ok := idx[k]; ok {
			sumNumeric(dm, sm)
			dm.Set(keyFd, protoreflect.ValueOfString(k)) // sumNumeric skips strings; keep key
			continue
		}
		nm := proto.Clone(sm.Interface()).ProtoReflect()
		dl.Append(protoreflect.ValueOfMessage(nm))
		idx[k] = nm
	}
}

// ClusterMetrics merges the sub-clusters' GetClusterMetrics answers.
func ClusterMetrics(res []*yarnpb.GetClusterMetricsResponseProto) *yarnpb.GetClusterMetricsResponseProto {
	out := &yarnpb.YarnClusterMetricsProto{NumNodeManagers: proto.Int32(0)}
	for _, x := range res {
		if m := x.GetClusterMetrics(); m != nil {
			sumNumeric(out.ProtoReflect(), m.ProtoReflect())
		}
	}
	return &yarnpb.GetClusterMetricsResponseProto{ClusterMetrics: out}
}

// ClusterNodes merges the sub-clusters' GetClusterNodes answers.
func ClusterNodes(res []*yarnpb.GetClusterNodesResponseProto) *yarnpb.GetClusterNodesResponseProto {
	out := &yarnpb.GetClusterNodesResponseProto{}
	for _, x := range res {
		out.NodeReports = append(out.NodeReports, x.GetNodeReports()...)
	}
	return out
}

// QueueInfo merges one queue seen in every sub-cluster: capacities are
// averaged (each RM reports fractions of its own cluster, so the mean is the
// federation-wide fraction for equal-sized sub-clusters), statistics summed,
// applications and labels joined, children merged by name.
func QueueInfo(res []*yarnpb.GetQueueInfoResponseProto) *yarnpb.GetQueueInfoResponseProto {
	var qs []*yarnpb.QueueInfoProto
	for _, x := range res {
		if q := x.GetQueueInfo(); q != nil {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return &yarnpb.GetQueueInfoResponseProto{}
	}
	return &yarnpb.GetQueueInfoResponseProto{QueueInfo: queues(qs)}
}

func queues(qs []*yarnpb.QueueInfoProto) *yarnpb.QueueInfoProto {
	out := proto.Clone(qs[0]).(*yarnpb.QueueInfoProto)
	out.SubClusterId = nil
	if len(qs) == 1 {
		return out
	}
	n := float32(len(qs))
	var capSum, maxSum, curSum float32
	labels := map[string]bool{}
	for _, l := range out.AccessibleNodeLabels {
		labels[l] = true
	}
	children := map[string][]*yarnpb.QueueInfoProto{}
	var childOrder []string
	addChildren := func(q *yarnpb.QueueInfoProto) {
		for _, c := range q.GetChildQueues() {
			if _, ok := children[c.GetQueueName()]; !ok {
				childOrder = append(childOrder, c.GetQueueName())
			}
			children[c.GetQueueName()] = append(children[c.GetQueueName()], c)
		}
	}
	addChildren(qs[0])
	for i, q := range qs {
		capSum += q.GetCapacity()
		maxSum += q.GetMaximumCapacity()
		curSum += q.GetCurrentCapacity()
		if i == 0 {
			continue
		}
		if q.GetState() == yarnpb.QueueStateProto_Q_RUNNING {
			out.State = q.State
		}
		out.Applications = append(out.Applications, q.GetApplications()...)
		for _, l := range q.GetAccessibleNodeLabels() {
			if !labels[l] {
				labels[l] = true
				out.AccessibleNodeLabels = append(out.AccessibleNodeLabels, l)
			}
		}
		if q.GetQueueStatistics() != nil {
			if out.QueueStatistics == nil {
				out.QueueStatistics = &yarnpb.QueueStatisticsProto{}
			}
			sumNumeric(out.QueueStatistics.ProtoReflect(), q.GetQueueStatistics().ProtoReflect())
		}
		addChildren(q)
	}
	out.Capacity, out.MaximumCapacity, out.CurrentCapacity = proto.Float32(capSum/n), proto.Float32(maxSum/n), proto.Float32(curSum/n)
	out.ChildQueues = nil
	for _, name := range childOrder {
		out.ChildQueues = append(out.ChildQueues, queues(children[name]))
	}
	return out
}

// QueueUserAcls merges the sub-clusters' GetQueueUserAclsInfo answers.
func QueueUserAcls(res []*yarnpb.GetQueueUserAclsInfoResponseProto) *yarnpb.GetQueueUserAclsInfoResponseProto {
	acls := mergeBy(res, (*yarnpb.GetQueueUserAclsInfoResponseProto).GetQueueUserAcls,
		(*yarnpb.QueueUserACLInfoProto).GetQueueName,
		func(a *yarnpb.QueueUserACLInfoProto) *yarnpb.QueueUserACLInfoProto {
			return &yarnpb.QueueUserACLInfoProto{QueueName: a.QueueName}
		},
		func(cur, a *yarnpb.QueueUserACLInfoProto) {
			for _, acl := range a.GetUserAcls() {
				if !containsACL(cur.UserAcls, acl) {
					cur.UserAcls = append(cur.UserAcls, acl)
				}
			}
		})
	return &yarnpb.GetQueueUserAclsInfoResponseProto{QueueUserAcls: acls}
}

func containsACL(l []yarnpb.QueueACLProto, a yarnpb.QueueACLProto) bool {
	for _, x := range l {
		if x == a {
			return true
		}
	}
	return false
}

// Reservations merges the sub-clusters' ReservationList answers.
func Reservations(res []*yarnpb.ReservationListResponseProto) *yarnpb.ReservationListResponseProto {
	out := &yarnpb.ReservationListResponseProto{}
	for _, x := range res {
		out.Reservations = append(out.Reservations, x.GetReservations()...)
	}
	return out
}

// NodeKey is a node's host:port, the key nodes are unioned by.
func NodeKey(n *yarnpb.NodeIdProto) string { return fmt.Sprintf("%s:%d", n.GetHost(), n.GetPort()) }

// NodesToLabels merges the sub-clusters' GetNodesToLabels answers.
func NodesToLabels(res []*yarnpb.GetNodesToLabelsResponseProto) *yarnpb.GetNodesToLabelsResponseProto {
	nodes := mergeBy(res, (*yarnpb.GetNodesToLabelsResponseProto).GetNodeToLabels,
		func(e *yarnpb.NodeIdToLabelsProto) string { return NodeKey(e.GetNodeId()) },
		func(e *yarnpb.NodeIdToLabelsProto) *yarnpb.NodeIdToLabelsProto {
			return &yarnpb.NodeIdToLabelsProto{NodeId: e.NodeId}
		},
		func(cur, e *yarnpb.NodeIdToLabelsProto) {
			cur.NodeLabels = unionStrings(cur.NodeLabels, e.GetNodeLabels())
		})
	return &yarnpb.GetNodesToLabelsResponseProto{NodeToLabels: nodes}
}

// LabelsToNodes merges the sub-clusters' GetLabelsToNodes answers.
func LabelsToNodes(res []*yarnpb.GetLabelsToNodesResponseProto) *yarnpb.GetLabelsToNodesResponseProto {
	seen := map[string]bool{}
	labels := mergeBy(res, (*yarnpb.GetLabelsToNodesResponseProto).GetLabelsToNodes,
		(*yarnpb.LabelsToNodeIdsProto).GetNodeLabels,
		func(e *yarnpb.LabelsToNodeIdsProto) *yarnpb.LabelsToNodeIdsProto {
			return &yarnpb.LabelsToNodeIdsProto{NodeLabels: e.NodeLabels}
		},
		func(cur, e *yarnpb.LabelsToNodeIdsProto) {
			for _, n := range e.GetNodeId() {
				k := e.GetNodeLabels() + "\x00" + NodeKey(n)
				if !seen[k] {
					seen[k] = true
					cur.NodeId = append(cur.NodeId, n)
				}
			}
		})
	return &yarnpb.GetLabelsToNodesResponseProto{LabelsToNodes: labels}
}

// ClusterNodeLabels merges the sub-clusters' GetClusterNodeLabels answers.
func ClusterNodeLabels(res []*yarnpb.GetClusterNodeLabelsResponseProto) *yarnpb.GetClusterNodeLabelsResponseProto {
	out := &yarnpb.GetClusterNodeLabelsResponseProto{
		NodeLabels: firstBy(res, (*yarnpb.GetClusterNodeLabelsResponseProto).GetNodeLabels, (*yarnpb.NodeLabelProto).GetName),
	}
	for _, x := range res {
		out.DeprecatedNodeLabels = unionStrings(out.DeprecatedNodeLabels, x.GetDeprecatedNodeLabels())
	}
	return out
}

// ResourceProfiles merges the sub-clusters' GetAllResourceProfiles answers.
func ResourceProfiles(res []*yarnpb.GetAllResourceProfilesResponseProto) *yarnpb.GetAllResourceProfilesResponseProto {
	profiles := firstBy(res, func(x *yarnpb.GetAllResourceProfilesResponseProto) []*yarnpb.ResourceProfileEntry {
		return x.GetResourceProfiles().GetResourceProfilesMap()
	}, (*yarnpb.ResourceProfileEntry).GetName)
	return &yarnpb.GetAllResourceProfilesResponseProto{ResourceProfiles: &yarnpb.ResourceProfilesProto{ResourceProfilesMap: profiles}}
}

// ResourceProfile answers from the first sub-cluster that has the
// profile (profiles are configured alike across a federation).
func ResourceProfile(res []*yarnpb.GetResourceProfileResponseProto) *yarnpb.GetResourceProfileResponseProto {
	for _, x := range res {
		if x.GetResources() != nil {
			return x
		}
	}
	return &yarnpb.GetResourceProfileResponseProto{Resources: &yarnpb.ResourceProto{}}
}

// ResourceTypeInfo merges the sub-clusters' GetAllResourceTypeInfo answers.
func ResourceTypeInfo(res []*yarnpb.GetAllResourceTypeInfoResponseProto) *yarnpb.GetAllResourceTypeInfoResponseProto {
	return &yarnpb.GetAllResourceTypeInfoResponseProto{
		ResourceTypeInfo: firstBy(res, (*yarnpb.GetAllResourceTypeInfoResponseProto).GetResourceTypeInfo, (*yarnpb.ResourceTypeInfoProto).GetName),
	}
}

func attrKey(k *yarnpb.NodeAttributeKeyProto) string {
	return k.GetAttributePrefix() + "/" + k.GetAttributeName()
}

// ClusterNodeAttributes merges the sub-clusters' GetClusterNodeAttributes answers.
func ClusterNodeAttributes(res []*yarnpb.GetClusterNodeAttributesResponseProto) *yarnpb.GetClusterNodeAttributesResponseProto {
	return &yarnpb.GetClusterNodeAttributesResponseProto{
		NodeAttributes: firstBy(res, (*yarnpb.GetClusterNodeAttributesResponseProto).GetNodeAttributes,
			func(a *yarnpb.NodeAttributeInfoProto) string { return attrKey(a.GetAttributeKey()) }),
	}
}

// AttributesToNodes merges the sub-clusters' GetAttributesToNodes answers.
func AttributesToNodes(res []*yarnpb.GetAttributesToNodesResponseProto) *yarnpb.GetAttributesToNodesResponseProto {
	attrs := mergeBy(res, (*yarnpb.GetAttributesToNodesResponseProto).GetAttributesToNodes,
		func(a *yarnpb.AttributeToNodesProto) string { return attrKey(a.GetNodeAttribute()) },
		func(a *yarnpb.AttributeToNodesProto) *yarnpb.AttributeToNodesProto {
			return &yarnpb.AttributeToNodesProto{NodeAttribute: a.NodeAttribute}
		},
		func(cur, a *yarnpb.AttributeToNodesProto) {
			cur.NodeValueMap = append(cur.NodeValueMap, a.GetNodeValueMap()...)
		})
	return &yarnpb.GetAttributesToNodesResponseProto{AttributesToNodes: attrs}
}

// NodesToAttributes merges the sub-clusters' GetNodesToAttributes answers.
func NodesToAttributes(res []*yarnpb.GetNodesToAttributesResponseProto) *yarnpb.GetNodesToAttributesResponseProto {
	nodes := mergeBy(res, (*yarnpb.GetNodesToAttributesResponseProto).GetNodesToAttributes,
		(*yarnpb.NodeToAttributesProto).GetNode,
		func(n *yarnpb.NodeToAttributesProto) *yarnpb.NodeToAttributesProto {
			return &yarnpb.NodeToAttributesProto{Node: n.Node}
		},
		func(cur, n *yarnpb.NodeToAttributesProto) {
			cur.NodeAttributes = append(cur.NodeAttributes, n.GetNodeAttributes()...)
		})
	return &yarnpb.GetNodesToAttributesResponseProto{NodesToAttributes: nodes}
}

// mergeBy folds the entries of every answer (entries lists one answer's)
// that share a key into one: the first entry with a key starts the merged
// entry (start), then every entry with that key, the first included, is
// added to it (add). Merged entries come in the order their keys were
// first seen.
func mergeBy[R, E, M any](res []R, entries func(R) []E, key func(E) string, start func(E) M, add func(M, E)) []M {
	idx := map[string]M{}
	var out []M
	for _, x := range res {
		for _, e := range entries(x) {
			cur, ok := idx[key(e)]
			if !ok {
				cur = start(e)
				idx[key(e)] = cur
				out = append(out, cur)
			}
			add(cur, e)
		}
	}
	return out
}

// firstBy unions the entries of every answer by key: the first entry with
// a key stands for all (the sub-clusters describe the same thing alike).
func firstBy[R, E any](res []R, entries func(R) []E, key func(E) string) []E {
	seen := map[string]bool{}
	var out []E
	for _, x := range res {
		for _, e := range entries(x) {
			if !seen[key(e)] {
				seen[key(e)] = true
				out = append(out, e)
			}
		}
	}
	return out
}

func unionStrings(dst, src []string) []string {
	seen := make(map[string]bool, len(dst))
	for _, s := range dst {
		seen[s] = true
	}
	for _, s := range src {
		if !seen[s] {
			seen[s] = true
			dst = append(dst, s)
		}
	}
	return dst
}

// MayHaveUAMs says whether an application in this state can have UAMs
// worth a registry read: its AM registered (RUNNING), a later attempt is
// starting (ACCEPTED after attempt 1), or it is final (its UAMs may
// linger, which is what an operator looks for). A fresh submission
// (ACCEPTED, first attempt) has none, so the submit-then-report path
// costs nothing more.
func MayHaveUAMs(rep *yarnpb.ApplicationReportProto) bool {
	switch rep.GetYarnApplicationState() {
	case yarnpb.YarnApplicationStateProto_RUNNING, yarnpb.YarnApplicationStateProto_FINISHED,
		yarnpb.YarnApplicationStateProto_FAILED, yarnpb.YarnApplicationStateProto_KILLED:
		return true
	case yarnpb.YarnApplicationStateProto_ACCEPTED:
		return rep.GetCurrentApplicationAttemptId().GetAttemptId() > 1
	}
	return false
}
