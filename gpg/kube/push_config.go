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
