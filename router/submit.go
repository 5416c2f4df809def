package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/router/appacl"
)

// submitApplication: per try, the queue's policy picks a home among routable,
// non-blacklisted sub-clusters; the first try inserts the home row only if
// absent (a resubmission after a router crash finds the stored home and
// goes there), later tries update it; then the RM gets the submission.
//
// Never lost, never duplicated:
//   - The row is written before the RM is called, so a crash after the RM
//     accepted leaves a row pointing at the RM that has the app; the client's
//     retry finds it and resubmits there, which the RM acknowledges as
//     already submitted.
//   - The router moves an app to another sub-cluster only when the failed RM
//     certainly does not have it: the RM answered with an error (an RM that
//     has the app acknowledges a resubmission), or nothing was sent (dial
//     failure, open breaker) and no earlier submission can have reached it
//     (this request inserted the home row). Otherwise (timeout, connection lost
//     mid-call, a pre-existing home that is down) it asks that RM for the
//     app first; if the RM cannot be asked, the client gets a retriable
//     error instead of a possible duplicate elsewhere.
func (r *Router) submitApplication(ctx context.Context, req *yarnpb.SubmitApplicationRequestProto) (*yarnpb.SubmitApplicationResponseProto, error) {
	asc := req.GetApplicationSubmissionContext()
	if asc == nil || asc.GetApplicationId() == nil {
		return nil, hadoopipc.Errorf(hadoopipc.ClassApplicationIDNotProvided,
			"submitApplication: missing ApplicationSubmissionContext or ApplicationId")
	}
	app := yarnid.AppIDString(asc.GetApplicationId())
	auditOf(ctx).App = app
	sub := submissionOf(asc)
	trimmed := trimSubmission(asc, hadoopipc.UserName(ctx)) // with the app's ACLs and owner: appacl/store.go
	pol, err := r.policies.forQueue(ctx, asc.GetQueue())
	if err != nil {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "submitApplication %s: %v", app, err)
	}

	bl := r.newBlacklist()
	var lastErr error
	// ownRow: this call inserted the home row, so its caller owns the
	// application (a resubmission's caller may not be the owner).
	ownRow := false
	for try := 0; try < r.cfg.SubmitRetries; try++ {
		if try > 0 {
			r.metrics.retries.WithLabelValues("submitApplication").Inc()
			if err := sleep(ctx, r.cfg.RetryInterval.D()); err != nil {
				return nil, err
			}
		}
		var cands []SubClusterInfo
		var chosen SubClusterID
		var perr error
		// A policy that finds nothing eligible among the routable
		// sub-clusters (weights pin the queue to one that is failing over)
		// waits out the failover window as an empty candidate list does;
		// other policy errors are final.
		werr := r.members.waitFor(ctx, r.window(lastErr), func() bool {
			cands = r.members.candidates(bl)
			if len(cands) == 0 {
				return false
			}
			chosen, perr = pol.SelectHome(ctx, sub, cands)
			return !noneEligible(perr)
		})
		switch {
		case werr != nil && perr != nil && noneEligible(perr) && ctx.Err() == nil:
			return nil, r.unroutable(firstErr(lastErr, fmt.Errorf("submitApplication %s: policy: %w (%w)", app, ErrNoActiveSubCluster, perr)))
		case werr != nil:
			return nil, r.unroutable(firstErr(lastErr, fmt.Errorf("submitApplication %s: %w", app, werr)))
		case perr != nil:
			return nil, fmt.Errorf("submitApplication %s: policy: %w", app, perr)
		}
		if r.crash(stepPolicy) {
			return nil, errCrash
		}

		home := chosen
		mayHave := false // could an earlier submission of this app have reached home?
		if try == 0 {
			// A row that already existed means an earlier router may have
			// submitted there already.
			stored, storedSub, inserted, err := r.store.AddApplicationHome(ctx, app, chosen, trimmed)
			if err != nil {
				return nil, fmt.Errorf("submitApplication %s: store home: %w", app, err)
			}
			home, mayHave, ownRow = stored, !inserted, inserted
			if !inserted && !sameSubmission(storedSub, asc) {
				// The RM would acknowledge this as "an earlier submitted
				// application" and the new one would silently never run.
				return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException,
					"submitApplication %s: the federation already has this application id (home sub-cluster %s) with a different "+
						"submission context; a retry must resend the same submission. If this is another application, two RMs "+
						"are handing out the same ids (do they share a cluster timestamp?)", app, stored)
			}
			if !inserted {
				r.log.Info("resubmission: using the stored home", "app", app, "home", stored, "policy_choice", chosen)
			}
		} else if err := r.store.UpdateApplicationHome(ctx, app, chosen); err != nil {
			return nil, fmt.Errorf("submitApplication %s: update home: %w", app, err)
		}
		r.homes.put(app, home)
		if r.crash(stepHome) {
			return nil, errCrash
		}

		sc, ok := r.members.get(home)
		if !ok {
			// A stored home this router does not know yet: let the next
			// try pick (and record) another one.
			lastErr = fmt.Errorf("submitApplication %s: home %s is not a registered sub-cluster", app, home)
			bl.add(SubClusterInfo{ID: home})
			continue
		}
		resp := &yarnpb.SubmitApplicationResponseProto{}
		err = r.callSC(ctx, sc, "submitApplication", req, resp)
		if err == nil {
			if r.crash(stepSubmit) {
				return nil, errCrash
			}
			auditOf(ctx).SC = home
			if ownRow {
				r.appACLs.Record(app, hadoopipc.UserName(ctx), asc)
			}
			r.log.LogAttrs(ctx, slog.LevelInfo, "application submitted", slog.String("app", app), slog.String("subcluster", string(home)),
				slog.String("queue", asc.GetQueue()), slog.String("policy", policyType(pol)), slog.String("policy_choice", string(chosen)),
				slog.Bool("resubmission", mayHave), slog.Int("try", try))
			if r.cfg.OnSubmitted != nil {
				ids := make([]SubClusterID, len(cands))
				for i, c := range cands {
					ids[i] = c.ID
				}
				r.cfg.OnSubmitted(SubmitEvent{App: app, Queue: asc.GetQueue(), Home: home, Policy: policyType(pol),
					PolicyChoice: chosen, Resubmission: mayHave, Tries: try + 1, Candidates: ids})
			}
			return resp, nil
		}
		lastErr = err
		if !answered(err) && (mayHave || !definitive(err)) {
			accepted, verr := r.acceptedBy(ctx, sc, asc.GetApplicationId())
			switch {
			case verr != nil:
				return nil, hadoopipc.Errorf(hadoopipc.ClassRetriable,
					"submitApplication %s: sub-cluster %s may have accepted the application (%v) and cannot be asked (%v); retry the submission",
					app, home, err, verr)
			case accepted:
				auditOf(ctx).SC = home
				if ownRow {
					r.appACLs.Record(app, hadoopipc.UserName(ctx), asc)
				}
				r.log.Info("application submitted (confirmed after an ambiguous failure)", "app", app, "subcluster", home)
				return resp, nil
			}
		}
		r.log.Warn("submission failed, trying another sub-cluster", "app", app, "subcluster", home, "try", try, "err", err)
		bl.add(sc)
	}
	return nil, r.unroutable(lastErr)
}

