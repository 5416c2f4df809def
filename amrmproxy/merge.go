package amrmproxy

import (
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// askKey identifies a resource request the way the scheduler does: a later
// ask with the same key replaces an earlier one (asks are absolute counts).
type askKey struct {
	allocID  int64
	prio     int32
	name     string
	mem      int64
	vcores   int32
	label    string
	execType int32
}

func keyOfAsk(a *yarnpb.ResourceRequestProto) askKey {
	return askKey{a.GetAllocationRequestId(), a.GetPriority().GetPriority(), a.GetResourceName(),
		a.GetCapability().GetMemory(), a.GetCapability().GetVirtualCores(), a.GetNodeLabelExpression(),
		int32(a.GetExecutionTypeRequest().GetExecutionType())}
}

// mergeRequest folds next into pending (a request not yet sent to a slow
// RM): asks by key (the later count wins), releases, updates and blacklist
// changes appended, progress and tracking URL from the later one.
func mergeRequest(pending, next *yarnpb.AllocateRequestProto) *yarnpb.AllocateRequestProto {
	if pending == nil {
		return next
	}
	idx := make(map[askKey]int, len(pending.Ask))
	for i, a := range pending.Ask {
		idx[keyOfAsk(a)] = i
	}
	for _, a := range next.Ask {
		if i, ok := idx[keyOfAsk(a)]; ok {
			pending.Ask[i] = a
			continue
		}
		idx[keyOfAsk(a)] = len(pending.Ask)
		pending.Ask = append(pending.Ask, a)
	}
	pending.Release = append(pending.Release, next.Release...)
	pending.UpdateRequests = append(pending.UpdateRequests, next.UpdateRequests...)
	if bl := next.GetBlacklistRequest(); bl != nil {
		if pending.BlacklistRequest == nil {
			pending.BlacklistRequest = &yarnpb.ResourceBlacklistRequestProto{}
		}
		pbl := pending.BlacklistRequest
		pbl.BlacklistAdditions = append(pbl.BlacklistAdditions, bl.BlacklistAdditions...)
		pbl.BlacklistRemovals = append(pbl.BlacklistRemovals, bl.BlacklistRemovals...)
	}
	if next.Progress != nil {
		pending.Progress = next.Progress
	}
	if next.TrackingUrl != nil {
		pending.TrackingUrl = next.TrackingUrl
	}
	return pending
}

// mergeResponse appends what a sub-cluster's response says into out.
// Headroom, node counts, the AMRMToken, the AM command and the priority are
// handled by the caller (they are not simply concatenated).
func mergeResponse(out, in *yarnpb.AllocateResponseProto) {
	out.CompletedContainerStatuses = append(out.CompletedContainerStatuses, in.CompletedContainerStatuses...)
	out.UpdatedNodes = append(out.UpdatedNodes, in.UpdatedNodes...)
	out.NmTokens = append(out.NmTokens, in.NmTokens...)
	out.UpdateErrors = append(out.UpdateErrors, in.UpdateErrors...)
	out.UpdatedContainers = append(out.UpdatedContainers, in.UpdatedContainers...)
	out.ContainersFromPreviousAttempts = append(out.ContainersFromPreviousAttempts, in.ContainersFromPreviousAttempts...)
	out.RejectedSchedulingRequests = append(out.RejectedSchedulingRequests, in.RejectedSchedulingRequests...)
	if p := in.GetPreempt(); p != nil {
		if out.Preempt == nil {
			out.Preempt = &yarnpb.PreemptionMessageProto{}
		}
		if s := p.GetStrictContract(); s != nil {
			if out.Preempt.StrictContract == nil {
				out.Preempt.StrictContract = &yarnpb.StrictPreemptionContractProto{}
			}
			out.Preempt.StrictContract.Container = append(out.Preempt.StrictContract.Container, s.Container...)
		}
		if c := p.GetContract(); c != nil {
			if out.Preempt.Contract == nil {
				out.Preempt.Contract = &yarnpb.PreemptionContractProto{}
			}
			out.Preempt.Contract.Resource = append(out.Preempt.Contract.Resource, c.Resource...)
			out.Preempt.Contract.Container = append(out.Preempt.Contract.Container, c.Container...)
		}
	}
}

func addResource(a, b *yarnpb.ResourceProto) *yarnpb.ResourceProto {
	if a == nil {
		a = &yarnpb.ResourceProto{Memory: proto.Int64(0), VirtualCores: proto.Int32(0)}
	}
	return &yarnpb.ResourceProto{Memory: proto.Int64(a.GetMemory() + b.GetMemory()), VirtualCores: proto.Int32(a.GetVirtualCores() + b.GetVirtualCores())}
}

func emptyRequest(req *yarnpb.AllocateRequestProto) *yarnpb.AllocateRequestProto {
	return &yarnpb.AllocateRequestProto{Progress: req.Progress}
}
