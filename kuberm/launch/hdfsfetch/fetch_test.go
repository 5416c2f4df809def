package hdfsfetch

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2/hadoopconf"

	"github.com/yarnfed/yarnfed/kuberm/launch/fetchwire"
)

func request(t *testing.T, url string) fetchwire.Request {
	return fetchwire.Request{URL: url, User: "alice", Dest: filepath.Join(t.TempDir(), "out"), Timestamp: 1,
		MaxBytes: 1 << 20, MaxEntries: 100, Timeout: time.Minute}
}

// TestNamenodes: an authority with a port is the NameNode; a bare name
// declared as an HA nameservice is its NameNodes' RPC addresses; another
// bare name gets Hadoop's default port.
func TestNamenodes(t *testing.T) {
	conf := hadoopconf.HadoopConf{
		"dfs.ha.namenodes.prod":              "nn1, nn2",
		"dfs.namenode.rpc-address.prod.nn1":  "a.example.com:8020",
		"dfs.namenode.rpc-address.prod.nn2":  "b.example.com:8020",
		"dfs.ha.namenodes.empty":             "nn1",
		"dfs.namenode.rpc-address.other.nn1": "c.example.com:8020",
	}
	for in, want := range map[string][]string{
		"nn.example.com:9000": {"nn.example.com:9000"},
		"prod":                {"a.example.com:8020", "b.example.com:8020"},
		"empty":               {"empty:8020"},
		"nn.example.com":      {"nn.example.com:8020"},
	} {
		if got := namenodes(in, conf); !reflect.DeepEqual(got, want) {
			t.Errorf("namenodes(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestUnreachableNameNode: nothing listens at the NameNode's address: a
// failure of kind unreachable naming the address, nothing written, and
// nothing removed that was at the destination before.
func TestUnreachableNameNode(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	req := request(t, "hdfs://"+addr+"/user/alice/a.jar")
	rep := Fetch(context.Background(), req, "")
	if rep.Status != fetchwire.StatusFailed || rep.Kind != fetchwire.KindUnreachable || !strings.Contains(rep.Message, addr) ||
		!strings.Contains(rep.Message, "connection refused") {
		t.Fatalf("report %+v; want unreachable naming %s", rep, addr)
	}
	if _, err := os.Lstat(req.Dest); !os.IsNotExist(err) {
		t.Fatalf("the destination exists: %v", err)
	}
	// A failed fetch removes only what it created, never what was there.
	if err := os.MkdirAll(req.Dest, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(req.Dest, "keep")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep := Fetch(context.Background(), req, ""); rep.Kind != fetchwire.KindUnreachable {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("a failed fetch removed what was at its destination: %v", err)
	}
}

// TestSilentNameNodeTimesOut: a NameNode that accepts and never answers
// ends in a timeout report once --timeout passes, not a hang.
func TestSilentNameNodeTimesOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	req := request(t, "hdfs://"+l.Addr().String()+"/a.jar")
	req.Timeout = 300 * time.Millisecond
	rep := Fetch(context.Background(), req, "")
	if rep.Status != fetchwire.StatusFailed || rep.Kind != fetchwire.KindTimeout {
		t.Fatalf("report %+v; want a timeout", rep)
	}
}

// TestKerberosConfigurationRefused: a Hadoop configuration asking for
// Kerberos is refused up front with a message saying why (SIMPLE only),
// rather than a confusing NameNode error.
func TestKerberosConfigurationRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "core-site.xml"), []byte(`<configuration><property>
<name>hadoop.security.authentication</name><value>kerberos</value></property></configuration>`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := Fetch(context.Background(), request(t, "hdfs://127.0.0.1:1/a.jar"), dir)
	if rep.Kind != fetchwire.KindPermission || !strings.Contains(rep.Message, "SIMPLE authentication only") {
		t.Fatalf("report %+v", rep)
	}
}

// TestBadRequestIsUsage: a request that fails Check is a usage failure.
func TestBadRequestIsUsage(t *testing.T) {
	req := request(t, "s3a://bucket/a.jar")
	if rep := Fetch(context.Background(), req, ""); rep.Kind != fetchwire.KindUsage || rep.ExitCode() != fetchwire.ExitUsage {
		t.Fatalf("report %+v", rep)
	}
}

// TestTheFetcherIsTheOnlyHDFSClient: colinmarc/hdfs and internal/yarnpb
// both register hadoop.common protos, and a binary linking both panics at
// init; so the fetcher's binary must not link yarnpb, and yarnfed must not
// link colinmarc/hdfs.
func TestTheFetcherIsTheOnlyHDFSClient(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	const yarnpb, hdfs = "github.com/yarnfed/yarnfed/internal/yarnpb", "github.com/colinmarc/hdfs/v2"
	for _, d := range deps("github.com/yarnfed/yarnfed/cmd/yarnfed-hdfs-fetch") {
		if strings.HasPrefix(d, yarnpb) {
			t.Errorf("cmd/yarnfed-hdfs-fetch links %s", d)
		}
	}
	for _, d := range deps("github.com/yarnfed/yarnfed/cmd/yarnfed") {
		if d == hdfs || strings.HasPrefix(d, hdfs+"/") {
			t.Errorf("cmd/yarnfed links %s", d)
		}
	}
}
