package kuberm

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/yarnfed/yarnfed/internal/config"
)

// Config configures an RM. `yarnfed kuberm` reads it from a JSON file (the
// keys below) and flags.
type Config struct {
	// SubClusterID names the sub-cluster in the state store and labels
	// every object kuberm creates, so two kuberms may share a namespace.
	// It must be a valid Kubernetes label value.
	SubClusterID string `json:"subcluster_id"`
	// Kubeconfig is the file to reach the API server with; empty means
	// in-cluster (the pod's service account).
	Kubeconfig string `json:"kubeconfig"`
	// Namespace holds every application Secret and pod.
	Namespace string `json:"namespace"`
	// ClusterTimestamp is the first part of every application id this RM
	// hands out (Hadoop: the RM's start time). 0 = this process's start
	// time in milliseconds, so ids never repeat across restarts.
	ClusterTimestamp int64 `json:"cluster_timestamp"`
	// Epoch goes into the high bits of container ids (as an RM's restart
	// epoch) so the containers of a federated application stay unique
	// across sub-clusters; 0 derives 1..4095 from SubClusterID.
	Epoch int64 `json:"epoch"`
	// ClientAddress serves ApplicationClientProtocol (Hadoop IPC).
	ClientAddress string `json:"client_address"`
	// SchedulerAddress is the ApplicationMasterProtocol port (Hadoop's
	// yarn.resourcemanager.scheduler.address): AMRMToken logins only;
	// register, allocate and finish are served (DESIGN.md).
	SchedulerAddress string `json:"scheduler_address"`
	// AdminAddress is the ResourceManagerAdministrationProtocol port
	// (yarn.resourcemanager.admin.address). This milestone serves no admin
	// method on it (RpcNoSuchMethodException); it is bound because the state
	// store requires every sub-cluster's four RM addresses.
	AdminAddress string `json:"admin_address"`
	// WebAddress serves /ws/v1/cluster/{info,metrics}, /prom and /healthz;
	// empty = off.
	WebAddress string `json:"web_address"`
	// Advertised addresses go into the state store (default: the bound
	// ones), for a kuberm behind a Service or NAT.
	AdvertiseClientAddress    string `json:"advertise_client_address"`
	AdvertiseSchedulerAddress string `json:"advertise_scheduler_address"`
	AdvertiseAdminAddress     string `json:"advertise_admin_address"`
	AdvertiseWebAddress       string `json:"advertise_web_address"`
	// NMAddress serves the NodeManager face (ContainerManagementProtocol,
	// NM-token logins) for every node: an AM reaches it at NodeId
	// <node InternalIP>:<port>, so kuberm binds where node IPs lead to it
	// (DESIGN.md, "NodeIds").
	NMAddress string `json:"nm_address"`
	// AdvertiseNMAddress's port is the NodeIds' port (default: the bound one).
	AdvertiseNMAddress string `json:"advertise_nm_address"`
	// Image is the runtime image of AM and container pods (the operator's):
	// it must hold /bin/bash and what the commands need (a JDK and the
	// framework's jars), unless host_paths bring them.
	Image string `json:"image"`
	// PriorityClassName is given to every pod (e.g. koord-batch); empty =
	// none (the cluster's default).
	PriorityClassName string `json:"priority_class_name"`
	// RunAsUser is the uid the pods' containers run as (never root: YARN
	// containers run as an unprivileged user on a NodeManager too). The
	// image's files the AM needs must be readable by it.
	RunAsUser int64 `json:"run_as_user"`
	// ServiceAccountName runs the pods; its token is not mounted.
	ServiceAccountName string `json:"service_account_name"`
	// Queue is the one queue this RM reports (Hadoop's "default").
	Queue string `json:"queue"`
	// MinAllocation and MaxAllocation bound container sizes, as Hadoop's
	// yarn.scheduler.{minimum,maximum}-allocation-{mb,vcores}.
	MinAllocationMB     int64 `json:"min_allocation_mb"`
	MinAllocationVCores int32 `json:"min_allocation_vcores"`
	MaxAllocationMB     int64 `json:"max_allocation_mb"`
	MaxAllocationVCores int32 `json:"max_allocation_vcores"`
	// MaxAppAttempts is yarn.resourcemanager.am.max-attempts (a
	// submission's own value is capped by it).
	MaxAppAttempts int32 `json:"max_app_attempts"`
	// LogDir is where an AM's <LOG_DIR> points inside its pod.
	LogDir string `json:"log_dir"`

	// Container pods (allocate, alloc*.go; DESIGN.md "allocate").
	// LauncherImage holds the launcher (/yarnfed): an init container of
	// every container pod copies it into the pod; empty = Image (an image
	// that holds /yarnfed itself).
	LauncherImage string `json:"launcher_image"`
	// HostPaths are host directories mounted read-only into container pods
	// (the operator's JDK or Hadoop on every node). A hostPath volume is
	// refused by Pod Security "baseline" and "restricted": the namespace
	// must allow it.
	HostPaths []HostPath `json:"host_paths"`
	// Env is added to every container pod's environment after the
	// variables a NodeManager sets (yarn.nodemanager.env-whitelist's
	// role: JAVA_HOME, HADOOP_HOME, HADOOP_CONF_DIR, ...).
	Env map[string]string `json:"env"`
	// HostNetwork runs AM and container pods in their node's network
	// namespace, as a NodeManager's containers share its host's network:
	// a YARN container's address is its NodeId's host (the node's
	// InternalIP), which frameworks bind and advertise (Spark executors
	// bind their block manager to it). On the pod network such a container
	// cannot bind that address. Pod Security "baseline" refuses it, as it
	// refuses host_paths. DESIGN.md "Container networking".
	HostNetwork bool `json:"host_network"`
	// ResyncInterval is how often the reconcile loop lists the
	// applications and their pods (launching next attempts, recording
	// final states).
	ResyncInterval config.Duration `json:"resync_interval"`
	// HeartbeatInterval is how often the sub-cluster heartbeats in the
	// state store.
	HeartbeatInterval config.Duration `json:"heartbeat_interval"`
	// APITimeout bounds each call to the Kubernetes API server.
	APITimeout config.Duration `json:"api_timeout"`

	// Unmanaged AMs (unmanaged.go; DESIGN.md "Unmanaged AMs").
	// AMLivenessExpiry is yarn.am.liveness-monitor.expiry-interval-ms: an
	// unmanaged AM (no pod) that makes no ApplicationMasterProtocol call for
	// this long fails its attempt, and with it the application.
	AMLivenessExpiry config.Duration `json:"am_liveness_expiry"`
	// MaxUnmanagedApps bounds the unmanaged applications not yet over: they
	// hold no pod, so no quota bounds them; submissions beyond are refused.
	MaxUnmanagedApps int `json:"max_unmanaged_applications"`

	// REST is the API server connection when set (tests); otherwise it is
	// built from Kubeconfig.
	REST       *rest.Config          `json:"-"`
	Store      Store                 `json:"-"` // nil: no state store membership
	Logger     *slog.Logger          `json:"-"`
	Registerer prometheus.Registerer `json:"-"`
	// Now is the clock (tests); nil = time.Now.
	Now func() time.Time `json:"-"`
}

