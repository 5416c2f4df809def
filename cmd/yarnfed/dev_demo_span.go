package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/amrmproxy/uam"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// runSpanDemo shows one application spanning sub-clusters: it is
// submitted through the router (which picks its home), its AM talks to the
// AMRMProxy of a node in that home, asks for containers, and gets them from
// every sub-cluster (queue "default": WeightedLocality, the asks split by
// equal weights). It releases any surplus (each release reaches the
// sub-cluster owning the container) and finishes (every UAM, then the
// home).
func runSpanDemo(ctx context.Context, fed *devFederation, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{fed.router.ClientRMAddr().String()},
		Protocol: hadoopipc.ProtocolApplicationClient, User: "demo"})
	if err != nil {
		return err
	}
	defer rc.Close()
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := rc.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		return fmt.Errorf("getNewApplication: %w", err)
	}
	app := na.GetApplicationId()
	appID := fmt.Sprintf("application_%d_%04d", app.GetClusterTimestamp(), app.GetId())
	// An unmanaged AM: the demo process is the AM, holding the token the
	// RM issued, as a real AM holds it.
	tok, err := uam.Launch(ctx, rc, uam.Spec{App: app, Queue: "default", Name: "span-demo", Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	h, err := fed.sc.GetApplicationHome(ctx, appID, false)
	if err != nil {
		return err
	}
	home := h.GetHomeSubClusterId()
	p := fed.proxies[home]
	fmt.Fprintf(out, "\nDemo: one application spanning sub-clusters through the AMRMProxy\n")
	fmt.Fprintf(out, "  %s submitted through the router; home %s; its AM dials the AMRMProxy of a %s node at %s\n", appID, home, home, p.AMRMAddr())
	am, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{p.AMRMAddr()}, Protocol: hadoopipc.ProtocolApplicationMaster, Token: tok})
	if err != nil {
		return err
	}
	defer am.Close()
	if err := am.Call(ctx, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("demo-am"), RpcPort: proto.Int32(-1), TrackingUrl: proto.String("")},
		&yarnpb.RegisterApplicationMasterResponseProto{}); err != nil {
		return fmt.Errorf("register: %w", err)
	}
	owner := func(c *yarnpb.ContainerIdProto) string {
		for id, rms := range fed.rms {
			if rms[0].Epoch() == c.GetId()>>40 {
				return id
			}
		}
		return "?"
	}
	// Two per sub-cluster: the equal weights' floor pass gives each at
	// least one, so the application spans all of them.
	want := 2 * len(fed.ids)
	fmt.Fprintf(out, "  asks for %d containers in queue \"default\" (%s; its AMRM policy, LocalityMulticast, splits the ask across the sub-clusters by weight)\n",
		want, fed.describePolicy(ctx, "default"))
	ask := []*yarnpb.ResourceRequestProto{{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(int32(want)), RelaxLocality: proto.Bool(true)}}
	var got []*yarnpb.ContainerProto
	per := map[string]int{}
	var rid int32
	var release []*yarnpb.ContainerIdProto
	completed := 0
	heartbeat := func() (*yarnpb.AllocateResponseProto, error) {
		resp := &yarnpb.AllocateResponseProto{}
		err := am.Call(ctx, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(rid), Ask: ask, Release: release, Progress: proto.Float32(0.5)}, resp)
		if err != nil {
			return nil, err
		}
		rid, ask, release = resp.GetResponseId(), nil, nil
		completed += len(resp.CompletedContainerStatuses)
		return resp, nil
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		resp, err := heartbeat()
		if err != nil {
			return fmt.Errorf("allocate: %w", err)
		}
		for _, c := range resp.AllocatedContainers {
			got = append(got, c)
			sc := owner(c.GetId())
			per[sc]++
			fmt.Fprintf(out, "    heartbeat %3d: container %-44s on %-18s from %s\n", rid, containerName(c.GetId()), c.GetNodeId().GetHost(), sc)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ids := make([]string, 0, len(per))
	for id := range per {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s %d", id, per[id])
	}
	fmt.Fprintf(out, "  containers by sub-cluster: %s (unmanaged AMs with the same id run on %s)\n", strings.Join(parts, ", "), strings.Join(others(fed.ids, home), ", "))
	if len(got) > want {
		for _, c := range got[want:] {
			release = append(release, c.GetId())
		}
		n := len(release)
		fmt.Fprintf(out, "  %d more than asked (an RM over-allocated): the AM releases them; each release goes to the sub-cluster that owns it\n", n)
		for completed < n && time.Now().Before(deadline) {
			if _, err := heartbeat(); err != nil {
				return err
			}
			time.Sleep(50 * time.Millisecond)
		}
		fmt.Fprintf(out, "  %d released containers reported completed\n", completed)
	}
	fr := &yarnpb.FinishApplicationMasterResponseProto{}
	if err := am.Call(ctx, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum(), Diagnostics: proto.String("")}, fr); err != nil {
		return fmt.Errorf("finish: %w", err)
	}
	fmt.Fprintf(out, "  finish: unmanaged AMs unregistered, then the home; isUnregistered=%v\n", fr.GetIsUnregistered())
	return nil
}

func others(ids []string, home string) []string {
	var out []string
	for _, id := range ids {
		if id != home {
			out = append(out, id)
		}
	}
	return out
}

func containerName(c *yarnpb.ContainerIdProto) string {
	at := c.GetAppAttemptId()
	return fmt.Sprintf("container_e%02d_%d_%04d_%02d_%06d", c.GetId()>>40, at.GetApplicationId().GetClusterTimestamp(),
		at.GetApplicationId().GetId(), at.GetAttemptId(), c.GetId()&(1<<40-1))
}
