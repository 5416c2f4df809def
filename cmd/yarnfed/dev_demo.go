package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// runDemo submits applications through the router exactly as a YARN client
// does (getNewApplication, then submitApplication over Hadoop IPC), rotating
// over the dev queues, and prints where each one landed and which policy
// decided it. It stops after cfg.DemoApps applications (0: until ctx ends).
func runDemo(ctx context.Context, fed *devFederation, cfg devConfig, out io.Writer) error {
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{
		Addresses: []string{fed.router.ClientRMAddr().String()},
		Protocol:  hadoopipc.ProtocolApplicationClient,
		User:      "demo",
	})
	if err != nil {
		return err
	}
	defer c.Close()

	queues := []string{"default", "analytics", "etl"}
	var tally devTally
	fmt.Fprintln(out, "\nDemo: submitting applications through the router (Ctrl-C stops)")
	fmt.Fprintf(out, "  %-32s %-10s %-6s %s\n", "application", "queue", "home", "why")
	for n := 0; cfg.DemoApps == 0 || n < cfg.DemoApps; n++ {
		q := queues[n%len(queues)]
		id, err := demoSubmit(ctx, c, q, n)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(out, "  submission to queue %s failed: %v\n", q, err)
		} else {
			home, err := fed.sc.GetApplicationHome(ctx, id, false)
			sc := "?"
			if err == nil {
				sc = home.GetHomeSubClusterId()
			}
			so := tally.add(q, sc)
			fmt.Fprintf(out, "  %-32s %-10s %-6s %s [%s]\n", id, q, sc, fed.describePolicy(ctx, q), so)
		}
		if (n+1)%(3*len(queues)) == 0 && n+1 != cfg.DemoApps {
			fmt.Fprintln(out, "Where applications landed so far:")
			for _, l := range tally.summary(fed.ids) {
				fmt.Fprintln(out, l)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cfg.DemoInterval):
		}
	}
	fmt.Fprintln(out, "Where applications landed:")
	for _, l := range tally.summary(fed.ids) {
		fmt.Fprintln(out, l)
	}
	return nil
}

func demoSubmit(ctx context.Context, c *hadoopipc.Client, queue string, n int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	newApp := &yarnpb.GetNewApplicationResponseProto{}
	if err := c.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, newApp); err != nil {
		return "", fmt.Errorf("getNewApplication: %w", err)
	}
	asc := &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId:   newApp.GetApplicationId(),
		ApplicationName: proto.String(fmt.Sprintf("demo-%d", n)),
		Queue:           proto.String(queue),
		ApplicationType: proto.String("YARN"),
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{},
		Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
	}
	if err := c.Call(ctx, "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: asc}, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		return "", fmt.Errorf("submitApplication: %w", err)
	}
	id := newApp.GetApplicationId()
	return fmt.Sprintf("application_%d_%04d", id.GetClusterTimestamp(), id.GetId()), nil
}
