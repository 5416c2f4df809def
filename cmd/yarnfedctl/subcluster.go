package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// defaultHeartbeatExpiry is Hadoop's
// yarn.router.subcluster.heartbeat.expiration.time (30 minutes): how stale
// a heartbeat must be for `deregister --expired` to mark a sub-cluster lost.
const defaultHeartbeatExpiry = 30 * time.Minute

func (c *ctl) newSubClusterCmd() *cobra.Command {
	g := newGroup("subcluster", "Sub-cluster membership (yarn routeradmin -subCluster)", "subclusters", "sc")
	g.AddCommand(c.newSubClusterListCmd(), c.newSubClusterGetCmd(), c.newSubClusterDeregisterCmd())
	return g
}

// scView is a sub-cluster as printed: SubClusterInfo's fields under
// Hadoop's names, plus the capability numbers operators look at.
type scView struct {
	SubClusterID           string          `json:"subClusterId"`
	State                  string          `json:"state"`
	LastHeartBeat          string          `json:"lastHeartBeat,omitempty"`
	LastHeartBeatAgeSec    *int64          `json:"lastHeartBeatAgeSeconds,omitempty"`
	LastStartTime          string          `json:"lastStartTime,omitempty"`
	AMRMServiceAddress     string          `json:"amRMServiceAddress"`
	ClientRMServiceAddress string          `json:"clientRMServiceAddress"`
	RMAdminServiceAddress  string          `json:"rmAdminServiceAddress"`
	RMWebServiceAddress    string          `json:"rmWebServiceAddress"`
	Capability             json.RawMessage `json:"capability,omitempty"`
	Summary                *capSummary     `json:"summary,omitempty"`
	CapabilityError        string          `json:"capabilityError,omitempty"`
	// Published is the capacity the GPG measured outside YARN (Kubernetes
	// batch capacity YARN can really use); yarnfed extension.
	Published *publishedView `json:"publishedCapacity,omitempty"`

	age string
}

type publishedView struct {
	MemoryMB    int64  `json:"memoryMB"`
	VCores      int64  `json:"vCores"`
	Nodes       int32  `json:"nodes"`
	ObservedAt  string `json:"observedAt,omitempty"`
	PublishedAt string `json:"publishedAt,omitempty"`

	age string
}

type capSummary struct {
	AvailableMB     int64 `json:"availableMB"`
	TotalMB         int64 `json:"totalMB"`
	AvailableVCores int64 `json:"availableVirtualCores"`
	TotalVCores     int64 `json:"totalVirtualCores"`
	AppsPending     int64 `json:"appsPending"`
	AppsRunning     int64 `json:"appsRunning"`
	ActiveNodes     int64 `json:"activeNodes"`
}

func (c *ctl) scViewOf(sc *pb.SubClusterInfo) scView {
	v := scView{
		SubClusterID: sc.GetSubClusterId(), State: stateName(sc.GetState()),
		LastHeartBeat: formatMs(sc.GetLastHeartbeatMs()), LastStartTime: formatMs(sc.GetLastStartTimeMs()),
		AMRMServiceAddress: sc.GetAmrmServiceAddress(), ClientRMServiceAddress: sc.GetClientRmServiceAddress(),
		RMAdminServiceAddress: sc.GetRmAdminServiceAddress(), RMWebServiceAddress: sc.GetRmWebServiceAddress(),
		age: "never",
	}
	if hb := sc.GetLastHeartbeatMs(); hb > 0 {
		d := c.now().Sub(time.UnixMilli(hb))
		v.age = formatAge(d)
		secs := max(int64(d/time.Second), 0)
		v.LastHeartBeatAgeSec = &secs
	}
	if p := sc.GetPublishedCapacity(); p != nil {
		v.Published = &publishedView{MemoryMB: p.GetMemoryMb(), VCores: p.GetVcores(), Nodes: p.GetNodes(),
			ObservedAt: formatMs(p.GetObservedMs()), PublishedAt: formatMs(p.GetPublishedMs()), age: "never"}
		if p.GetPublishedMs() > 0 {
			v.Published.age = formatAge(c.now().Sub(time.UnixMilli(p.GetPublishedMs())))
		}
	}
	if capJSON := sc.GetCapability(); capJSON != "" {
		if json.Valid([]byte(capJSON)) {
			v.Capability = json.RawMessage(capJSON)
		}
		if cp, err := policies.ParseCapability([]byte(capJSON)); err != nil {
			v.CapabilityError = err.Error()
		} else {
			v.Summary = &capSummary{cp.AvailableMB, cp.TotalMB, cp.AvailableVCores, cp.TotalVCores, cp.AppsPending, cp.AppsRunning, cp.ActiveNodes}
		}
	}
	return v
}