// noneEligible reports whether a policy refused because none of the
// candidates it was given may take the application (zero weights,
// blacklist), which changes when membership does.
func noneEligible(err error) bool {
	return errors.Is(err, policies.ErrNoActiveSubCluster) || errors.Is(err, ErrNoActiveSubCluster)
}

// acceptedBy asks sc whether it knows app. If the RM is down it waits out
// the failover window for the sub-cluster to prove liveness again (a new
// heartbeat or address from its agent) and asks once more.
func (r *Router) acceptedBy(ctx context.Context, sc SubClusterInfo, app *yarnpb.ApplicationIdProto) (bool, error) {
	ask := func(sc SubClusterInfo) (bool, error) {
		resp := &yarnpb.GetApplicationReportResponseProto{}
		err := r.callSC(ctx, sc, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: app}, resp)
		switch {
		case err == nil:
			return true, nil
		case isClass(err, hadoopipc.ClassApplicationNotFound):
			return false, nil
		default:
			return false, err
		}
	}
	ok, err := ask(sc)
	if err == nil || !rmDown(err) {
		return ok, err
	}
	bl := r.newBlacklist()
	bl.add(sc)
	if werr := r.members.waitFor(ctx, r.cfg.FailoverWait.D(), func() bool {
		cur, found := r.members.get(sc.ID)
		if found && r.members.routable(cur) && !bl.excludes(cur) {
			sc = cur
			return true
		}
		return false
	}); werr != nil {
		return false, err
	}
	return ask(sc)
}

