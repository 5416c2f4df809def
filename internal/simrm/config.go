package simrm

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/config"
)

// Resource is memory in MB and virtual cores, as Hadoop's ResourceProto.
type Resource struct {
	MemoryMB int64 `json:"memory_mb"`
	VCores   int32 `json:"vcores"`
}

// String renders Hadoop's "<memory:M, vCores:V>".
func (r Resource) String() string { return fmt.Sprintf("<memory:%d, vCores:%d>", r.MemoryMB, r.VCores) }

func (r Resource) add(o Resource) Resource {
	return Resource{MemoryMB: r.MemoryMB + o.MemoryMB, VCores: r.VCores + o.VCores}
}

func (r Resource) sub(o Resource) Resource {
	return Resource{MemoryMB: r.MemoryMB - o.MemoryMB, VCores: r.VCores - o.VCores}
}

// fits reports whether o fits inside r in every dimension.
func (r Resource) fits(o Resource) bool { return o.MemoryMB <= r.MemoryMB && o.VCores <= r.VCores }

func (r Resource) atLeast(o Resource) bool { return r.MemoryMB >= o.MemoryMB && r.VCores >= o.VCores }

func (r Resource) clampZero() Resource {
	if r.MemoryMB < 0 {
		r.MemoryMB = 0
	}
	if r.VCores < 0 {
		r.VCores = 0
	}
	return r
}

func minRes(a, b Resource) Resource {
	if b.MemoryMB < a.MemoryMB {
		a.MemoryMB = b.MemoryMB
	}
	if b.VCores < a.VCores {
		a.VCores = b.VCores
	}
	return a
}

// QueueConfig is one leaf queue under root. Capacities are percentages of
// the cluster, as the capacity scheduler configures them.
type QueueConfig struct {
	Name        string  `json:"name"`
	Capacity    float32 `json:"capacity"`     // guaranteed share, percent
	MaxCapacity float32 `json:"max_capacity"` // elastic limit, percent (0 means 100)
}

// Queues are the leaf queues. As a flag (--queues) they are written
// name:capacity[:maxCapacity],... (ParseQueues).
type Queues []QueueConfig

// Set replaces the list with a parsed --queues value (pflag.Value).
func (q *Queues) Set(s string) error {
	v, err := ParseQueues(s)
	if err != nil {
		return err
	}
	*q = v
	return nil
}

