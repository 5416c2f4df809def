package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/yarnfed/yarnfed/kuberm/launch/fetchwire"
)

// TestRun: this test binary links what the fetcher links (colinmarc/hdfs
// and its hadoop.common protos), so it starting at all shows the binary
// initializes; bad arguments exit ExitUsage and an unreachable NameNode
// ExitFailed, each with one JSON report on stdout the launcher can decode
// and one line for a human on stderr.
func TestRun(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	for _, c := range []struct {
		name string
		args []string
		exit int
		kind string
	}{
		{"no arguments", nil, fetchwire.ExitUsage, fetchwire.KindUsage},
		{"not hdfs", []string{"--user", "a", "--timestamp", "1", "--max-bytes", "9", "--max-entries", "9", "--timeout", "1m",
			"s3a://b/x", t.TempDir() + "/x"}, fetchwire.ExitUsage, fetchwire.KindUsage},
		{"unreachable", []string{"--user", "a", "--timestamp", "1", "--max-bytes", "9", "--max-entries", "9", "--timeout", "1m",
			"hdfs://" + dead + "/x", t.TempDir() + "/x"}, fetchwire.ExitFailed, fetchwire.KindUnreachable},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), c.args, "", &stdout, &stderr)
			rep, err := fetchwire.DecodeReport(stdout.Bytes())
			if code != c.exit || err != nil || rep.Kind != c.kind {
				t.Fatalf("exit %d, report %+v (%v); want exit %d, kind %s\nstderr: %s", code, rep, err, c.exit, c.kind, &stderr)
			}
			if !strings.HasPrefix(stderr.String(), fetchwire.BinaryName+": "+c.kind+": ") {
				t.Errorf("stderr %q", &stderr)
			}
		})
	}
}