func stateName(s pb.SubClusterState) string {
	if n, ok := pb.SubClusterState_name[int32(s)]; ok && s != pb.SubClusterState_SUB_CLUSTER_STATE_UNSPECIFIED {
		return n
	}
	return fmt.Sprintf("UNKNOWN(%d)", int32(s))
}

// parseState accepts SC_LOST, LOST, lost, or the proto number.
func parseState(s string) (pb.SubClusterState, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if !strings.HasPrefix(u, "SC_") {
		u = "SC_" + u
	}
	if v, ok := pb.SubClusterState_value[u]; ok {
		return pb.SubClusterState(v), nil
	}
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= int(pb.SubClusterState_SC_NEW) && n <= int(pb.SubClusterState_SC_DECOMMISSIONED) {
		return pb.SubClusterState(n), nil
	}
	return 0, fmt.Errorf("unknown sub-cluster state %q (SC_NEW, SC_RUNNING, SC_UNHEALTHY, SC_DECOMMISSIONING, SC_LOST, SC_UNREGISTERED, SC_DECOMMISSIONED)", s)
}

// isFinal: Hadoop's SubClusterState.isFinal.
func isFinal(s pb.SubClusterState) bool {
	return s == pb.SubClusterState_SC_LOST || s == pb.SubClusterState_SC_UNREGISTERED || s == pb.SubClusterState_SC_DECOMMISSIONED
}

// isUsable: Hadoop's SubClusterState.isUsable.
func isUsable(s pb.SubClusterState) bool {
	return s == pb.SubClusterState_SC_NEW || s == pb.SubClusterState_SC_RUNNING
}

func ratio(a, b int64) string { return fmt.Sprintf("%d/%d", a, b) }

