//go:build interop

package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// fakeRM is the smallest ApplicationClientProtocol a real YarnClient can
// drive: it proves our IPC server and messages, not RM semantics (simrm does
// those). It deliberately leaves getNodeToLabels unregistered, so the Java
// client sees what an unimplemented method looks like.
type fakeRM struct {
	clusterTS int64
	nms       int32

	mu   sync.Mutex
	next int32
	apps map[int32]*yarnpb.ApplicationReportProto
}

func newFakeRM() *fakeRM {
	return &fakeRM{clusterTS: 1700000000000, nms: 3, apps: map[int32]*yarnpb.ApplicationReportProto{}}
}

func (f *fakeRM) appID(id int32) *yarnpb.ApplicationIdProto {
	return &yarnpb.ApplicationIdProto{Id: proto.Int32(id), ClusterTimestamp: proto.Int64(f.clusterTS)}
}

func (f *fakeRM) protocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{
		Name:    hadoopipc.ProtocolApplicationClient,
		Version: 1,
		Methods: []hadoopipc.Method{
			hadoopipc.NewMethod("getClusterMetrics", func() *yarnpb.GetClusterMetricsRequestProto { return &yarnpb.GetClusterMetricsRequestProto{} },
				func(ctx context.Context, _ *yarnpb.GetClusterMetricsRequestProto) (*yarnpb.GetClusterMetricsResponseProto, error) {
					// Jitter so concurrent calls finish out of order, as a
					// busy RM's would.
					time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
					return &yarnpb.GetClusterMetricsResponseProto{ClusterMetrics: &yarnpb.YarnClusterMetricsProto{
						NumNodeManagers: proto.Int32(f.nms), NumActiveNms: proto.Int32(f.nms - 1), NumLostNms: proto.Int32(1),
					}}, nil
				}),
			hadoopipc.NewMethod("getNewApplication", func() *yarnpb.GetNewApplicationRequestProto { return &yarnpb.GetNewApplicationRequestProto{} },
				func(ctx context.Context, _ *yarnpb.GetNewApplicationRequestProto) (*yarnpb.GetNewApplicationResponseProto, error) {
					f.mu.Lock()
					f.next++
					id := f.next
					f.mu.Unlock()
					return &yarnpb.GetNewApplicationResponseProto{
						ApplicationId:     f.appID(id),
						MaximumCapability: &yarnpb.ResourceProto{Memory: proto.Int64(8192), VirtualCores: proto.Int32(4)},
					}, nil
				}),
			hadoopipc.NewMethod("submitApplication", func() *yarnpb.SubmitApplicationRequestProto { return &yarnpb.SubmitApplicationRequestProto{} },
				func(ctx context.Context, req *yarnpb.SubmitApplicationRequestProto) (*yarnpb.SubmitApplicationResponseProto, error) {
					sc := req.GetApplicationSubmissionContext()
					if sc.GetApplicationId() == nil {
						return nil, hadoopipc.Errorf(hadoopipc.ClassApplicationIDNotProvided, "ApplicationId is not provided")
					}
					u, _ := hadoopipc.UserFromContext(ctx)
					f.mu.Lock()
					defer f.mu.Unlock()
					f.apps[sc.GetApplicationId().GetId()] = &yarnpb.ApplicationReportProto{
						ApplicationId:          sc.GetApplicationId(),
						User:                   proto.String(u.Name),
						Queue:                  proto.String(sc.GetQueue()),
						Name:                   proto.String(sc.GetApplicationName()),
						YarnApplicationState:   yarnpb.YarnApplicationStateProto_ACCEPTED.Enum(),
						FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_UNDEFINED.Enum(),
						ApplicationType:        proto.String(sc.GetApplicationType()),
						UnmanagedApplication:   proto.Bool(sc.GetUnmanagedAm()),
						StartTime:              proto.Int64(time.Now().UnixMilli()),
						Progress:               proto.Float32(0),
					}
					return &yarnpb.SubmitApplicationResponseProto{}, nil
				}),
			hadoopipc.NewMethod("getApplicationReport", func() *yarnpb.GetApplicationReportRequestProto { return &yarnpb.GetApplicationReportRequestProto{} },
				func(ctx context.Context, req *yarnpb.GetApplicationReportRequestProto) (*yarnpb.GetApplicationReportResponseProto, error) {
					r, err := f.app(req.GetApplicationId())
					if err != nil {
						return nil, err
					}
					return &yarnpb.GetApplicationReportResponseProto{ApplicationReport: r}, nil
				}),
			hadoopipc.NewMethod("getApplications", func() *yarnpb.GetApplicationsRequestProto { return &yarnpb.GetApplicationsRequestProto{} },
				func(ctx context.Context, _ *yarnpb.GetApplicationsRequestProto) (*yarnpb.GetApplicationsResponseProto, error) {
					f.mu.Lock()
					defer f.mu.Unlock()
					resp := &yarnpb.GetApplicationsResponseProto{}
					for _, r := range f.apps {
						resp.Applications = append(resp.Applications, proto.Clone(r).(*yarnpb.ApplicationReportProto))
					}
					return resp, nil
				}),
			hadoopipc.NewMethod("forceKillApplication", func() *yarnpb.KillApplicationRequestProto { return &yarnpb.KillApplicationRequestProto{} },
				func(ctx context.Context, req *yarnpb.KillApplicationRequestProto) (*yarnpb.KillApplicationResponseProto, error) {
					if _, err := f.app(req.GetApplicationId()); err != nil {
						return nil, err
					}
					f.mu.Lock()
					r := f.apps[req.GetApplicationId().GetId()]
					r.YarnApplicationState = yarnpb.YarnApplicationStateProto_KILLED.Enum()
					r.FinalApplicationStatus = yarnpb.FinalApplicationStatusProto_APP_KILLED.Enum()
					f.mu.Unlock()
					return &yarnpb.KillApplicationResponseProto{IsKillCompleted: proto.Bool(true)}, nil
				}),
		},
	}
}

