package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/kuberm"
)

// newKubermCmd is `yarnfed kuberm`: a YARN ResourceManager backed by the
// Kubernetes API, one per Kubernetes cluster or namespace.
func newKubermCmd() *cobra.Command {
	cfg := kubermRoleDefaults()
	var loader *config.Loader[kubermRole]
	cmd := &cobra.Command{
		Use:   "kuberm",
		Short: "Run a YARN ResourceManager backed by the Kubernetes API (a Kubernetes cluster as a sub-cluster)",
		Long: `kuberm serves ApplicationClientProtocol (Hadoop IPC, the RM client port) over a Kubernetes
namespace: a submitted application is stored as a Secret (its submission context, with the launch
context's tokens) and its ApplicationMaster and every container it asks for run as pods requesting
Koordinator batch resources (kubernetes.io/batch-cpu/-memory) where the Nodes advertise them, else
cpu/memory; kube-scheduler places them, and the launcher in each pod (yarnfed kuberm launch) does a
NodeManager's work. Reports, attempts, kill, nodes (each Node's batch capacity YARN may use), metrics and the
one queue are read from the API server, so a restarted kuberm loses no application. It registers and
heartbeats itself in the yarnfed state store as a sub-cluster (--no-store: standalone).

The scheduler port serves the ApplicationMasterProtocol (register, allocate, finish) with AMRMTokens
kuberm issues; the NM port serves ContainerManagementProtocol (start, stop, status) to AMs holding
its NM tokens, at NodeIds <node InternalIP>:<port>. An unmanaged AM (unmanaged_am) gets no pod: its
submitter takes the AMRMToken from the application report, and one silent for am_liveness_expiry
fails; see kuberm/DESIGN.md. RBAC: kuberm/rbac.yaml (cluster-wide read of nodes and pods) and
kuberm/rbac-namespace.yaml (secrets and pods in its namespace, bound with a RoleBinding).

Configuration: defaults, then --config (JSON; unknown keys are errors), then flags.`,
		Example: `  yarnfed kuberm --subcluster-id SC-k8s --namespace yarn --image registry.example/hadoop-am:3.4 \
      --kubeconfig ~/.kube/config --client-address 0.0.0.0:8032 --store 10.0.0.1:9090 \
      --store-tls-cert pki/SC-k8s/cert.crt --store-tls-key pki/SC-k8s/cert.key --store-tls-ca pki/SC-k8s/ca.crt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := startRole(loader)
			if err != nil {
				return err
			}
			role := s.role
			cfg := role.Config
			cfg.Logger, cfg.Registerer = s.log, s.reg
			if !role.NoStore {
				sc, err := role.client(s.log, s.reg)
				if err != nil {
					return err
				}
				defer sc.Close()
				cfg.Store = kuberm.NewClientStore(sc)
			}
			rm, err := kuberm.New(cfg)
			if err != nil {
				return err
			}
			if err := rm.Start(cmd.Context()); err != nil {
				return err
			}
			defer rm.Close()
			a := rm.Addrs()
			fmt.Fprintf(cmd.OutOrStdout(), "kuberm %s: namespace %s, cluster timestamp %d\n  client    %s\n  scheduler %s (register, allocate, finish)\n  admin     %s (no admin method served yet)\n  nm        %s (start/stop/status of containers)\n  webapp    %s\n",
				cfg.SubClusterID, cfg.Namespace, rm.ClusterTimestamp(), a.Client, a.Scheduler, a.Admin, a.NM, a.Web)
			return rm.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	loader = config.NewLoader(f, &cfg, kubermRoleDefaults)
	f.StringVar(&cfg.SubClusterID, "subcluster-id", cfg.SubClusterID, "sub-cluster id (required; a Kubernetes label value), e.g. SC-k8s")
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", cfg.Kubeconfig, "kubeconfig file (empty: in-cluster service account)")
	f.StringVar(&cfg.Namespace, "namespace", cfg.Namespace, "namespace of the applications' Secrets and pods")
	f.StringVar(&cfg.Image, "image", cfg.Image, "runtime image of AM and container pods (required): /bin/bash and what the commands need, e.g. a JDK and the framework's jars (or host_paths)")
	f.StringVar(&cfg.PriorityClassName, "priority-class", cfg.PriorityClassName, "priority class of the pods (e.g. koord-batch; empty: none)")
	f.Int64Var(&cfg.RunAsUser, "run-as-user", cfg.RunAsUser, "uid the pods' containers run as (never root)")
	f.StringVar(&cfg.ServiceAccountName, "service-account", cfg.ServiceAccountName, "service account of the pods (its token is not mounted)")
	f.Int64Var(&cfg.ClusterTimestamp, "cluster-timestamp", cfg.ClusterTimestamp, "first part of application ids, ms (0: this process's start time)")
	f.Int64Var(&cfg.Epoch, "epoch", cfg.Epoch, "epoch in container ids' high bits (0: derived from --subcluster-id)")
	f.StringVar(&cfg.ClientAddress, "client-address", cfg.ClientAddress, "ApplicationClientProtocol address (yarn.resourcemanager.address)")
	f.StringVar(&cfg.SchedulerAddress, "scheduler-address", cfg.SchedulerAddress, "ApplicationMasterProtocol address (yarn.resourcemanager.scheduler.address)")
	f.StringVar(&cfg.AdvertiseSchedulerAddress, "advertise-scheduler-address", cfg.AdvertiseSchedulerAddress, "scheduler address registered in the state store (default: the bound one)")
	f.StringVar(&cfg.AdminAddress, "admin-address", cfg.AdminAddress, "ResourceManagerAdministrationProtocol address (yarn.resourcemanager.admin.address); no admin method is served yet")
	f.StringVar(&cfg.AdvertiseAdminAddress, "advertise-admin-address", cfg.AdvertiseAdminAddress, "admin address registered in the state store (default: the bound one)")
	f.StringVar(&cfg.NMAddress, "nm-address", cfg.NMAddress, "NodeManager face address (ContainerManagementProtocol, NM-token logins): AMs reach it at <node InternalIP>:<port>")
	f.StringVar(&cfg.AdvertiseNMAddress, "advertise-nm-address", cfg.AdvertiseNMAddress, "its port is the NodeIds' port (default: the bound one)")
	f.StringVar(&cfg.WebAddress, "webapp-address", cfg.WebAddress, "REST address: /ws/v1/cluster/{info,metrics}, /prom, /healthz (empty: off)")
	f.StringVar(&cfg.AdvertiseClientAddress, "advertise-client-address", cfg.AdvertiseClientAddress, "client address registered in the state store (default: the bound one)")
	f.StringVar(&cfg.AdvertiseWebAddress, "advertise-webapp-address", cfg.AdvertiseWebAddress, "REST address registered in the state store (default: the bound one)")
	f.StringVar(&cfg.Queue, "queue", cfg.Queue, "the one queue reported")
	f.Int64Var(&cfg.MaxAllocationMB, "max-allocation-mb", cfg.MaxAllocationMB, "largest container memory (yarn.scheduler.maximum-allocation-mb)")
	f.Int32Var(&cfg.MaxAllocationVCores, "max-allocation-vcores", cfg.MaxAllocationVCores, "largest container vcores (yarn.scheduler.maximum-allocation-vcores)")
	f.Int32Var(&cfg.MaxAppAttempts, "am-max-attempts", cfg.MaxAppAttempts, "yarn.resourcemanager.am.max-attempts")
	f.Var(&cfg.ResyncInterval, "resync-interval", "how often applications and pods are reconciled")
	f.Var(&cfg.HeartbeatInterval, "heartbeat-interval", "state store heartbeat interval")
	f.BoolVar(&cfg.NoStore, "no-store", cfg.NoStore, "run without the state store (no sub-cluster membership)")
	cfg.storeConn.bindFlags(f)
	cfg.roleLog.bindFlags(f)
	loader.DocumentKeys()
	cmd.AddCommand(newKubermLaunchCmd())
	return cmd
}

// kubermRole is `yarnfed kuberm`'s configuration: kuberm.Config's keys at
// the top level of the file, plus the store connection and log level.
type kubermRole struct {
	kuberm.Config
	NoStore bool `json:"no_store"`
	storeConn
	roleLog
}

func kubermRoleDefaults() kubermRole {
	return kubermRole{Config: kuberm.DefaultConfig(), storeConn: defaultStoreConn(), roleLog: defaultRoleLog()}
}

// Validate checks the whole configuration before anything connects.
func (r *kubermRole) Validate() error {
	errs := []error{r.roleLog.validate(), r.Config.Validate()}
	if !r.NoStore {
		errs = append(errs, r.storeConn.validate())
	}
	return errors.Join(errs...)
}
