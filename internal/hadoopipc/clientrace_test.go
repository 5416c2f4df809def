package hadoopipc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSimpleClientRejectedByTokenOnlyServer: a SIMPLE client considers its
// handshake done once the preamble and context are written, so a TOKEN-only
// server's FATAL reply and close race with the client finishing connection
// setup. Every call must fail with the server's AccessControlException, and
// under -race the connection's setup must not race with its close (it once
// did: the idle timer was armed after the read loop started).
func TestSimpleClientRejectedByTokenOnlyServer(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.AllowSimple = false
	cfg.Secrets = testSecrets{}
	s := startServer(t, cfg, echoProtocol(nil))
	c := newTestClient(t, ClientConfig{Addresses: []string{s.addr}, User: "alice", FailoverAttempts: 1})
	for i := 0; i < 30; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := echo(ctx, c, "x")
		cancel()
		var re *RemoteError
		if !errors.As(err, &re) && !errors.Is(err, ErrConnectionClosed) && !errors.Is(err, ErrDial) {
			t.Fatalf("call %d: got %v, want the server's refusal", i, err)
		}
		if re != nil && re.Class != ClassAccessControl {
			t.Fatalf("call %d: class %s, want %s", i, re.Class, ClassAccessControl)
		}
	}
}
