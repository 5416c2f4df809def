package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// A router's use of the store: submit-time insert-if-absent, policy lookup
// with the "*" fallback, and the cached membership list.
func Example() {
	ctx := context.Background()
	c, err := client.New(client.Config{Addrs: []string{"10.0.0.1:9090", "10.0.0.2:9090", "10.0.0.3:9090"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	active, err := c.ListSubClusters(ctx, true) // cached, watch-invalidated
	if err != nil {
		log.Fatal(err)
	}
	policy, err := c.PolicyFor(ctx, "root.analytics")
	switch {
	case errors.Is(err, client.ErrNotFound):
		// use the configured default policy manager
	case err != nil:
		log.Fatal(err)
	}
	_ = policy
	if len(active) == 0 {
		return
	}
	stored, inserted, err := c.AddApplicationHome(ctx, &pb.ApplicationHome{
		ApplicationId:    "application_1700000000000_0001",
		HomeSubClusterId: active[0].GetSubClusterId(),
	})
	if err != nil {
		log.Fatal(err)
	}
	if !inserted {
		fmt.Println("resubmission: keep home", stored.GetHomeSubClusterId())
	}
}