// String writes the list in --queues syntax (pflag.Value).
func (q *Queues) String() string {
	var parts []string
	for _, c := range *q {
		s := c.Name + ":" + strconv.FormatFloat(float64(c.Capacity), 'g', -1, 32)
		if c.MaxCapacity != 0 {
			s += ":" + strconv.FormatFloat(float64(c.MaxCapacity), 'g', -1, 32)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

// Type names the flag type in help output (pflag.Value).
func (q *Queues) Type() string { return "queues" }

// SimAMConfig shapes the built-in ApplicationMaster that simrm runs for
// managed applications, so a federation shows container traffic without a JVM.
type SimAMConfig struct {
	// Off: managed applications get no built-in AM; their AM container is
	// placed and the attempt waits for an AM that registers from outside
	// with the attempt's AMRMToken (RM.AMRMToken), as a real AM process
	// would. Tests of AM restarts use it.
	Off              bool            `json:"off"`
	Containers       int             `json:"containers"`        // containers asked for once registered
	Resource         Resource        `json:"resource"`          // size of each container
	ContainerRuntime config.Duration `json:"container_runtime"` // how long each container "runs"
	Heartbeat        config.Duration `json:"heartbeat"`         // allocate interval
}

// FaultConfig injects failures into every RPC and REST call.
type FaultConfig struct {
	Latency   config.Duration `json:"latency"`    // added to every call
	ErrorRate float64         `json:"error_rate"` // fraction [0,1] of calls failing with a RetriableException-like error
	Stalled   bool            `json:"stalled"`    // calls block until unstalled or their context ends
}

// Config configures one simulated ResourceManager. `yarnfed simrm` reads
// it from a JSON file (the keys below) and flags.
type Config struct {
	// ClusterID names the RM (yarn.resourcemanager.cluster-id); in a
	// federation it is usually the sub-cluster id.
	ClusterID string `json:"cluster_id"`
	// ClusterTimestamp is the RM start time in ms, the first part of every
	// application id. 0 means now.
	ClusterTimestamp int64 `json:"cluster_timestamp"`
	// Epoch is carried in the high bits of every container id. -1 derives a
	// stable non-zero value from ClusterID, so sub-clusters of one
	// federation get distinct epochs without configuration.
	Epoch int64 `json:"epoch"`

	Nodes        int   `json:"nodes"`
	NodeMemoryMB int64 `json:"node_memory_mb"`
	NodeVCores   int32 `json:"node_vcores"`
	Racks        int   `json:"racks"`
	// HostPrefix names the simulated NodeManagers: <prefix><n>.
	HostPrefix string `json:"host_prefix"`

	Queues        Queues   `json:"queues"`
	MinAllocation Resource `json:"min_allocation"` // requests are rounded up to multiples of this
	MaxAllocation Resource `json:"max_allocation"` // larger requests are rejected
	// MaxAllocationWait is how long after start MaxAllocation is reported
	// as configured; afterwards it is capped at the largest node, as Hadoop
	// does after yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms.
	MaxAllocationWait config.Duration `json:"max_allocation_wait"`
	// MaxCompletedApps is how many finished applications the RM remembers
	// (yarn.resourcemanager.max-completed-applications); older ones are
	// forgotten, so a long dev run does not grow without bound.
	MaxCompletedApps int `json:"max_completed_apps"`
	// MaxApplications bounds the applications waiting or running at once
	// (yarn.scheduler.capacity.maximum-applications, Hadoop's default
	// 10000), each leaf queue its capacity's share; a submission beyond it
	// is rejected: the application FAILS with the capacity scheduler's
	// message. It keeps a backlog under sustained submissions bounded, as
	// on a real RM. 0 means no limit.
	MaxApplications int `json:"max_applications"`
	// MaxAppAttempts is yarn.resourcemanager.am.max-attempts.
	MaxAppAttempts int32 `json:"max_app_attempts"`
	// AMLivenessTimeout fails an attempt whose AM stopped heartbeating.
	AMLivenessTimeout config.Duration `json:"am_liveness_timeout"`
	// ContainerRuntime ends containers of external (real) AMs after this
	// long with exit status 0, as if their task finished; 0 keeps them until
	// released or the application ends.
	ContainerRuntime config.Duration `json:"container_runtime"`
	SimAM            SimAMConfig     `json:"sim_am"`
	// TickInterval is the simulated NodeManager heartbeat: the scheduler
	// runs a pass per tick (and when kicked by new asks).
	TickInterval config.Duration `json:"tick_interval"`

	// Listen addresses (host:port; port 0 picks a free port).
	ClientAddr    string `json:"client_address"`    // ApplicationClientProtocol, Hadoop 8032
	SchedulerAddr string `json:"scheduler_address"` // ApplicationMasterProtocol, Hadoop 8030
	AdminAddr     string `json:"admin_address"`     // ResourceManagerAdministrationProtocol, Hadoop 8033
	WebAddr       string `json:"webapp_address"`    // REST, Hadoop 8088

	// Standby starts the RM as the standby of an HA pair: every RPC answers
	// org.apache.hadoop.ipc.StandbyException until Transition(Active).
	Standby bool        `json:"standby"`
	Faults  FaultConfig `json:"faults"`

	// MasterKey signs AMRMTokens (HMAC-SHA1). Empty: random per process.
	MasterKey []byte `json:"-"`

	Logger     *slog.Logger          `json:"-"`
	Registerer prometheus.Registerer `json:"-"`
	// Gatherer, if set, is served in Prometheus text format at /prom on
	// the web port (Hadoop 3.4's Prometheus endpoint path).
	Gatherer prometheus.Gatherer `json:"-"`
	// Now is the clock; nil means time.Now.
	Now func() time.Time `json:"-"`
}

// DefaultConfig listens where a Hadoop RM does, with 8 nodes of 8 GiB/8
// vcores and one default queue.
func DefaultConfig() Config {
	return Config{
		ClusterID:         "simrm",
		Epoch:             -1,
		Nodes:             8,
		NodeMemoryMB:      8192,
		NodeVCores:        8,
		Racks:             2,
		HostPrefix:        "simnode-",
		Queues:            []QueueConfig{{Name: "default", Capacity: 100, MaxCapacity: 100}},
		MinAllocation:     Resource{MemoryMB: 1024, VCores: 1},
		MaxAllocation:     Resource{MemoryMB: 8192, VCores: 4},
		MaxAllocationWait: config.Duration(10 * time.Second),
		MaxAppAttempts:    2,
		MaxCompletedApps:  1000,
		MaxApplications:   10000,
		AMLivenessTimeout: config.Duration(10 * time.Minute),
		SimAM: SimAMConfig{
			Containers:       2,
			Resource:         Resource{MemoryMB: 1024, VCores: 1},
			ContainerRuntime: config.Duration(10 * time.Second),
			Heartbeat:        config.Duration(time.Second),
		},
		TickInterval:  config.Duration(100 * time.Millisecond),
		ClientAddr:    "0.0.0.0:8032",
		SchedulerAddr: "0.0.0.0:8030",
		AdminAddr:     "0.0.0.0:8033",
		WebAddr:       "0.0.0.0:8088",
	}
}

// TestConfig is DefaultConfig on loopback port 0 with fast ticks: for
// tests and the embedded dev federation.
func TestConfig() Config {
	c := DefaultConfig()
	c.ClientAddr, c.SchedulerAddr, c.AdminAddr, c.WebAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	c.TickInterval = config.Duration(10 * time.Millisecond)
	c.SimAM.ContainerRuntime = config.Duration(50 * time.Millisecond)
	c.SimAM.Heartbeat = config.Duration(10 * time.Millisecond)
	return c
}

// Validate checks the configuration and fills derived defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.ClusterID == "" {
		errs = append(errs, errors.New("cluster id must not be empty"))
	}
	if c.Nodes < 0 {
		errs = append(errs, fmt.Errorf("nodes must be >= 0, got %d", c.Nodes))
	}
	if c.NodeMemoryMB <= 0 || c.NodeVCores <= 0 {
		errs = append(errs, fmt.Errorf("node resources must be positive, got %dMB/%d vcores", c.NodeMemoryMB, c.NodeVCores))
	}
	if c.Racks <= 0 {
		errs = append(errs, fmt.Errorf("racks must be >= 1, got %d", c.Racks))
	}
	if c.MinAllocation.MemoryMB <= 0 || c.MinAllocation.VCores <= 0 {
		errs = append(errs, fmt.Errorf("minimum allocation must be positive, got %v", c.MinAllocation))
	}
	if !c.MaxAllocation.atLeast(c.MinAllocation) {
		errs = append(errs, fmt.Errorf("maximum allocation %v is below the minimum %v", c.MaxAllocation, c.MinAllocation))
	}
	if c.MaxApplications < 0 {
		errs = append(errs, fmt.Errorf("max applications must be >= 0, got %d", c.MaxApplications))
	}
	if c.MaxCompletedApps < 0 {
		errs = append(errs, fmt.Errorf("max completed apps must be >= 0, got %d", c.MaxCompletedApps))
	}
	if c.MaxAppAttempts <= 0 {
		errs = append(errs, fmt.Errorf("max app attempts must be >= 1, got %d", c.MaxAppAttempts))
	}
	if len(c.Queues) == 0 {
		errs = append(errs, errors.New("at least one queue is required"))
	}
	var sum float64
	seen := map[string]bool{}
	for i, q := range c.Queues {
		if q.Name == "" || q.Name == "root" {
			errs = append(errs, fmt.Errorf("queue %d: invalid name %q", i, q.Name))
		}
		if seen[q.Name] {
			errs = append(errs, fmt.Errorf("queue %q defined twice", q.Name))
		}
		seen[q.Name] = true
		if q.Capacity < 0 || q.Capacity > 100 || q.MaxCapacity < 0 || q.MaxCapacity > 100 {
			errs = append(errs, fmt.Errorf("queue %q: capacities must be within [0,100]", q.Name))
		}
		if q.MaxCapacity != 0 && q.MaxCapacity < q.Capacity {
			errs = append(errs, fmt.Errorf("queue %q: max capacity %.1f below capacity %.1f", q.Name, q.MaxCapacity, q.Capacity))
		}
		sum += float64(q.Capacity)
	}
	if len(c.Queues) > 0 && math.Abs(sum-100) > 0.01 {
		errs = append(errs, fmt.Errorf("queue capacities must sum to 100, got %.2f", sum))
	}
	if c.SimAM.Containers < 0 {
		errs = append(errs, fmt.Errorf("simulated AM containers must be >= 0, got %d", c.SimAM.Containers))
	}
	if c.SimAM.Heartbeat <= 0 {
		errs = append(errs, errors.New("simulated AM heartbeat must be positive"))
	}
	if c.TickInterval <= 0 {
		errs = append(errs, errors.New("tick interval must be positive"))
	}
	if c.Faults.ErrorRate < 0 || c.Faults.ErrorRate > 1 {
		errs = append(errs, fmt.Errorf("error rate must be within [0,1], got %v", c.Faults.ErrorRate))
	}
	for name, a := range map[string]string{"client": c.ClientAddr, "scheduler": c.SchedulerAddr, "admin": c.AdminAddr, "web": c.WebAddr} {
		if a == "" {
			continue // that endpoint is disabled
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("%s address %q: %v", name, a, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("simrm config: %w", err)
	}
	if c.Epoch < 0 {
		c.Epoch = DeriveEpoch(c.ClusterID)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ClusterTimestamp == 0 {
		c.ClusterTimestamp = uniqueClusterTimestamp(c.Now().UnixMilli())
	}
	if c.HostPrefix == "" {
		c.HostPrefix = "simnode-"
	}
	return nil
}

// lastClusterTimestamp is the newest timestamp handed to an RM of this
// process.
var lastClusterTimestamp atomic.Int64

// uniqueClusterTimestamp returns now, or one more than the last timestamp
// given out if that is not older. Application ids are
// application_<cluster timestamp>_<n> with n restarting at 1 in every RM, so
// two RMs started in the same millisecond would hand out identical ids, and a
// federation takes an id it already knows for a resubmission of that app:
// two distinct applications would be merged into one.
func uniqueClusterTimestamp(now int64) int64 {
	for {
		last := lastClusterTimestamp.Load()
		ts := max(now, last+1)
		if lastClusterTimestamp.CompareAndSwap(last, ts) {
			return ts
		}
	}
}

// DeriveEpoch maps a cluster id to a stable epoch in [1, 4096). Distinct
// sub-clusters must not mint equal container ids for the same application
// (a federated application's UAMs share its application id), and the epoch
// is the part of the id that tells them apart.
func DeriveEpoch(clusterID string) int64 {
	h := fnv.New32a()
	h.Write([]byte(clusterID))
	return int64(h.Sum32()%4095) + 1
}

// ParseQueues decodes a queue list flag: comma-separated
// name:capacity[:maxCapacity] items, capacities in percent, e.g.
// "default:70,batch:30:100".
func ParseQueues(s string) ([]QueueConfig, error) {
	var out []QueueConfig
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("queue list is empty")
	}
	items := strings.Split(s, ",")
	if len(items) > 1000 {
		return nil, fmt.Errorf("%d queues: at most 1000", len(items))
	}
	for _, item := range items {
		parts := strings.Split(strings.TrimSpace(item), ":")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
			return nil, fmt.Errorf("queue %q: want name:capacity[:maxCapacity]", item)
		}
		q := QueueConfig{Name: parts[0]}
		c, err := strconv.ParseFloat(parts[1], 32)
		if err != nil || math.IsNaN(c) {
			return nil, fmt.Errorf("queue %q: capacity %q is not a number", item, parts[1])
		}
		q.Capacity = float32(c)
		if len(parts) == 3 {
			m, err := strconv.ParseFloat(parts[2], 32)
			if err != nil || math.IsNaN(m) {
				return nil, fmt.Errorf("queue %q: max capacity %q is not a number", item, parts[2])
			}
			q.MaxCapacity = float32(m)
		}
		out = append(out, q)
	}
	return out, nil
}