func (f *fakeRM) app(id *yarnpb.ApplicationIdProto) (*yarnpb.ApplicationReportProto, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.apps[id.GetId()]
	if !ok || id.GetClusterTimestamp() != f.clusterTS {
		return nil, hadoopipc.Errorf(hadoopipc.ClassApplicationNotFound,
			"Application with id 'application_%d_%04d' doesn't exist in RM.", id.GetClusterTimestamp(), id.GetId())
	}
	return proto.Clone(r).(*yarnpb.ApplicationReportProto), nil
}

// fakeAMSecrets verifies AMRMTokens the way the RM does: the password is
// HMAC-SHA1 of the identifier bytes under the master key, and only attempts
// the RM knows have one.
type fakeAMSecrets struct {
	key      []byte
	attempts map[string]bool
}

func (s fakeAMSecrets) password(identifier []byte) []byte {
	m := hmac.New(sha1.New, s.key)
	m.Write(identifier)
	return m.Sum(nil)
}

func (s fakeAMSecrets) RetrievePassword(identifier []byte) ([]byte, string, error) {
	var id yarnpb.AMRMTokenIdentifierProto
	if err := proto.Unmarshal(identifier, &id); err != nil || id.GetAppAttemptId() == nil {
		return nil, "", fmt.Errorf("not an AMRMTokenIdentifier: %v", err)
	}
	attempt := attemptString(id.GetAppAttemptId())
	if !s.attempts[attempt] {
		return nil, "", fmt.Errorf("%s not found in AMRMTokenSecretManager", attempt)
	}
	return s.password(identifier), attempt, nil
}

func attemptString(a *yarnpb.ApplicationAttemptIdProto) string {
	return fmt.Sprintf("appattempt_%d_%04d_%06d", a.GetApplicationId().GetClusterTimestamp(),
		a.GetApplicationId().GetId(), a.GetAttemptId())
}

// fakeAM is a minimal ApplicationMasterProtocol: register once, hand out the
// containers asked for at ANY, finish. It checks the caller logged in with
// its AMRMToken, as the RM does.
type fakeAM struct {
	secrets fakeAMSecrets

	mu         sync.Mutex
	registered map[string]bool
	nextCtr    int64
	responseID int32
}