func (c *ctl) newSubClusterListCmd() *cobra.Command {
	var active bool
	cmd := &cobra.Command{
		Use:     "list [--active]",
		Aliases: []string{"ls"},
		Short:   "List sub-clusters with state, heartbeat age, addresses and capacity (yarn routeradmin -subCluster -getSubClusters)",
		Long: `List registered sub-clusters: state, time since the last heartbeat, the RM addresses (client RM,
AMRM, admin, web), available/total memory (MB) and vcores, and pending/running applications from the
capability the RM last reported. PUBLISHED is the memory (MB)/vcores the GPG measured YARN can really
use there (Kubernetes batch capacity), when it published one. --active keeps only SC_RUNNING ones, the
sub-clusters routers route to.`,
		Example: `  yarnfedctl subcluster list
  yarnfedctl subcluster list --active -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
				scs, err := cl.ListSubClusters(ctx, active)
				if err != nil {
					return err
				}
				views := make([]scView, 0, len(scs))
				for _, sc := range scs {
					views = append(views, c.scViewOf(sc))
				}
				slices.SortFunc(views, func(a, b scView) int { return strings.Compare(a.SubClusterID, b.SubClusterID) })
				if c.output == "json" {
					return writeJSON(c.out, views)
				}
				t := newTable(c.out, "SUBCLUSTER", "STATE", "HEARTBEAT", "CLIENT RM", "AMRM", "RM ADMIN", "RM WEB", "MEMORY MB", "VCORES", "APPS P/R", "PUBLISHED")
				for _, v := range views {
					mem, vc, apps, pub := "", "", "", ""
					if s := v.Summary; s != nil {
						mem, vc, apps = ratio(s.AvailableMB, s.TotalMB), ratio(s.AvailableVCores, s.TotalVCores), ratio(s.AppsPending, s.AppsRunning)
					}
					if p := v.Published; p != nil {
						pub = ratio(p.MemoryMB, p.VCores)
					}
					t.row(v.SubClusterID, v.State, v.age, v.ClientRMServiceAddress, v.AMRMServiceAddress, v.RMAdminServiceAddress, v.RMWebServiceAddress, mem, vc, apps, pub)
				}
				return t.flush()
			})
		},
	}
	cmd.Flags().BoolVar(&active, "active", false, "only SC_RUNNING sub-clusters")
	return cmd
}

func (c *ctl) newSubClusterGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "get ID",
		Short:   "Show one sub-cluster, capability included",
		Example: `  yarnfedctl subcluster get SC-1 -o json`,
		Args:    exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
				sc, err := cl.GetSubCluster(ctx, args[0])
				if err != nil {
					return err
				}
				v := c.scViewOf(sc)
				if c.output == "json" {
					return writeJSON(c.out, v)
				}
				t := newTable(c.out, "Sub-cluster", v.SubClusterID)
				t.row("State", v.State)
				t.row("Last heartbeat", strings.TrimSpace(v.LastHeartBeat+" ("+v.age+" ago)"))
				t.row("Last start", v.LastStartTime)
				t.row("Client RM", v.ClientRMServiceAddress)
				t.row("AMRM", v.AMRMServiceAddress)
				t.row("RM admin", v.RMAdminServiceAddress)
				t.row("RM web", v.RMWebServiceAddress)
				if s := v.Summary; s != nil {
					t.row("Memory MB (available/total)", ratio(s.AvailableMB, s.TotalMB))
					t.row("VCores (available/total)", ratio(s.AvailableVCores, s.TotalVCores))
					t.row("Apps (pending/running)", ratio(s.AppsPending, s.AppsRunning))
					t.row("Active nodes", strconv.FormatInt(s.ActiveNodes, 10))
				} else if v.CapabilityError != "" {
					t.row("Capability", v.CapabilityError)
				}
				if p := v.Published; p != nil {
					t.row("Published capacity (MB/vcores)", ratio(p.MemoryMB, p.VCores))
					t.row("Published nodes", strconv.FormatInt(int64(p.Nodes), 10))
					t.row("Published at", strings.TrimSpace(p.PublishedAt+" ("+p.age+" ago)"))
				}
				return t.flush()
			})
		},
	}
}

func (c *ctl) newSubClusterDeregisterCmd() *cobra.Command {
	var stateFlag string
	var expired bool
	var expiry time.Duration
	cmd := &cobra.Command{
		Use:   "deregister ID [--state SC_LOST] | --expired [--expiry 30m]",
		Short: "Take a sub-cluster out of routing by setting a final state (yarn routeradmin -deregisterSubCluster)",
		Long: `Set a sub-cluster's state to a final one (default SC_LOST, as 'yarn routeradmin -subCluster
-deregisterSubCluster -sc ID' does; also SC_UNREGISTERED or SC_DECOMMISSIONED). Routers stop sending
it new applications at once. A sub-cluster whose RM (or agent) still heartbeats comes back with its
next heartbeat, as in Hadoop: stop or decommission it first.

--expired (routeradmin -deregisterSubCluster without -sc) marks every SC_NEW/SC_RUNNING sub-cluster
whose last heartbeat is older than --expiry as SC_LOST.`,
		Example: `  yarnfedctl subcluster deregister SC-1
  yarnfedctl subcluster deregister SC-2 --state SC_DECOMMISSIONED
  yarnfedctl subcluster deregister --expired --expiry 10m`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case expired && len(args) > 0:
				return usagef("give a sub-cluster ID or --expired, not both")
			case !expired && len(args) != 1:
				return usagef("%s: want one sub-cluster ID (or --expired), got %d arguments", cmd.CommandPath(), len(args))
			case expired && cmd.Flags().Changed("state"):
				return usagef("--expired always sets SC_LOST; --state applies to a named sub-cluster")
			case expiry <= 0:
				return usagef("--expiry %s: must be positive", expiry)
			}
			state, err := parseState(stateFlag)
			if err != nil {
				return usageError{fmt.Errorf("--state: %w", err)}
			}
			if !isFinal(state) {
				return usagef("--state %s: deregistration sets a final state (SC_LOST, SC_UNREGISTERED, SC_DECOMMISSIONED); live states come from heartbeats", stateName(state))
			}
			return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
				if expired {
					return c.deregisterExpired(cmd, cl, expiry)
				}
				id := args[0]
				sc, err := cl.GetSubCluster(ctx, id)
				if err != nil {
					return err
				}
				if sc.GetState() == state {
					fmt.Fprintf(c.out, "sub-cluster %s is already %s\n", id, stateName(state))
					return nil
				}
				if err := cl.DeregisterSubCluster(ctx, id, state); err != nil {
					return fmt.Errorf("deregister %s: %w", id, err)
				}
				fmt.Fprintf(c.out, "sub-cluster %s: %s -> %s\n", id, stateName(sc.GetState()), stateName(state))
				if hb := sc.GetLastHeartbeatMs(); hb > 0 && !isFinal(sc.GetState()) {
					if age := c.now().Sub(time.UnixMilli(hb)); age < 5*time.Minute {
						fmt.Fprintf(c.err, "note: %s last heartbeated %s ago; if its RM or agent is still running, its next heartbeat restores the state it reports\n", id, formatAge(age))
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&stateFlag, "state", "SC_LOST", "final state to set: SC_LOST, SC_UNREGISTERED or SC_DECOMMISSIONED")
	cmd.Flags().BoolVar(&expired, "expired", false, "mark every usable sub-cluster with an expired heartbeat SC_LOST")
	cmd.Flags().DurationVar(&expiry, "expiry", defaultHeartbeatExpiry, "heartbeat age after which --expired marks a sub-cluster lost")
	return cmd
}

func (c *ctl) deregisterExpired(cmd *cobra.Command, cl *client.Client, expiry time.Duration) error {
	ctx, cancel := c.ctx(cmd)
	defer cancel()
	scs, err := cl.ListSubClusters(ctx, false)
	if err != nil {
		return err
	}
	slices.SortFunc(scs, func(a, b *pb.SubClusterInfo) int { return strings.Compare(a.GetSubClusterId(), b.GetSubClusterId()) })
	var errs []error
	n := 0
	for _, sc := range scs {
		if !isUsable(sc.GetState()) {
			continue
		}
		age := c.now().Sub(time.UnixMilli(sc.GetLastHeartbeatMs()))
		if age <= expiry {
			continue
		}
		id := sc.GetSubClusterId()
		if err := cl.DeregisterSubCluster(ctx, id, pb.SubClusterState_SC_LOST); err != nil {
			errs = append(errs, fmt.Errorf("deregister %s: %w", id, err))
			continue
		}
		n++
		fmt.Fprintf(c.out, "sub-cluster %s: %s -> SC_LOST (last heartbeat %s ago)\n", id, stateName(sc.GetState()), formatAge(age))
	}
	if n == 0 && len(errs) == 0 {
		fmt.Fprintf(c.out, "no usable sub-cluster has a heartbeat older than %s\n", expiry)
	}
	return errors.Join(errs...)
}
