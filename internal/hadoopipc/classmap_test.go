package hadoopipc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

var (
	errTestMissing = errors.New("missing")
	errTestBusy    = errors.New("busy")
)

var testClasses = ClassMap{
	{Err: errTestMissing, Class: ClassApplicationNotFound},
	{Err: errTestBusy, Class: ClassRetriable},
}

func TestClassMapRemote(t *testing.T) {
	typed := Errorf(ClassStandby, "standby")
	cases := []struct {
		name      string
		err       error
		wantClass string // "" = nil result
		wantMsg   string
	}{
		{"nil stays nil", nil, "", ""},
		{"sentinel itself", errTestMissing, ClassApplicationNotFound, "missing"},
		{"wrapped sentinel keeps the full text", fmt.Errorf("app 7: %w", errTestMissing), ClassApplicationNotFound, "app 7: missing"},
		{"first entry wins", fmt.Errorf("%w and %w", errTestBusy, errTestMissing), ClassApplicationNotFound, "busy and missing"},
		{"unknown error is a YarnException", errors.New("boom"), ClassYarnException, "boom"},
		{"RemoteError keeps its class", fmt.Errorf("ctx: %w", typed), ClassStandby, "standby"},
		{"RemoteError wins over a sentinel", fmt.Errorf("%w %w", errTestMissing, typed), ClassStandby, "standby"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := testClasses.Remote(tc.err)
			if tc.wantClass == "" {
				if got != nil {
					t.Fatalf("Remote(nil) = %v", got)
				}
				return
			}
			var re *RemoteError
			if !errors.As(got, &re) {
				t.Fatalf("Remote(%v) = %v, want a *RemoteError", tc.err, got)
			}
			if re.Class != tc.wantClass || re.Message != tc.wantMsg || re.code() != errApplication || re.Fatal {
				t.Errorf("Remote(%v) = %s %q %v fatal=%v, want %s %q ERROR_APPLICATION", tc.err, re.Class, re.Message, re.code(), re.Fatal, tc.wantClass, tc.wantMsg)
			}
		})
	}
	// An error already carrying a class is passed on as it is, not rebuilt.
	wrapped := fmt.Errorf("ctx: %w", typed)
	if got := testClasses.Remote(wrapped); got != wrapped {
		t.Errorf("Remote rebuilt an error carrying a *RemoteError: %v", got)
	}
}

// TestProtocolErrorsTranslateHandlerErrors: Protocol.Errors applies to every
// method's handler errors, and interceptors already see the Java class.
func TestProtocolErrorsTranslateHandlerErrors(t *testing.T) {
	var mu sync.Mutex
	var seen []string // classes the interceptor saw
	cfg := DefaultServerConfig()
	cfg.Interceptors = []Interceptor{func(ctx context.Context, info *CallInfo, req proto.Message, next Handler) (proto.Message, error) {
		resp, err := next(ctx, req)
		var re *RemoteError
		class := "none"
		if errors.As(err, &re) {
			class = re.Class
		}
		mu.Lock()
		seen = append(seen, class)
		mu.Unlock()
		return resp, err
	}}
	newReq := NewOf[commonpb.GetDelegationTokenRequestProto]()
	fail := func(_ context.Context, req *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
		switch req.GetRenewer() {
		case "missing":
			return nil, fmt.Errorf("application 7: %w", errTestMissing)
		}
		return nil, errors.New(req.GetRenewer())
	}
	ts := startServer(t, cfg, Protocol{
		Name: testProtocol, Version: 1, Errors: testClasses,
		Methods: []Method{NewMethod("fail", newReq, fail), NewMethod("fail2", newReq, fail)},
	})
	c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}})
	cases := []struct{ method, renewer, wantClass, wantMsg string }{
		{"fail", "missing", ClassApplicationNotFound, "application 7: missing"},
		{"fail2", "missing", ClassApplicationNotFound, "application 7: missing"},
		{"fail", "other", ClassYarnException, "other"},
	}
	for _, tc := range cases {
		err := c.Call(context.Background(), tc.method, &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String(tc.renewer)}, &commonpb.GetDelegationTokenResponseProto{})
		var re *RemoteError
		if !errors.As(err, &re) || re.Class != tc.wantClass || re.Message != tc.wantMsg {
			t.Errorf("%s(%s) = %v, want %s: %s", tc.method, tc.renewer, err, tc.wantClass, tc.wantMsg)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{ClassApplicationNotFound, ClassApplicationNotFound, ClassYarnException}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("interceptor saw %v, want %v", seen, want)
	}
}
