package kubebench

import (
	"context"
	"os"
	"testing"
)

// TestManualRun runs the full default scenario when asked:
// YARNFED_KUBEBENCH=1 go test -run TestManualRun -v ./gpg/kube/kubebench/
func TestManualRun(t *testing.T) {
	if os.Getenv("YARNFED_KUBEBENCH") != "1" {
		t.Skip("set YARNFED_KUBEBENCH=1 to run the 10,000-node scenario")
	}
	if err := Run(context.Background(), DefaultConfig(), os.Stdout); err != nil {
		t.Fatal(err)
	}
}
