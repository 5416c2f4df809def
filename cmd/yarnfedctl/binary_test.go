package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// envRunMain makes the test binary behave as yarnfedctl itself, so the
// exit codes main() hands to the operating system are tested without a
// separate build.
const envRunMain = "YARNFEDCTL_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func TestProcessExitCodes(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := lis.Addr().String()
	lis.Close()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"help", []string{"--help"}, exitOK, ""},
		{"usage error", []string{"policy", "list", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{"refused input", []string{"policy", "save", "-s", "q;SC-1:0.5;SC-1:1.0;1.0", "--dry-run"}, exitError, "routerPolicyWeights: weights sum to 0.5"},
		{"store down", []string{"--store-insecure", "--store", closed, "--timeout", "200ms", "store", "status"}, exitError, "statestore: unavailable"},
		{"no transport", []string{"--store", closed, "store", "status"}, exitUsage, "give --store-tls-cert, --store-tls-key and --store-tls-ca"},
		{"no transport names env", []string{"--store", closed, "store", "status"}, exitUsage, "YARNFED_STORE_INSECURE=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tc.args...)
			// The parent's YARNFED_STORE_* would change what is tested.
			cmd.Env = []string{envRunMain + "=1"}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "YARNFED_STORE") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
				t.Fatalf("exit %d (want %d), stderr %q", code, tc.code, stderr.String())
			}
		})
	}
}