// HostPath is a host directory mounted read-only into container pods.
type HostPath struct {
	Path      string `json:"path"`
	MountPath string `json:"mount_path"`
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// DefaultConfig returns the defaults: Hadoop's port numbers and limits.
func DefaultConfig() Config {
	return Config{
		Namespace:           "default",
		ClientAddress:       "0.0.0.0:8032",
		SchedulerAddress:    "0.0.0.0:8030",
		AdminAddress:        "0.0.0.0:8033",
		NMAddress:           "0.0.0.0:8041",
		WebAddress:          "0.0.0.0:8088",
		Queue:               "default",
		RunAsUser:           65532,
		MinAllocationMB:     1024,
		MinAllocationVCores: 1,
		MaxAllocationMB:     8192,
		MaxAllocationVCores: 4,
		MaxAppAttempts:      2,
		LogDir:              "/tmp/yarnfed-logs",
		ResyncInterval:      config.Duration(time.Second),
		HeartbeatInterval:   config.Duration(10 * time.Second),
		APITimeout:          config.Duration(15 * time.Second),
		AMLivenessExpiry:    config.Duration(10 * time.Minute),
		MaxUnmanagedApps:    1000,
	}
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.SubClusterID == "" {
		errs = append(errs, errors.New("subcluster_id: required"))
	} else if msgs := validation.IsValidLabelValue(c.SubClusterID); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("subcluster_id %q: not a Kubernetes label value: %v", c.SubClusterID, msgs))
	}
	if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q: %v", c.Namespace, msgs))
	}
	if c.ClientAddress == "" || c.SchedulerAddress == "" || c.AdminAddress == "" {
		errs = append(errs, errors.New("client_address, scheduler_address and admin_address: required"))
	}
	errs = append(errs, c.validateNMAddresses()...)
	if c.Store != nil && c.WebAddress == "" && c.AdvertiseWebAddress == "" {
		errs = append(errs, errors.New("web_address: required with a state store (a sub-cluster registers its REST address)"))
	}
	if c.Image == "" {
		errs = append(errs, errors.New("image: required (the AM pods' image)"))
	}
	errs = append(errs, c.validateContainers()...)
	if c.RunAsUser <= 0 {
		errs = append(errs, errors.New("run_as_user must be > 0 (pods never run as root)"))
	}
	if c.Queue == "" {
		errs = append(errs, errors.New("queue: required"))
	}
	if c.ClusterTimestamp < 0 || c.Epoch < 0 || c.Epoch >= 1<<23 {
		errs = append(errs, errors.New("cluster_timestamp must be >= 0 and epoch in [0, 2^23)"))
	}
	if c.MinAllocationMB <= 0 || c.MinAllocationVCores <= 0 || c.MaxAllocationMB < c.MinAllocationMB || c.MaxAllocationVCores < c.MinAllocationVCores {
		errs = append(errs, errors.New("allocation bounds: need 0 < min <= max for memory and vcores"))
	}
	if c.MaxAppAttempts <= 0 {
		errs = append(errs, errors.New("max_app_attempts must be > 0"))
	}
	if c.ResyncInterval <= 0 || c.HeartbeatInterval <= 0 || c.APITimeout <= 0 {
		errs = append(errs, errors.New("resync_interval, heartbeat_interval and api_timeout must be > 0"))
	}
	if c.AMLivenessExpiry <= 0 || c.MaxUnmanagedApps < 0 {
		errs = append(errs, errors.New("am_liveness_expiry must be > 0 and max_unmanaged_applications >= 0"))
	}
	return errors.Join(errs...)
}

