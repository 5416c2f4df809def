//go:build interop

package e2e

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// e2eUser is the SIMPLE-auth user our Go client claims; the RM hands an
// unmanaged AM's AMRMToken only to the application's owner.
const e2eUser = "yarnfed-e2e"

func rmClient(t testing.TB, mc *miniCluster) *hadoopipc.Client {
	t.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{
		Addresses:   []string{loopback(mc.info.RM)},
		Protocol:    hadoopipc.ProtocolApplicationClient,
		Version:     1,
		User:        e2eUser,
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func amClient(t testing.TB, mc *miniCluster, tok *commonpb.TokenProto, qops ...string) *hadoopipc.Client {
	t.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{
		QOPs:             qops,
		Addresses:        []string{loopback(mc.info.Scheduler)},
		Protocol:         hadoopipc.ProtocolApplicationMaster,
		Version:          1,
		Token:            tok,
		DialTimeout:      5 * time.Second,
		FailoverAttempts: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call[Resp proto.Message](t testing.TB, c *hadoopipc.Client, method string, req proto.Message, resp Resp) Resp {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Call(ctx, method, req, resp); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp
}

// poll calls f every 50 ms until it returns true or the timeout passes.
func poll(t testing.TB, timeout time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func appString(id *yarnpb.ApplicationIdProto) string {
	return fmt.Sprintf("application_%d_%04d", id.GetClusterTimestamp(), id.GetId())
}

// submitUnmanaged asks the real RM for an application id and submits an
// unmanaged-AM application under it, the way the AMRMProxy starts a UAM in
// a secondary sub-cluster.
func submitUnmanaged(t testing.TB, c *hadoopipc.Client, name string) *yarnpb.ApplicationIdProto {
	t.Helper()
	na := call(t, c, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &yarnpb.GetNewApplicationResponseProto{})
	if na.GetApplicationId().GetClusterTimestamp() == 0 || na.GetMaximumCapability().GetMemory() <= 0 {
		t.Fatalf("getNewApplication: %v", na)
	}
	call(t, c, "submitApplication", &yarnpb.SubmitApplicationRequestProto{
		ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
			ApplicationId:   na.GetApplicationId(),
			ApplicationName: proto.String(name),
			Queue:           proto.String("default"),
			Priority:        &yarnpb.PriorityProto{Priority: proto.Int32(0)},
			AmContainerSpec: &yarnpb.ContainerLaunchContextProto{},
			UnmanagedAm:     proto.Bool(true),
			Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(256), VirtualCores: proto.Int32(1)},
			ApplicationType: proto.String("YARNFED-E2E"),
		},
	}, &yarnpb.SubmitApplicationResponseProto{})
	return na.GetApplicationId()
}

func appReport(t testing.TB, c *hadoopipc.Client, id *yarnpb.ApplicationIdProto) *yarnpb.ApplicationReportProto {
	t.Helper()
	return call(t, c, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id},
		&yarnpb.GetApplicationReportResponseProto{}).GetApplicationReport()
}

// waitAMRMToken polls the report until the RM has launched the unmanaged
// attempt and shows its owner the AMRMToken.
func waitAMRMToken(t testing.TB, c *hadoopipc.Client, id *yarnpb.ApplicationIdProto) *commonpb.TokenProto {
	t.Helper()
	var tok *commonpb.TokenProto
	poll(t, 60*time.Second, "the AMRMToken in the application report", func() bool {
		tok = appReport(t, c, id).GetAmRmToken()
		return tok != nil
	})
	return tok
}

// containerEpoch is the RM epoch carried in the top bits of a container id.
func containerEpoch(id int64) int64 { return id >> 40 }

// Scenario 3: our Go client drives a real ResourceManager: client protocol
// over SIMPLE auth, then the AM protocol on the real scheduler port with
// the AMRMToken over SASL DIGEST-MD5, as the AMRMProxy does for UAMs.
func TestGoClientAgainstRealRM(t *testing.T) {
	mc := needCluster(t)
	c := rmClient(t, mc)

	t.Run("cluster metrics and nodes", func(t *testing.T) {
		m := call(t, c, "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
		if got := m.GetClusterMetrics().GetNumNodeManagers(); got != int32(mc.info.NMs) {
			t.Errorf("numNodeManagers = %d, want %d", got, mc.info.NMs)
		}
		if got := m.GetClusterMetrics().GetNumActiveNms(); got != int32(mc.info.NMs) {
			t.Errorf("numActiveNms = %d, want %d", got, mc.info.NMs)
		}
		nodes := call(t, c, "getClusterNodes", &yarnpb.GetClusterNodesRequestProto{}, &yarnpb.GetClusterNodesResponseProto{})
		if len(nodes.GetNodeReports()) != mc.info.NMs {
			t.Fatalf("getClusterNodes returned %d nodes, want %d: %v", len(nodes.GetNodeReports()), mc.info.NMs, nodes)
		}
		for _, n := range nodes.GetNodeReports() {
			if n.GetNodeState() != yarnpb.NodeStateProto_NS_RUNNING || n.GetCapability().GetMemory() != 4096 ||
				n.GetCapability().GetVirtualCores() != 4 || n.GetNodeId().GetPort() == 0 {
				t.Errorf("node report %v: want RUNNING with <4096 MB, 4 vcores>", n)
			}
		}
	})

	t.Run("unknown application", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := c.Call(ctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{
			ApplicationId: &yarnpb.ApplicationIdProto{Id: proto.Int32(9999), ClusterTimestamp: proto.Int64(1)},
		}, &yarnpb.GetApplicationReportResponseProto{})
		var re *hadoopipc.RemoteError
		if !errors.As(err, &re) || re.Class != hadoopipc.ClassApplicationNotFound || re.Fatal {
			t.Errorf("report of an unknown app: %v, want a non-fatal %s", err, hadoopipc.ClassApplicationNotFound)
		}
	})

	t.Run("unmanaged AM lifecycle", func(t *testing.T) {
		id := submitUnmanaged(t, c, "interop-s3")
		tok := waitAMRMToken(t, c, id)
		if tok.GetKind() != "YARN_AM_RM_TOKEN" {
			t.Errorf("AMRMToken kind %q", tok.GetKind())
		}
		var ident yarnpb.AMRMTokenIdentifierProto
		if err := proto.Unmarshal(tok.GetIdentifier(), &ident); err != nil {
			t.Fatalf("AMRMTokenIdentifierProto: %v", err)
		}
		if appString(ident.GetAppAttemptId().GetApplicationId()) != appString(id) || ident.GetAppAttemptId().GetAttemptId() != 1 {
			t.Errorf("token identifier names %v, want attempt 1 of %s", ident.GetAppAttemptId(), appString(id))
		}
		rep := appReport(t, c, id)
		if u := unknownFields(rep.ProtoReflect(), "ApplicationReportProto"); len(u) > 0 {
			t.Errorf("the real RM's application report has fields our protos do not describe: %v", u)
		}
		if rep.GetName() != "interop-s3" || rep.GetUser() != e2eUser || !rep.GetUnmanagedApplication() ||
			rep.GetYarnApplicationState() != yarnpb.YarnApplicationStateProto_ACCEPTED {
			t.Errorf("report after submit: %v", rep)
		}

		am := amClient(t, mc, tok)
		reg := call(t, am, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{
			Host: proto.String("127.0.0.1"), RpcPort: proto.Int32(0), TrackingUrl: proto.String(""),
		}, &yarnpb.RegisterApplicationMasterResponseProto{})
		if u := unknownFields(reg.ProtoReflect(), "RegisterApplicationMasterResponseProto"); len(u) > 0 {
			t.Errorf("the real RM's register response has fields our protos do not describe: %v", u)
		}
		if reg.GetMaximumCapability().GetMemory() <= 0 || reg.GetQueue() != "default" && reg.GetQueue() != "root.default" {
			t.Errorf("register response %v", reg)
		}

		t.Run("second register is rejected", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := am.Call(ctx, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{
				Host: proto.String("127.0.0.1"), RpcPort: proto.Int32(0), TrackingUrl: proto.String(""),
			}, &yarnpb.RegisterApplicationMasterResponseProto{})
			var re *hadoopipc.RemoteError
			if !errors.As(err, &re) || re.Class != hadoopipc.ClassInvalidApplicationMasterRequest {
				t.Errorf("second register: %v, want %s", err, hadoopipc.ClassInvalidApplicationMasterRequest)
			}
		})

		// Ask for two containers at ANY and heartbeat until the real
		// scheduler hands them out, echoing response ids as an AM must.
		var containers []*yarnpb.ContainerProto
		responseID := int32(0)
		ask := []*yarnpb.ResourceRequestProto{{
			Priority:      &yarnpb.PriorityProto{Priority: proto.Int32(1)},
			ResourceName:  proto.String("*"),
			Capability:    &yarnpb.ResourceProto{Memory: proto.Int64(256), VirtualCores: proto.Int32(1)},
			NumContainers: proto.Int32(2),
			RelaxLocality: proto.Bool(true),
		}}
		heartbeats := 0
		poll(t, 60*time.Second, "two containers from the real scheduler", func() bool {
			resp := call(t, am, "allocate", &yarnpb.AllocateRequestProto{
				Ask: ask, ResponseId: proto.Int32(responseID), Progress: proto.Float32(0.1),
			}, &yarnpb.AllocateResponseProto{})
			heartbeats++
			if u := unknownFields(resp.ProtoReflect(), "AllocateResponseProto"); len(u) > 0 {
				t.Errorf("the real RM's allocate response has fields our protos do not describe: %v", u)
			}
			ask = nil // the ask table is sent once; later heartbeats carry only changes
			responseID = resp.GetResponseId()
			containers = append(containers, resp.GetAllocatedContainers()...)
			return len(containers) >= 2
		})
		t.Logf("got %d containers after %d heartbeats", len(containers), heartbeats)
		for _, ctr := range containers {
			cid := ctr.GetId()
			if appString(cid.GetAppId()) != appString(id) && appString(cid.GetAppAttemptId().GetApplicationId()) != appString(id) {
				t.Errorf("container %v belongs to another application", cid)
			}
			if containerEpoch(cid.GetId()) != mc.info.Epoch {
				t.Errorf("container id %d carries epoch %d, want the RM's %d", cid.GetId(), containerEpoch(cid.GetId()), mc.info.Epoch)
			}
			if ctr.GetResource().GetMemory() != 256 || ctr.GetNodeId().GetHost() == "" || ctr.GetContainerToken() == nil {
				t.Errorf("container %v: want 256 MB on a node, with a container token", ctr)
			}
		}

		// Release them and finish; the RM answers isUnregistered=false until
		// it has recorded the final state, so repeat as Hadoop's AM client does.
		var release []*yarnpb.ContainerIdProto
		for _, ctr := range containers {
			release = append(release, ctr.GetId())
		}
		call(t, am, "allocate", &yarnpb.AllocateRequestProto{Release: release, ResponseId: proto.Int32(responseID)}, &yarnpb.AllocateResponseProto{})
		poll(t, 30*time.Second, "finishApplicationMaster to unregister", func() bool {
			f := call(t, am, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{
				FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum(),
				Diagnostics:            proto.String("interop done"),
				TrackingUrl:            proto.String(""),
			}, &yarnpb.FinishApplicationMasterResponseProto{})
			return f.GetIsUnregistered()
		})
		poll(t, 30*time.Second, "the application to finish", func() bool {
			r := appReport(t, c, id)
			return r.GetYarnApplicationState() == yarnpb.YarnApplicationStateProto_FINISHED &&
				r.GetFinalApplicationStatus() == yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED
		})
	})

	// The same AM conversation under each SASL quality of protection: with
	// auth-int and auth-conf every packet after the login is wrapped.
	for _, tc := range []struct{ name, qop string }{
		{"qop auth", "auth"}, {"qop auth-int", "auth-int"}, {"qop auth-conf", "auth-conf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := submitUnmanaged(t, c, "interop-s3-"+tc.qop)
			am := amClient(t, mc, waitAMRMToken(t, c, id), tc.qop)
			call(t, am, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{
				Host: proto.String("127.0.0.1"), RpcPort: proto.Int32(0), TrackingUrl: proto.String(""),
			}, &yarnpb.RegisterApplicationMasterResponseProto{})
			ask := []*yarnpb.ResourceRequestProto{{
				Priority:      &yarnpb.PriorityProto{Priority: proto.Int32(1)},
				ResourceName:  proto.String("*"),
				Capability:    &yarnpb.ResourceProto{Memory: proto.Int64(128), VirtualCores: proto.Int32(1)},
				NumContainers: proto.Int32(1),
			}}
			responseID, got := int32(0), 0
			poll(t, 60*time.Second, "a container", func() bool {
				resp := call(t, am, "allocate", &yarnpb.AllocateRequestProto{Ask: ask, ResponseId: proto.Int32(responseID)}, &yarnpb.AllocateResponseProto{})
				ask, responseID = nil, resp.GetResponseId()
				got += len(resp.GetAllocatedContainers())
				return got >= 1
			})
			poll(t, 30*time.Second, "finishApplicationMaster to unregister", func() bool {
				return call(t, am, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{
					FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum(),
				}, &yarnpb.FinishApplicationMasterResponseProto{}).GetIsUnregistered()
			})
		})
	}

	t.Run("wrong AMRMToken", func(t *testing.T) {
		id := submitUnmanaged(t, c, "interop-s3-badtoken")
		tok := waitAMRMToken(t, c, id)
		j := needJava(t)
		b64 := base64.StdEncoding.EncodeToString
		badPassword := b64([]byte("not-the-password-at-all"))

		// Our client with a wrong password: the real RM refuses the login.
		bad := proto.Clone(tok).(*commonpb.TokenProto)
		bad.Password = []byte("not-the-password-at-all")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err := amClient(t, mc, bad).Call(ctx, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{
			Host: proto.String("127.0.0.1"), RpcPort: proto.Int32(0), TrackingUrl: proto.String(""),
		}, &yarnpb.RegisterApplicationMasterResponseProto{})
		var re *hadoopipc.RemoteError
		if !errors.As(err, &re) || re.Class != hadoopipc.ClassSaslException || !re.Fatal {
			t.Errorf("Go register with a wrong password: %v, want a fatal %s", err, hadoopipc.ClassSaslException)
		}

		// Reference: what Hadoop's own AMRMClient sees from a real RM; the
		// scenario-2 test pins our server to the same classes. (An identifier
		// that does not even parse makes the real RM drop the connection: Java
		// retries and ends with an EOFException; not pinned, it costs 5 s.)
		unknown := amrmIdentifier(t, id.GetClusterTimestamp(), 9999)
		for _, tc := range []struct{ name, id, password, class string }{
			{"wrong password", b64(tok.GetIdentifier()), badPassword, hadoopipc.ClassSaslException},
			{"unknown attempt", b64(unknown), b64(tok.GetPassword()), hadoopipc.ClassInvalidToken},
		} {
			t.Run("java reference "+tc.name, func(t *testing.T) {
				run := j.runDriver(t, "AMRMDriver", "--scheduler", loopback(mc.info.Scheduler),
					"--token-id", tc.id, "--token-password", tc.password, "register")
				l := run.op(t, "register")
				if l.OK || l.Exception != tc.class {
					t.Errorf("Java against the real RM: ok=%v %s %q; the pinned expectation is %s", l.OK, l.Exception, l.Message, tc.class)
				}
			})
		}

		call(t, c, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{})
		poll(t, 30*time.Second, "the application to be killed", func() bool {
			return appReport(t, c, id).GetYarnApplicationState() == yarnpb.YarnApplicationStateProto_KILLED
		})
	})
}
