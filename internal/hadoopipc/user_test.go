package hadoopipc

import (
	"context"
	"testing"
)

func TestUserName(t *testing.T) {
	if got := UserName(context.Background()); got != "" {
		t.Errorf("UserName(no caller) = %q, want empty", got)
	}
	if got := UserName(ContextWithUser(context.Background(), User{Name: "alice", AuthMethod: "SIMPLE"})); got != "alice" {
		t.Errorf("UserName = %q, want alice", got)
	}
}