// validateNMAddresses: the NM face binds nm_address (port 0 = any); the
// NodeIds' port is advertise_nm_address's, so that one must be a real port.
func (c *Config) validateNMAddresses() []error {
	var errs []error
	if c.NMAddress == "" {
		errs = append(errs, errors.New("nm_address: required (the NodeManager face, ContainerManagementProtocol)"))
	} else if _, p, err := net.SplitHostPort(c.NMAddress); err != nil || !validPort(p, true) {
		errs = append(errs, fmt.Errorf("nm_address %q: want host:port with a port in 0..65535", c.NMAddress))
	}
	if c.AdvertiseNMAddress != "" {
		if _, p, err := net.SplitHostPort(c.AdvertiseNMAddress); err != nil || !validPort(p, false) {
			errs = append(errs, fmt.Errorf("advertise_nm_address %q: want host:port with a port in 1..65535 (NodeIds carry it)", c.AdvertiseNMAddress))
		}
	}
	return errs
}

func validPort(s string, zeroOK bool) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n <= 65535 && (n > 0 || (zeroOK && n == 0))
}

// RESTConfig is the API server connection: Config.REST, else the
// kubeconfig file, else in-cluster.
func (c *Config) RESTConfig() (*rest.Config, error) {
	if c.REST != nil {
		return rest.CopyConfig(c.REST), nil
	}
	var rc *rest.Config
	var err error
	if c.Kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	rc.UserAgent = "yarnfed-kuberm"
	// Not client-go's default limiter (5 requests/s, burst 10): every
	// request kuberm makes waits in it (reconcile, allocate, and each
	// NM-face call is several), so under `yarnfed bench kuberm`'s two AMs
	// a startContainers took 4.8 s and a container 16.5 s from request to
	// running; at 50/s 0.06 s and 4.0 s (DESIGN.md "Benchmark").
	// kube-scheduler's own client defaults.
	rc.QPS, rc.Burst = kubeQPS, kubeBurst
	return rc, nil
}

// kubeQPS and kubeBurst bound kuberm's requests to the API server.
const (
	kubeQPS   = 50
	kubeBurst = 100
)

// epoch is the configured epoch or one derived from the sub-cluster id
// (FNV-1a, 1..4095), so sub-clusters differ without configuration.
func (c *Config) epoch() int64 {
	if c.Epoch > 0 {
		return c.Epoch
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(c.SubClusterID))
	return int64(h.Sum32()%4095) + 1
}

// validateContainers checks the container pods' block.
func (c *Config) validateContainers() []error {
	var errs []error
	for i, h := range c.HostPaths {
		if !path.IsAbs(h.Path) || !path.IsAbs(h.MountPath) {
			errs = append(errs, fmt.Errorf("host_paths[%d]: path and mount_path must be absolute", i))
		} else if mp := path.Clean(h.MountPath); mp == "/" || strings.HasPrefix(mp+"/", yarnfedDir+"/") || strings.HasPrefix(yarnfedDir+"/", mp+"/") ||
			mp == path.Clean(c.LogDir) || mp == "/tmp" {
			errs = append(errs, fmt.Errorf("host_paths[%d]: mount_path %q overlaps %s, the log dir or /tmp (the pods' own)", i, h.MountPath, yarnfedDir))
		}
	}
	for k := range c.Env {
		if !envName.MatchString(k) {
			errs = append(errs, fmt.Errorf("env: %q is not an environment variable name", k))
		} else if reservedEnv[k] {
			errs = append(errs, fmt.Errorf("env: %s is set by kuberm (as a NodeManager sets it)", k))
		}
	}
	return errs
}