func policyType(p RouterPolicy) string {
	if t, ok := p.(interface{ Type() string }); ok {
		return t.Type()
	}
	return fmt.Sprintf("%T", p)
}

func (r *Router) crash(step string) bool { return r.crashAt != nil && r.crashAt(step) }

func submissionOf(asc *yarnpb.ApplicationSubmissionContextProto) AppSubmission {
	s := AppSubmission{AppID: yarnid.AppIDString(asc.GetApplicationId()), Queue: asc.GetQueue()}
	if rid := asc.GetReservationId(); rid != nil {
		s.ReservationID = yarnid.ReservationIDString(rid)
	}
	for _, rr := range asc.GetAmContainerResourceRequest() {
		s.AMResourceRequests = append(s.AMResourceRequests, ResourceRequest{
			ResourceName:        rr.GetResourceName(),
			NumContainers:       rr.GetNumContainers(),
			RelaxLocality:       rr.GetRelaxLocality(),
			AllocationRequestID: rr.GetAllocationRequestId(),
		})
	}
	return s
}

// maxTrimmedSubmission caps the submission context stored beside a home; a
// larger one is not stored (the store refuses big contexts, and the check
// below then falls back to trusting the id, as Hadoop does).
const maxTrimmedSubmission = 64 << 10

// trimSubmission is the submission context stored beside an application's
// home: everything but the AM container spec, which carries credentials and
// can be large, except its application ACLs, kept with the submitter's
// name (appacl.Spec) so every router decides access alike. Marshalled
// deterministically so equal contexts compare equal.
func trimSubmission(asc *yarnpb.ApplicationSubmissionContextProto, owner string) []byte {
	t := proto.Clone(asc).(*yarnpb.ApplicationSubmissionContextProto)
	t.AmContainerSpec = appacl.Spec(asc.GetAmContainerSpec(), owner)
	b, err := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(t)
	if err != nil || len(b) > maxTrimmedSubmission {
		return nil
	}
	return b
}

// sameSubmission reports whether a stored trimmed context describes asc: a
// client retrying its submission (after a router crash or failover) sends
// the same context, while a different application that reuses the id does
// not. Fields set to their default count as unset, so a retry through the
// REST API (whose decoder writes defaults explicitly) matches the original
// IPC submission. A row without a stored context (an older router, or one
// too large to keep) cannot be checked and is taken for a retry.
func sameSubmission(stored []byte, asc *yarnpb.ApplicationSubmissionContextProto) bool {
	if len(stored) == 0 {
		return true
	}
	prev := &yarnpb.ApplicationSubmissionContextProto{}
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(stored, prev); err != nil {
		return true
	}
	cur := proto.Clone(asc).(*yarnpb.ApplicationSubmissionContextProto)
	cur.AmContainerSpec, prev.AmContainerSpec = nil, nil // the spec is not kept; its ACLs are not the retry's identity
	clearDefaults(prev.ProtoReflect())
	clearDefaults(cur.ProtoReflect())
	return proto.Equal(prev, cur)
}

// clearDefaults unsets every field, at any depth, whose value is its
// default, so that "absent" and "explicitly default" compare equal.
func clearDefaults(m protoreflect.Message) {
	var clear []protoreflect.FieldDescriptor
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, e protoreflect.Value) bool {
					clearDefaults(e.Message())
					return true
				})
			}
		case fd.IsList():
			if fd.Message() != nil {
				for i, l := 0, v.List(); i < l.Len(); i++ {
					clearDefaults(l.Get(i).Message())
				}
			}
		case fd.Message() != nil:
			clearDefaults(v.Message())
		case fd.HasPresence() && v.Equal(fd.Default()):
			clear = append(clear, fd)
		}
		return true
	})
	for _, fd := range clear {
		m.Clear(fd)
	}
}
