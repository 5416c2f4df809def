package kube

import (
	"errors"
	"fmt"
	"time"
)

// PushConfig is a cluster's optional node-resource push (package
// gpg/kube/nmpush): each NodeManager's usable capacity is sent to its RM
// with the admin protocol's updateNodeResource, batched and debounced. Off
// by default. It lives here, in the cluster's own config section, so a file
// entry is decoded onto its defaults and validated like the rest of it.
type PushConfig struct {
	// Enabled turns the push on for this cluster.
	Enabled bool `json:"enabled"`
	// User is the SIMPLE-auth user; it must be in the RMs' yarn.admin.acl.
	User string `json:"user"`
	// MinChange is the relative change of vcores or memory that is pushed
	// at once (0.10: Koordinator's own threshold for batch node updates).
	MinChange float64 `json:"min_change"`
	// MaxAge re-pushes an unchanged figure (an RM or NodeManager restart
	// forgets it).
	MaxAge Duration `json:"max_age"`
	// Interval is how often due NodeManagers are collected and sent.
	Interval Duration `json:"interval"`
	// CallTimeout bounds one updateNodeResource call.
	CallTimeout Duration `json:"call_timeout"`
}

// DefaultPushConfig is off, with Koordinator's 10% / 300 s debounce.
func DefaultPushConfig() PushConfig {
	return PushConfig{
		MinChange:   0.10,
		MaxAge:      Duration(5 * time.Minute),
		Interval:    Duration(10 * time.Second),
		CallTimeout: Duration(30 * time.Second),
	}
}

// Validate reports every problem at once, whether or not Enabled is set
// (Config.Validate asks only when it is).
func (c *PushConfig) Validate() error {
	var errs []error
	if c.User == "" {
		errs = append(errs, errors.New("user: required (a user in the RMs' yarn.admin.acl)"))
	}
	if !(c.MinChange >= 0 && c.MinChange <= 1) {
		errs = append(errs, fmt.Errorf("min_change: %v, must be within [0,1]", c.MinChange))
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{"max_age", c.MaxAge}, {"interval", c.Interval}, {"call_timeout", c.CallTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s: %v, must be > 0", d.name, d.v.D()))
		}
	}
	return errors.Join(errs...)
}

// WriteBackConfig is a cluster's optional thirdPartyAllocations write-back
// (package gpg/kube/writeback): what YARN has allocated on each NodeManager,
// read from its RM, is written into its Node's
// node.koordinator.sh/thirdPartyAllocations, so koord-manager takes it out of
// the Kubernetes batch allocatable (koord-yarn-operator's other half). Off by
// default; it needs `patch` on nodes (deploy/components/koordinator-writeback).
type WriteBackConfig struct {
	// Enabled turns the write-back on for this cluster.
	Enabled bool `json:"enabled"`
	// Interval is how often the RMs are read and changed Nodes patched (the
	// debounce: every change within it goes out in the next round).
	Interval Duration `json:"interval"`
	// CallTimeout bounds one RM read or one Node patch.
	CallTimeout Duration `json:"call_timeout"`
	// Parallel is how many Node patches are in flight at once.
	Parallel int `json:"parallel"`
}

// DefaultWriteBackConfig is off, every 2 s, 4 patches at a time.
func DefaultWriteBackConfig() WriteBackConfig {
	return WriteBackConfig{Interval: Duration(2 * time.Second), CallTimeout: Duration(10 * time.Second), Parallel: 4}
}

// Validate reports every problem at once, whether or not Enabled is set
// (Config.Validate asks only when it is).
func (c *WriteBackConfig) Validate() error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("interval: %v, must be > 0", c.Interval.D()))
	}
	if c.CallTimeout <= 0 {
		errs = append(errs, fmt.Errorf("call_timeout: %v, must be > 0", c.CallTimeout.D()))
	}
	if c.Parallel < 1 || c.Parallel > 64 {
		errs = append(errs, fmt.Errorf("parallel: %d, must be within [1,64]", c.Parallel))
	}
	return errors.Join(errs...)
}
