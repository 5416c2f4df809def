package kube

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/yarnfed/yarnfed/internal/config"
)

// Config describes one Kubernetes co-location cluster. Build it with
// DefaultConfig, overlay a file section and flags (the GPG role owns those),
// then call Validate.
type Config struct {
	// Name identifies the cluster in logs and metrics.
	Name string `json:"name"`
	// Kubeconfig is a kubeconfig file; empty means in-cluster (the pod's
	// service account).
	Kubeconfig string `json:"kubeconfig"`
	// Context picks a kubeconfig context; empty means its current context.
	Context string `json:"context"`
	// DefaultSubCluster is the sub-cluster of NodeManager pods without the
	// yarn.hadoop.apache.org/cluster-id annotation.
	DefaultSubCluster string `json:"default_sub_cluster"`
	// SubClusters are reported even when no node contributes (as 0), so a
	// consumer sees "nothing usable" rather than "unknown". DefaultSubCluster
	// is always included; sub-clusters seen in annotations are added.
	SubClusters []string `json:"sub_clusters"`
	// ResyncPeriod is how often every node is recomputed from the informer
	// caches (no API call), correcting any drift and refreshing ObservedAt.
	ResyncPeriod Duration `json:"resync_period"`
	// StaleAfter: a node whose Ready condition has not been refreshed for
	// this long counts 0. The kubelet refreshes it at least every
	// nodeStatusReportFrequency (5 min by default), so this must be larger;
	// 15 min matches koord-manager's degrade time for NodeMetrics. It also
	// turns a lost API-server watch into 0 capacity instead of frozen figures.
	StaleAfter Duration `json:"stale_after"`
	// NodeResourcePush optionally pushes each NodeManager's usable
	// capacity to its RM (gpg/kube/nmpush); off by default.
	NodeResourcePush PushConfig `json:"node_resource_push"`
	// ThirdPartyAllocations optionally writes YARN's per-node allocation
	// back into each Node's thirdPartyAllocations (gpg/kube/writeback); off
	// by default.
	ThirdPartyAllocations WriteBackConfig `json:"third_party_allocations"`

	// In-process wiring (not from files).
	// Client, if set, is used instead of Kubeconfig (tests, embedding).
	Client     Client                `json:"-"`
	Logger     *slog.Logger          `json:"-"`
	Registerer prometheus.Registerer `json:"-"` // nil: no metrics
	Clock      clock.WithTicker      `json:"-"` // nil: the real clock
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		ResyncPeriod: Duration(5 * time.Minute),
		StaleAfter:   Duration(15 * time.Minute),

		NodeResourcePush:      DefaultPushConfig(),
		ThirdPartyAllocations: DefaultWriteBackConfig(),
	}
}

// UnmarshalJSON decodes a config file section on top of DefaultConfig, so
// each entry of a list of clusters gets the defaults for what it leaves out
// (a plain decode would leave them zero, which Validate refuses). Unknown
// keys are errors: a misspelt key must not fall back to a default silently.
// Fields that are not read from files (Client, Logger, ...) are reset.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config // no methods: no recursion
	p := plain(DefaultConfig())
	if err := config.Decode(b, &p); err != nil {
		return err
	}
	*c = Config(p)
	return nil
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.DefaultSubCluster == "" {
		errs = append(errs, errors.New("default_sub_cluster: required"))
	}
	for i, sc := range c.SubClusters {
		if sc == "" {
			errs = append(errs, fmt.Errorf("sub_clusters[%d]: empty", i))
		}
	}
	if c.ResyncPeriod <= 0 {
		errs = append(errs, fmt.Errorf("resync_period: %v, must be > 0", c.ResyncPeriod.D()))
	}
	if c.StaleAfter < Duration(time.Minute) {
		errs = append(errs, fmt.Errorf("stale_after: %v, must be >= 1m (the kubelet refreshes node status every few minutes)", c.StaleAfter.D()))
	}
	if c.NodeResourcePush.Enabled {
		if err := c.NodeResourcePush.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("node_resource_push: %w", err))
		}
	}
	if c.ThirdPartyAllocations.Enabled {
		if err := c.ThirdPartyAllocations.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("third_party_allocations: %w", err))
		}
	}
	return errors.Join(errs...)
}

// userAgent is how the API server's audit log names us.
const userAgent = "yarnfed-gpg"

// RESTConfig loads the connection settings: the kubeconfig file, or the
// in-cluster service account when Kubeconfig is empty. Responses are asked
// for in protobuf, which decodes several times faster than JSON at 10,000
// nodes.
func (c *Config) RESTConfig() (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if c.Kubeconfig == "" {
		rc, err = rest.InClusterConfig()
	} else {
		rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: c.Kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: c.Context}).ClientConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes cluster %q: %w", c.Name, err)
	}
	rc = rest.CopyConfig(rc)
	rc.UserAgent = userAgent
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return rc, nil
}

// Duration is the duration type every role's config uses ("10s" in files
// and flags).
type Duration = config.Duration
