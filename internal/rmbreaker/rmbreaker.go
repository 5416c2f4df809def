// Package rmbreaker is the one rule for per-sub-cluster circuit breakers on
// calls to a ResourceManager, shared by the router and the AMRMProxy: which
// failures say "this RM is down" (and so count towards opening the
// breaker), and the gobreaker settings both use.
package rmbreaker

import (
	"context"
	"errors"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// RMDown classifies a call error: true when the RM did not serve the call
// (connection refused or reset, timeout, standby, a fatal protocol reply).
// An application error proves the RM alive, and so does a refused login
// (RefusedLogin): a caller the RM will not admit says nothing about the RM.
func RMDown(err error) bool {
	if err == nil {
		return false
	}
	var re *hadoopipc.RemoteError
	if errors.As(err, &re) {
		if RefusedLogin(re) {
			return false
		}
		if re.Fatal {
			return true
		}
		switch re.Class {
		case hadoopipc.ClassStandby, hadoopipc.ClassRetriable:
			return true
		}
		return false
	}
	return !errors.Is(err, context.Canceled)
}

// RefusedLogin: the RM closed the connection with FATAL_UNAUTHORIZED, i.e.
// it is alive and refused this login (a Kerberized RM refusing to let the
// caller act for one user: hadoop.proxyuser.*). The call never ran. It must
// not count against the sub-cluster's breaker, or one refused submitter
// could take the sub-cluster away from every other caller.
func RefusedLogin(re *hadoopipc.RemoteError) bool {
	return re.Fatal && re.Code == commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED
}

// Config tunes a breaker.
type Config struct {
	// ConsecutiveFailures of the RMDown kind open it.
	ConsecutiveFailures uint32
	// OpenFor is how long it stays open before one probe may go.
	OpenFor time.Duration
	// Interval clears the counts of a closed breaker periodically (0: never).
	Interval time.Duration
}

// Settings are the gobreaker settings of sub-cluster name's breaker: one
// probe when half-open (a dead RM costs one more timeout, not N), RMDown
// failures count, a caller's cancellation is excluded. onChange (may be
// nil) hears every state change.
func Settings(name string, cfg Config, onChange func(name string, from, to gobreaker.State)) gobreaker.Settings {
	return gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Interval:    cfg.Interval,
		Timeout:     cfg.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= cfg.ConsecutiveFailures },
		// The caller gave up: says nothing about the RM.
		IsExcluded:    func(err error) bool { return errors.Is(err, context.Canceled) },
		IsSuccessful:  func(err error) bool { return err == nil || !RMDown(err) },
		OnStateChange: onChange,
	}
}

// StateValue is a breaker state as a gauge value: 0 closed, 1 half-open,
// 2 open.
func StateValue(s gobreaker.State) float64 {
	switch s {
	case gobreaker.StateHalfOpen:
		return 1
	case gobreaker.StateOpen:
		return 2
	}
	return 0
}
