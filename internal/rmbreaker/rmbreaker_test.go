package rmbreaker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

func refused() error {
	return &hadoopipc.RemoteError{Fatal: true, Code: commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED,
		Class: "org.apache.hadoop.security.authorize.AuthorizationException", Message: "User: nm@REALM is not allowed to impersonate mallory"}
}

func TestClassification(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		down bool
	}{
		{"nil", nil, false},
		{"refused login", refused(), false},
		{"other fatal reply", &hadoopipc.RemoteError{Fatal: true, Code: commonpb.RpcResponseHeaderProto_FATAL_VERSION_MISMATCH}, true},
		{"standby", &hadoopipc.RemoteError{Class: hadoopipc.ClassStandby}, true},
		{"retriable", &hadoopipc.RemoteError{Class: hadoopipc.ClassRetriable}, true},
		{"application error", &hadoopipc.RemoteError{Class: hadoopipc.ClassApplicationNotFound}, false},
		{"connection refused", errors.New("dial tcp: connection refused"), true},
		{"caller cancelled", context.Canceled, false},
	} {
		if got := RMDown(c.err); got != c.down {
			t.Errorf("%s: RMDown = %v, want %v", c.name, got, c.down)
		}
	}
}

// A login the RM refuses (one submitter a proxy-user rule does not admit)
// must not open the sub-cluster's breaker for everyone; an RM that does
// not answer must.
func TestRefusedLoginDoesNotOpenTheBreaker(t *testing.T) {
	cfg := Config{ConsecutiveFailures: 3, OpenFor: time.Hour}
	cb := gobreaker.NewCircuitBreaker[struct{}](Settings("SC-2", cfg, nil))
	for i := 0; i < 10; i++ {
		_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, refused() })
	}
	if cb.State() != gobreaker.StateClosed {
		t.Fatalf("10 refused logins: breaker %s, want closed", cb.State())
	}
	var changes []gobreaker.State
	cb = gobreaker.NewCircuitBreaker[struct{}](Settings("SC-2", cfg, func(_ string, _, to gobreaker.State) { changes = append(changes, to) }))
	for i := 0; i < 3; i++ {
		_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, errors.New("connection refused") })
	}
	if cb.State() != gobreaker.StateOpen || len(changes) != 1 || changes[0] != gobreaker.StateOpen {
		t.Fatalf("3 unreachable calls: breaker %s, changes %v", cb.State(), changes)
	}
	if StateValue(gobreaker.StateOpen) != 2 || StateValue(gobreaker.StateHalfOpen) != 1 || StateValue(gobreaker.StateClosed) != 0 {
		t.Fatal("gauge values")
	}
}
