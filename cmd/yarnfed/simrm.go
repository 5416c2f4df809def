package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/simrm"
)

// newSimrmCmd is `yarnfed simrm`: one simulated YARN ResourceManager.
func newSimrmCmd() *cobra.Command {
	cfg := simrmRoleDefaults()
	var loader *config.Loader[simrmRole]
	cmd := &cobra.Command{
		Use:   "simrm",
		Short: "Run a simulated YARN ResourceManager (for dev, tests and benchmarks; not a real RM)",
		Long: `simrm is a SIMULATOR of an Apache Hadoop 3.4 ResourceManager. It speaks the real wire
protocols (Hadoop IPC ApplicationClientProtocol on the client port, ApplicationMasterProtocol with
AMRMToken/DIGEST-MD5 logins on the scheduler port, a few ResourceManagerAdministrationProtocol calls
on the admin port, and the /ws/v1/cluster REST API) over simulated NodeManagers: no containers ever
run. Managed applications get a built-in ApplicationMaster that asks for --sim-am-containers
containers and finishes when they complete; unmanaged applications get their AMRMToken in the
application report, as on a real RM.

Ports default to a Hadoop RM's (8032 client, 8030 scheduler, 8033 admin, 8088 REST); port 0 picks a
free one. The bound addresses are printed on start.

Chaos control (not part of Hadoop's API), on the REST port:
  GET|PUT /simrm/v1/faults      {"latency":"200ms","errorRate":0.1,"stalled":false}
  POST    /simrm/v1/restart?keepState=true&downFor=2s
  POST    /simrm/v1/transition?to=standby|active
  POST    /simrm/v1/nodes/{host}?state=LOST|RUNNING
Prometheus metrics: GET /prom on the REST port.

Configuration: defaults, then --config (JSON; unknown keys are errors), then flags.`,
		Example: `  yarnfed simrm --cluster-id sc1
  yarnfed simrm --cluster-id sc2 --client-address 127.0.0.1:18032 --scheduler-address 127.0.0.1:18030 \
      --admin-address 127.0.0.1:18033 --webapp-address 127.0.0.1:18088 --nodes 100 --queues default:70,batch:30:100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRole(loader, func(s roleStart[simrmRole]) error {
				cfg := s.role.Config
				cfg.Logger, cfg.Registerer, cfg.Gatherer = s.log, s.reg, s.reg

				rm, err := simrm.New(cfg)
				if err != nil {
					return err
				}
				if err := rm.Start(cmd.Context()); err != nil {
					return err
				}
				defer rm.Close()
				printAddrs(cmd, rm)
				<-cmd.Context().Done()
				cfg.Logger.Info("simrm: shutting down")
				return nil
			})
		},
	}
	f := cmd.Flags()
	loader = config.NewLoader(f, &cfg, simrmRoleDefaults)
	f.StringVar(&cfg.ClusterID, "cluster-id", cfg.ClusterID, "RM cluster id (yarn.resourcemanager.cluster-id); also the sub-cluster id in reports")
	f.Int64Var(&cfg.ClusterTimestamp, "cluster-timestamp", cfg.ClusterTimestamp, "cluster timestamp in ms, the first part of application ids (0: now)")
	f.Int64Var(&cfg.Epoch, "epoch", cfg.Epoch, "RM epoch carried in container ids' high bits (-1: derived from --cluster-id)")
	f.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "number of simulated NodeManagers")
	f.Int64Var(&cfg.NodeMemoryMB, "node-memory-mb", cfg.NodeMemoryMB, "memory of each node in MB")
	f.Int32Var(&cfg.NodeVCores, "node-vcores", cfg.NodeVCores, "vcores of each node")
	f.IntVar(&cfg.Racks, "racks", cfg.Racks, "racks the nodes are spread over (/rack-N)")
	f.Var(&cfg.Queues, "queues", "leaf queues under root: name:capacity[:maxCapacity],... in percent (capacities sum to 100)")
	f.Int64Var(&cfg.MaxAllocation.MemoryMB, "max-allocation-mb", cfg.MaxAllocation.MemoryMB, "largest container memory (yarn.scheduler.maximum-allocation-mb)")
	f.Int32Var(&cfg.MaxAllocation.VCores, "max-allocation-vcores", cfg.MaxAllocation.VCores, "largest container vcores (yarn.scheduler.maximum-allocation-vcores)")
	f.Int32Var(&cfg.MaxAppAttempts, "am-max-attempts", cfg.MaxAppAttempts, "yarn.resourcemanager.am.max-attempts")
	f.IntVar(&cfg.MaxApplications, "max-applications", cfg.MaxApplications, "applications waiting or running at once (yarn.scheduler.capacity.maximum-applications); more are rejected (0: no limit)")
	f.IntVar(&cfg.MaxCompletedApps, "max-completed-applications", cfg.MaxCompletedApps, "finished applications remembered (yarn.resourcemanager.max-completed-applications)")
	f.Var(&cfg.AMLivenessTimeout, "am-liveness-timeout", "fail attempts whose AM is silent this long (0: never)")
	f.Var(&cfg.ContainerRuntime, "container-runtime", "complete containers of real AMs after this long with exit 0 (0: until released)")
	f.IntVar(&cfg.SimAM.Containers, "sim-am-containers", cfg.SimAM.Containers, "containers the built-in AM of a managed application asks for")
	f.Int64Var(&cfg.SimAM.Resource.MemoryMB, "sim-am-container-mb", cfg.SimAM.Resource.MemoryMB, "memory of each built-in AM container")
	f.Int32Var(&cfg.SimAM.Resource.VCores, "sim-am-container-vcores", cfg.SimAM.Resource.VCores, "vcores of each built-in AM container")
	f.Var(&cfg.SimAM.ContainerRuntime, "sim-am-container-runtime", "how long each built-in AM container runs")
	f.Var(&cfg.SimAM.Heartbeat, "sim-am-heartbeat", "allocate interval of the built-in AM")
	f.Var(&cfg.TickInterval, "tick", "simulated NodeManager heartbeat: one scheduling pass per tick")
	f.StringVar(&cfg.ClientAddr, "client-address", cfg.ClientAddr, "ApplicationClientProtocol address (yarn.resourcemanager.address); empty disables")
	f.StringVar(&cfg.SchedulerAddr, "scheduler-address", cfg.SchedulerAddr, "ApplicationMasterProtocol address (yarn.resourcemanager.scheduler.address); empty disables")
	f.StringVar(&cfg.AdminAddr, "admin-address", cfg.AdminAddr, "admin protocol address (yarn.resourcemanager.admin.address); empty disables")
	f.StringVar(&cfg.WebAddr, "webapp-address", cfg.WebAddr, "REST address (yarn.resourcemanager.webapp.address); empty disables")
	f.BoolVar(&cfg.Standby, "standby", cfg.Standby, "start as an HA standby: every call answers StandbyException until transitioned")
	f.Var(&cfg.Faults.Latency, "fault-latency", "added latency on every RPC and REST call")
	f.Float64Var(&cfg.Faults.ErrorRate, "fault-error-rate", cfg.Faults.ErrorRate, "fraction [0,1] of calls failing with an injected IOException")
	cfg.roleLog.bindFlags(f)
	loader.DocumentKeys()
	return cmd
}

// simrmRole is `yarnfed simrm`'s configuration: simrm.Config's keys at the
// top level of the file, plus the log level.
type simrmRole struct {
	simrm.Config
	roleLog
}

func simrmRoleDefaults() simrmRole {
	return simrmRole{Config: simrm.DefaultConfig(), roleLog: defaultRoleLog()}
}

// Validate checks the whole configuration before anything starts.
func (r *simrmRole) Validate() error {
	c := r.Config // Validate fills derived values; the role's stay as given
	return errors.Join(r.roleLog.validate(), c.Validate())
}

func printAddrs(cmd *cobra.Command, rm *simrm.RM) {
	c, a := rm.Config(), rm.Addrs()
	var b strings.Builder
	fmt.Fprintf(&b, "simrm %s: simulated YARN ResourceManager, epoch %d, cluster timestamp %d, %d nodes\n",
		c.ClusterID, rm.Epoch(), c.ClusterTimestamp, c.Nodes)
	for _, l := range []struct{ name, key, addr string }{
		{"client", "yarn.resourcemanager.address", a.Client},
		{"scheduler", "yarn.resourcemanager.scheduler.address", a.Scheduler},
		{"admin", "yarn.resourcemanager.admin.address", a.Admin},
		{"webapp", "yarn.resourcemanager.webapp.address", a.Web},
	} {
		if l.addr == "" {
			l.addr = "(disabled)"
		}
		fmt.Fprintf(&b, "  %-9s %-40s %s\n", l.name, l.key, l.addr)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s", b.String())
}
