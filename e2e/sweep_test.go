//go:build interop

package e2e

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// unknownFields lists, by field path, every part of m that our .proto
// files do not describe: a field Hadoop sends that we would drop, or a
// field number / wire type we got wrong.
func unknownFields(m protoreflect.Message, path string) []string {
	var out []string
	if len(m.GetUnknown()) > 0 {
		out = append(out, fmt.Sprintf("%s(%d bytes)", path, len(m.GetUnknown())))
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		name := path + "." + string(fd.Name())
		if fd.IsList() {
			for i := 0; i < v.List().Len(); i++ {
				out = append(out, unknownFields(v.List().Get(i).Message(), fmt.Sprintf("%s[%d]", name, i))...)
			}
			return true
		}
		out = append(out, unknownFields(v.Message(), name)...)
		return true
	})
	return out
}

// sweepOutcome is how one RM answered one ApplicationClientProtocol method.
type sweepOutcome struct {
	ok      bool
	class   string // Java exception class when !ok
	msg     string
	unknown []string
}

func (o sweepOutcome) String() string {
	if o.ok {
		return "ok"
	}
	return o.class
}

// sweepTarget is an RM with an application in flight: an unmanaged AM
// registered and holding one allocated container.
type sweepTarget struct {
	client    *hadoopipc.Client
	app       *yarnpb.ApplicationIdProto
	attempt   *yarnpb.ApplicationAttemptIdProto
	container *yarnpb.ContainerIdProto
}

func prepareSweep(t *testing.T, client *hadoopipc.Client, scheduler string) sweepTarget {
	t.Helper()
	app := submitUnmanaged(t, client, "interop-sweep")
	tok := waitAMRMToken(t, client, app)
	var ident yarnpb.AMRMTokenIdentifierProto
	if err := proto.Unmarshal(tok.GetIdentifier(), &ident); err != nil {
		t.Fatal(err)
	}
	am, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{scheduler},
		Protocol: hadoopipc.ProtocolApplicationMaster, Version: 1, Token: tok, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { am.Close() })
	call(t, am, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{
		Host: proto.String("127.0.0.1"), RpcPort: proto.Int32(0), TrackingUrl: proto.String(""),
	}, &yarnpb.RegisterApplicationMasterResponseProto{})
	ask := []*yarnpb.ResourceRequestProto{{
		Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &yarnpb.ResourceProto{Memory: proto.Int64(128), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(1),
	}}
	var ctr *yarnpb.ContainerIdProto
	rid := int32(0)
	poll(t, 60*time.Second, "a container", func() bool {
		resp := call(t, am, "allocate", &yarnpb.AllocateRequestProto{Ask: ask, ResponseId: proto.Int32(rid)}, &yarnpb.AllocateResponseProto{})
		ask, rid = nil, resp.GetResponseId()
		if len(resp.GetAllocatedContainers()) > 0 {
			ctr = resp.GetAllocatedContainers()[0].GetId()
		}
		return ctr != nil
	})
	return sweepTarget{client: client, app: app, attempt: ident.GetAppAttemptId(), container: ctr}
}