func (a *fakeAM) caller(ctx context.Context) (*yarnpb.AMRMTokenIdentifierProto, error) {
	u, ok := hadoopipc.UserFromContext(ctx)
	if !ok || u.AuthMethod != "TOKEN" {
		return nil, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "SIMPLE authentication is not enabled.  Available:[TOKEN]")
	}
	var id yarnpb.AMRMTokenIdentifierProto
	if err := proto.Unmarshal(u.TokenID, &id); err != nil {
		return nil, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "bad AMRMToken identifier: %v", err)
	}
	return &id, nil
}

func (a *fakeAM) protocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{
		Name:    hadoopipc.ProtocolApplicationMaster,
		Version: 1,
		Methods: []hadoopipc.Method{
			hadoopipc.NewMethod("registerApplicationMaster", func() *yarnpb.RegisterApplicationMasterRequestProto {
				return &yarnpb.RegisterApplicationMasterRequestProto{}
			},
				func(ctx context.Context, req *yarnpb.RegisterApplicationMasterRequestProto) (*yarnpb.RegisterApplicationMasterResponseProto, error) {
					id, err := a.caller(ctx)
					if err != nil {
						return nil, err
					}
					a.mu.Lock()
					a.registered[attemptString(id.GetAppAttemptId())] = true
					a.mu.Unlock()
					return &yarnpb.RegisterApplicationMasterResponseProto{
						MaximumCapability: &yarnpb.ResourceProto{Memory: proto.Int64(6144), VirtualCores: proto.Int32(3)},
						Queue:             proto.String("root.e2e"),
					}, nil
				}),
			hadoopipc.NewMethod("allocate", func() *yarnpb.AllocateRequestProto { return &yarnpb.AllocateRequestProto{} },
				func(ctx context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
					id, err := a.caller(ctx)
					if err != nil {
						return nil, err
					}
					a.mu.Lock()
					defer a.mu.Unlock()
					if !a.registered[attemptString(id.GetAppAttemptId())] {
						return nil, hadoopipc.Errorf(hadoopipc.ClassApplicationMasterNotRegistered,
							"Application Master is trying to allocate before registering for: %s", attemptString(id.GetAppAttemptId()))
					}
					a.responseID++
					resp := &yarnpb.AllocateResponseProto{
						ResponseId:      proto.Int32(a.responseID),
						NumClusterNodes: proto.Int32(3),
						Limit:           &yarnpb.ResourceProto{Memory: proto.Int64(4096), VirtualCores: proto.Int32(4)},
					}
					for _, ask := range req.GetAsk() {
						if ask.GetResourceName() != "*" {
							continue
						}
						for i := int32(0); i < ask.GetNumContainers(); i++ {
							a.nextCtr++
							resp.AllocatedContainers = append(resp.AllocatedContainers, &yarnpb.ContainerProto{
								Id: &yarnpb.ContainerIdProto{
									AppId:        id.GetAppAttemptId().GetApplicationId(),
									AppAttemptId: id.GetAppAttemptId(),
									Id:           proto.Int64(a.nextCtr + 1), // 1 is the AM's own container
								},
								NodeId:          &yarnpb.NodeIdProto{Host: proto.String("127.0.0.1"), Port: proto.Int32(45454)},
								NodeHttpAddress: proto.String("127.0.0.1:8042"),
								Resource:        ask.GetCapability(),
								Priority:        ask.GetPriority(),
							})
						}
					}
					return resp, nil
				}),
			hadoopipc.NewMethod("finishApplicationMaster", func() *yarnpb.FinishApplicationMasterRequestProto {
				return &yarnpb.FinishApplicationMasterRequestProto{}
			},
				func(ctx context.Context, req *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, error) {
					if _, err := a.caller(ctx); err != nil {
						return nil, err
					}
					return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
				}),
		},
	}
}

// serveIPC runs a hadoopipc server on 127.0.0.1:0 until the test ends.
func serveIPC(t testing.TB, cfg hadoopipc.ServerConfig, protocols ...hadoopipc.Protocol) string {
	t.Helper()
	srv := hadoopipc.NewServer(cfg)
	for _, p := range protocols {
		if err := srv.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return ln.Addr().String()
}