// sweep calls every ApplicationClientProtocol method once with a valid
// request and records the outcome. Destructive calls come last.
func sweep(t *testing.T, tg sweepTarget) map[string]sweepOutcome {
	t.Helper()
	// Hadoop's ISO 8601 form (Times.parseISO8601ToLocalTimeInMillis): a
	// numeric zone, not "Z".
	far := time.Now().Add(24 * time.Hour).UTC().Format("2006-01-02T15:04:05.000-0700")
	calls := []struct {
		method    string
		req, resp proto.Message
	}{
		{"getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{}},
		{"getClusterNodes", &yarnpb.GetClusterNodesRequestProto{NodeStates: []yarnpb.NodeStateProto{yarnpb.NodeStateProto_NS_RUNNING}}, &yarnpb.GetClusterNodesResponseProto{}},
		{"getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &yarnpb.GetNewApplicationResponseProto{}},
		{"getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: tg.app}, &yarnpb.GetApplicationReportResponseProto{}},
		{"getApplications", &yarnpb.GetApplicationsRequestProto{ApplicationTypes: []string{"YARNFED-E2E"},
			ApplicationStates: []yarnpb.YarnApplicationStateProto{yarnpb.YarnApplicationStateProto_ACCEPTED, yarnpb.YarnApplicationStateProto_RUNNING}}, &yarnpb.GetApplicationsResponseProto{}},
		{"getQueueInfo", &yarnpb.GetQueueInfoRequestProto{QueueName: proto.String("default"), IncludeApplications: proto.Bool(true),
			IncludeChildQueues: proto.Bool(true), Recursive: proto.Bool(true)}, &yarnpb.GetQueueInfoResponseProto{}},
		{"getQueueUserAcls", &yarnpb.GetQueueUserAclsInfoRequestProto{}, &yarnpb.GetQueueUserAclsInfoResponseProto{}},
		{"getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String(e2eUser)}, &commonpb.GetDelegationTokenResponseProto{}},
		{"getApplicationAttemptReport", &yarnpb.GetApplicationAttemptReportRequestProto{ApplicationAttemptId: tg.attempt}, &yarnpb.GetApplicationAttemptReportResponseProto{}},
		{"getApplicationAttempts", &yarnpb.GetApplicationAttemptsRequestProto{ApplicationId: tg.app}, &yarnpb.GetApplicationAttemptsResponseProto{}},
		{"getContainerReport", &yarnpb.GetContainerReportRequestProto{ContainerId: tg.container}, &yarnpb.GetContainerReportResponseProto{}},
		{"getContainers", &yarnpb.GetContainersRequestProto{ApplicationAttemptId: tg.attempt}, &yarnpb.GetContainersResponseProto{}},
		{"getNewReservation", &yarnpb.GetNewReservationRequestProto{}, &yarnpb.GetNewReservationResponseProto{}},
		{"listReservations", &yarnpb.ReservationListRequestProto{Queue: proto.String("default")}, &yarnpb.ReservationListResponseProto{}},
		{"getNodeToLabels", &yarnpb.GetNodesToLabelsRequestProto{}, &yarnpb.GetNodesToLabelsResponseProto{}},
		{"getLabelsToNodes", &yarnpb.GetLabelsToNodesRequestProto{}, &yarnpb.GetLabelsToNodesResponseProto{}},
		{"getClusterNodeLabels", &yarnpb.GetClusterNodeLabelsRequestProto{}, &yarnpb.GetClusterNodeLabelsResponseProto{}},
		{"getResourceProfiles", &yarnpb.GetAllResourceProfilesRequestProto{}, &yarnpb.GetAllResourceProfilesResponseProto{}},
		{"getResourceProfile", &yarnpb.GetResourceProfileRequestProto{Profile: proto.String("minimum")}, &yarnpb.GetResourceProfileResponseProto{}},
		{"getResourceTypeInfo", &yarnpb.GetAllResourceTypeInfoRequestProto{}, &yarnpb.GetAllResourceTypeInfoResponseProto{}},
		{"getClusterNodeAttributes", &yarnpb.GetClusterNodeAttributesRequestProto{}, &yarnpb.GetClusterNodeAttributesResponseProto{}},
		{"getAttributesToNodes", &yarnpb.GetAttributesToNodesRequestProto{}, &yarnpb.GetAttributesToNodesResponseProto{}},
		{"getNodesToAttributes", &yarnpb.GetNodesToAttributesRequestProto{Hostnames: []string{"localhost"}}, &yarnpb.GetNodesToAttributesResponseProto{}},
		{"updateApplicationPriority", &yarnpb.UpdateApplicationPriorityRequestProto{ApplicationId: tg.app,
			ApplicationPriority: &yarnpb.PriorityProto{Priority: proto.Int32(0)}}, &yarnpb.UpdateApplicationPriorityResponseProto{}},
		{"updateApplicationTimeouts", &yarnpb.UpdateApplicationTimeoutsRequestProto{ApplicationId: tg.app,
			ApplicationTimeouts: []*yarnpb.ApplicationUpdateTimeoutMapProto{{
				ApplicationTimeoutType: yarnpb.ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME.Enum(), ExpireTime: proto.String(far)}}},
			&yarnpb.UpdateApplicationTimeoutsResponseProto{}},
		{"moveApplicationAcrossQueues", &yarnpb.MoveApplicationAcrossQueuesRequestProto{ApplicationId: tg.app, TargetQueue: proto.String("default")},
			&yarnpb.MoveApplicationAcrossQueuesResponseProto{}},
		{"signalToContainer", &yarnpb.SignalContainerRequestProto{ContainerId: tg.container,
			Command: yarnpb.SignalContainerCommandProto_OUTPUT_THREAD_DUMP.Enum()}, &yarnpb.SignalContainerResponseProto{}},
		{"failApplicationAttempt", &yarnpb.FailApplicationAttemptRequestProto{ApplicationAttemptId: tg.attempt}, &yarnpb.FailApplicationAttemptResponseProto{}},
		{"forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: tg.app}, &yarnpb.KillApplicationResponseProto{}},
	}
	out := map[string]sweepOutcome{}
	for _, c := range calls {
		out[c.method] = runCall(t, tg.client, c.method, c.req, c.resp)
	}
	return out
}

// runCall makes one call and classifies the answer; transport, decoding
// and fatal failures fail the test (marked by an outcome with class "!").
func runCall(t *testing.T, client *hadoopipc.Client, method string, req, resp proto.Message) sweepOutcome {
	t.Helper()
	{
		c := struct {
			method    string
			req, resp proto.Message
		}{method, req, resp}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := client.Call(ctx, c.method, c.req, c.resp)
		cancel()
		var o sweepOutcome
		var re *hadoopipc.RemoteError
		switch {
		case err == nil:
			o = sweepOutcome{ok: true, unknown: unknownFields(c.resp.ProtoReflect(), string(c.resp.ProtoReflect().Descriptor().Name()))}
		case errors.As(err, &re) && !re.Fatal:
			o = sweepOutcome{class: re.Class, msg: re.Message}
		default:
			t.Errorf("%s: %v (not an application error: transport, decoding or a fatal reply)", c.method, err)
			o = sweepOutcome{class: "!"}
		}
		return o
	}
}

// The whole ApplicationClientProtocol, from our Go client, against the real
// RM and against simrm: every response must decode with no field our protos
// lack, and simrm must succeed or fail exactly where the real RM does.
func TestGoClientProtocolSweep(t *testing.T) {
	mc := needCluster(t)
	sim := startSimRM(t, mc.info.NMs)
	simClient, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{sim.Addrs().Client},
		Protocol: hadoopipc.ProtocolApplicationClient, Version: 1, User: e2eUser, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { simClient.Close() })

	real := sweep(t, prepareSweep(t, rmClient(t, mc), loopback(mc.info.Scheduler)))
	ours := sweep(t, prepareSweep(t, simClient, sim.Addrs().Scheduler))

	compareSweeps(t, "ApplicationClientProtocol", real, ours)
}

// compareSweeps fails on unknown fields in real-RM responses and on
// simrm outcomes that differ from the real RM's, and logs the table.
func compareSweeps(t *testing.T, protocol string, real, ours map[string]sweepOutcome) {
	t.Helper()
	methods := make([]string, 0, len(real))
	for m := range real {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	var table []string
	for _, m := range methods {
		r, s := real[m], ours[m]
		table = append(table, fmt.Sprintf("%-36s real=%s simrm=%s", m, r, s))
		if len(r.unknown) > 0 {
			t.Errorf("%s: the real RM's response has fields our protos do not describe: %s", m, strings.Join(r.unknown, ", "))
		}
		if r.ok != s.ok || r.class != s.class {
			if why, ok := knownSimRMGaps["sweep "+m]; ok {
				t.Logf("KNOWN GAP sweep %s: real RM %s, simrm %s: %s", m, r, s, why)
				continue
			}
			t.Errorf("%s: real RM %s %q, simrm %s %q", m, r, firstLine(r.msg), s, firstLine(s.msg))
		}
	}
	t.Logf("%s outcomes:\n%s", protocol, strings.Join(table, "\n"))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// The non-destructive ResourceManagerAdministrationProtocol calls (what
// `yarn rmadmin` and a Router's admin fan-out send), against the real RM's
// admin port and simrm's.
func TestGoClientAdminSweep(t *testing.T) {
	mc := needCluster(t)
	sim := startSimRM(t, mc.info.NMs)
	admin := func(addr string) *hadoopipc.Client {
		c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{addr},
			Protocol: hadoopipc.ProtocolRMAdmin, Version: 1, User: e2eUser, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	type adminCall struct {
		method    string
		req, resp func() proto.Message
	}
	calls := []adminCall{
		{"refreshQueues", func() proto.Message { return &yarnpb.RefreshQueuesRequestProto{} }, func() proto.Message { return &yarnpb.RefreshQueuesResponseProto{} }},
		{"refreshNodes", func() proto.Message { return &yarnpb.RefreshNodesRequestProto{} }, func() proto.Message { return &yarnpb.RefreshNodesResponseProto{} }},
		{"refreshSuperUserGroupsConfiguration", func() proto.Message { return &yarnpb.RefreshSuperUserGroupsConfigurationRequestProto{} },
			func() proto.Message { return &yarnpb.RefreshSuperUserGroupsConfigurationResponseProto{} }},
		{"refreshUserToGroupsMappings", func() proto.Message { return &yarnpb.RefreshUserToGroupsMappingsRequestProto{} },
			func() proto.Message { return &yarnpb.RefreshUserToGroupsMappingsResponseProto{} }},
		{"refreshAdminAcls", func() proto.Message { return &yarnpb.RefreshAdminAclsRequestProto{} }, func() proto.Message { return &yarnpb.RefreshAdminAclsResponseProto{} }},
		{"refreshServiceAcls", func() proto.Message { return &yarnpb.RefreshServiceAclsRequestProto{} }, func() proto.Message { return &yarnpb.RefreshServiceAclsResponseProto{} }},
		{"getGroupsForUser", func() proto.Message { return &yarnpb.GetGroupsForUserRequestProto{User: proto.String(e2eUser)} },
			func() proto.Message { return &yarnpb.GetGroupsForUserResponseProto{} }},
		{"checkForDecommissioningNodes", func() proto.Message { return &yarnpb.CheckForDecommissioningNodesRequestProto{} },
			func() proto.Message { return &yarnpb.CheckForDecommissioningNodesResponseProto{} }},
		{"refreshClusterMaxPriority", func() proto.Message { return &yarnpb.RefreshClusterMaxPriorityRequestProto{} },
			func() proto.Message { return &yarnpb.RefreshClusterMaxPriorityResponseProto{} }},
		{"refreshNodesResources", func() proto.Message { return &yarnpb.RefreshNodesResourcesRequestProto{} },
			func() proto.Message { return &yarnpb.RefreshNodesResourcesResponseProto{} }},
		{"getFederationSubClusters", func() proto.Message { return &yarnpb.GetSubClustersRequestProto{} }, func() proto.Message { return &yarnpb.GetSubClustersResponseProto{} }},
	}
	run := func(c *hadoopipc.Client) map[string]sweepOutcome {
		out := map[string]sweepOutcome{}
		for _, ac := range calls {
			out[ac.method] = runCall(t, c, ac.method, ac.req(), ac.resp())
		}
		return out
	}
	compareSweeps(t, "ResourceManagerAdministrationProtocol", run(admin(loopback(mc.info.Admin))), run(admin(sim.Addrs().Admin)))
}
