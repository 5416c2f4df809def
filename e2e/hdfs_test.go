//go:build interop

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/gobuild"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm/launch"
	"github.com/yarnfed/yarnfed/kuberm/launch/fetchwire"
)

// hdfsCluster is a real NameNode and DataNode: Hadoop 3.4's own main
// classes, each a standalone JVM with its own directories, on loopback.
type hdfsCluster struct {
	uri  string // hdfs://127.0.0.1:port
	addr string
}

const hdfsSite = `<?xml version="1.0"?>
<configuration>
%s</configuration>
`

func siteXML(props [][2]string) string {
	var b strings.Builder
	for _, p := range props {
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", p[0], p[1])
	}
	return fmt.Sprintf(hdfsSite, b.String())
}

// startHDFS formats a NameNode (`NameNode -format`, its main class), starts
// it and a DataNode, and waits until Hadoop's client can write a block.
func startHDFS(t *testing.T, j *javaEnv) *hdfsCluster {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	conf := filepath.Join(dir, "conf")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	uri := "hdfs://" + addr
	files := map[string][][2]string{
		"core-site.xml": {
			{"fs.defaultFS", uri},
			{"hadoop.security.authentication", "simple"},
			{"hadoop.tmp.dir", filepath.Join(dir, "tmp")},
		},
		"hdfs-site.xml": {
			{"dfs.namenode.name.dir", "file://" + filepath.Join(dir, "name")},
			{"dfs.datanode.data.dir", "file://" + filepath.Join(dir, "data")},
			{"dfs.namenode.rpc-address", addr},
			{"dfs.namenode.http-address", "127.0.0.1:0"},
			{"dfs.datanode.address", "127.0.0.1:0"},
			{"dfs.datanode.http.address", "127.0.0.1:0"},
			{"dfs.datanode.ipc.address", "127.0.0.1:0"},
			{"dfs.replication", "1"},
			{"dfs.namenode.safemode.extension", "0"},
			{"dfs.namenode.datanode.registration.ip-hostname-check", "false"},
			{"dfs.heartbeat.interval", "1"},
			{"dfs.permissions.enabled", "true"},
		},
	}
	for name, props := range files {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(siteXML(props)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The web servers look their webapps up on the classpath; Hadoop's
	// distribution ships them beside the jars (share/hadoop/hdfs/webapps),
	// the Maven jars do not. Empty ones do: no test reads a web page.
	for _, w := range []string{"hdfs", "datanode", "static"} {
		if err := os.MkdirAll(filepath.Join(conf, "webapps", w), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The configuration directory first on the classpath, as Hadoop's
	// scripts put HADOOP_CONF_DIR; a modest heap for a 2-core machine. The
	// JVM options go in an argument file, so the process logs stay readable.
	argFile := filepath.Join(dir, "jvm.args")
	args := append(append([]string{}, j.jvmArgs...), "-Xmx384m", "-cp", conf+string(os.PathListSeparator)+j.classpath)
	if err := os.WriteFile(argFile, []byte(strings.Join(args, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const nnClass, dnClass = "org.apache.hadoop.hdfs.server.namenode.NameNode", "org.apache.hadoop.hdfs.server.datanode.DataNode"
	start := time.Now()
	format := exec.Command(j.java, "@"+argFile, nnClass, "-format", "-force", "-nonInteractive")
	if out, err := format.CombinedOutput(); err != nil {
		t.Fatalf("NameNode -format: %v\n%s", err, tail(string(out), 4000))
	}
	t.Logf("NameNode -format: %v", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	nn := startProc(t, dir, "namenode", j.java, "@"+argFile, nnClass)
	dn := startProc(t, dir, "datanode", j.java, "@"+argFile, dnClass)
	waitUntil(t, 90*time.Second, "the NameNode's RPC port", nn, func() (bool, string) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		if dead, err := dn.Exited(); dead {
			t.Fatalf("the DataNode exited (%v):\n%s", err, dn.Tail(30))
		}
		return true, ""
	})
	run := j.runDriver(t, "HdfsDriver", uri, "ready\t90")
	var ready struct{ Tries int }
	run.op(t, "ready:90").decode(t, &ready)
	t.Logf("HDFS takes writes %v after the start (%d tries)", time.Since(start).Round(time.Millisecond), ready.Tries)
	return &hdfsCluster{uri: uri, addr: addr}
}

// hdfsStatus is what HdfsDriver prints of a FileStatus.
type hdfsStatus struct {
	Path  string
	Len   int64
	Mtime int64
	Dir   bool
	Owner string
}

var (
	fetcherOnce sync.Once
	fetcherDir  string
	fetcherErr  error
)

// podLauncher is what a pod's init container leaves: `yarnfed kuberm
// launch --install DIR` run from an "image" directory holding yarnfed and
// yarnfed-hdfs-fetch side by side, as the image has them.
func podLauncher(t *testing.T) string {
	t.Helper()
	yarnfed, _ := yarnfedBinaries(t)
	fetcherOnce.Do(func() {
		fetcherDir, fetcherErr = os.MkdirTemp("", "yarnfed-e2e-fetch-")
		if fetcherErr != nil {
			return
		}
		cmd := gobuild.Command(fetcherDir+string(os.PathSeparator), "", "./cmd/yarnfed-hdfs-fetch")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			fetcherErr = fmt.Errorf("go build ./cmd/yarnfed-hdfs-fetch: %v\n%s", err, out)
		}
	})
	if fetcherErr != nil {
		t.Fatalf("interop: %v", fetcherErr)
	}
	image, bin := t.TempDir(), t.TempDir()
	for src, name := range map[string]string{yarnfed: "yarnfed", filepath.Join(fetcherDir, fetchwire.BinaryName): fetchwire.BinaryName} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(image, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(filepath.Join(image, "yarnfed"), "kuberm", "launch", "--install", bin).CombinedOutput()
	if err != nil || !strings.Contains(string(out), filepath.Join(bin, fetchwire.BinaryName)) {
		t.Fatalf("--install: %v\n%s", err, out)
	}
	return filepath.Join(bin, "yarnfed")
}

// launched is one run of the installed launcher.
type launched struct {
	code        int
	stderr      string
	termination string
	work        string
}

// launchPod runs the launcher as a container pod with the launch context
// lc and the NodeManager environment, as user.
func launchPod(t *testing.T, launcher, user string, lc *yarnpb.ContainerLaunchContextProto) launched {
	t.Helper()
	pod := t.TempDir()
	launchDir, work, logDir := filepath.Join(pod, "launch"), filepath.Join(pod, "work"), filepath.Join(pod, "logs", "c")
	for _, d := range []string{launchDir, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := proto.Marshal(lc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(launchDir, launch.ContextFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	termination := filepath.Join(pod, "termination-log")
	cmd := exec.Command(launcher, "kuberm", "launch", "--launch-dir", launchDir, "--termination-log", termination)
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CONTAINER_ID=container_e3_1700000000000_0042_01_000007",
		"NM_HOST=127.0.0.1", "NM_PORT=8041", "NM_HTTP_PORT=8042", "LOCAL_DIRS=" + filepath.Join(work, "local"),
		"LOG_DIRS=" + logDir, "USER=" + user, "LOGNAME=" + user, "HOME=" + work, "HADOOP_USER_NAME=" + user}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err = cmd.Run()
	msg, _ := os.ReadFile(termination)
	return launched{code: exitCodeOf(t, err), stderr: stderr.String(), termination: string(msg), work: work}
}

func exitCodeOf(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("running the launcher: %v", err)
	return -1
}

func hdfsRes(c *hdfsCluster, link, file string, st hdfsStatus, typ yarnpb.LocalResourceTypeProto) *yarnpb.StringLocalResourceMapProto {
	host, port, _ := strings.Cut(c.addr, ":")
	p, _ := strconv.Atoi(port)
	size := st.Len
	if st.Dir {
		size = 0 // an AM records a directory's length as 0
	}
	return &yarnpb.StringLocalResourceMapProto{Key: proto.String(link), Value: &yarnpb.LocalResourceProto{
		Resource: &yarnpb.URLProto{Scheme: proto.String("hdfs"), Host: proto.String(host), Port: proto.Int32(int32(p)), File: proto.String(file)},
		Size:     proto.Int64(size), Timestamp: proto.Int64(st.Mtime), Type: typ.Enum(),
		Visibility: yarnpb.LocalResourceVisibilityProto_APPLICATION.Enum()}}
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// sameTree fails the test unless got (followed through links) holds
// exactly want's files with want's bytes.
func sameTree(t *testing.T, want, got string) {
	t.Helper()
	got, err := filepath.EvalSymlinks(got)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		seen[rel] = true
		a, _ := os.ReadFile(p)
		b, err := os.ReadFile(filepath.Join(got, rel))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: %d bytes fetched (%v), %d bytes uploaded: not identical", rel, len(b), err, len(a))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir(got, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if rel, _ := filepath.Rel(got, p); !seen[rel] {
				t.Errorf("%s: fetched, never uploaded", rel)
			}
		}
		return nil
	})
}

var localizedLine = regexp.MustCompile(`msg=localized .*?resource=(\S+) .*?seconds=([0-9.e+-]+)`)

// TestLauncherFetchesFromHDFS: against a real NameNode and DataNode, files
// uploaded with Hadoop's own client (a file spanning several blocks, a
// directory tree with an empty file, a .tar.gz) are fetched by the
// installed launcher's yarnfed-hdfs-fetch byte-identical (the archive
// unpacked) as user alice; a file replaced after "submission" is refused
// with FSDownload's "changed on src filesystem", as is a recorded size
// that is not the file's; another user is refused by the NameNode's
// permission check; an unreachable NameNode fails with a message naming
// it. Each refusal exits 254 with the reason in the termination log and
// the command never runs.
func TestLauncherFetchesFromHDFS(t *testing.T) {
	j := needJava(t)
	launcher := podLauncher(t)
	h := startHDFS(t, j)

	src := t.TempDir()
	// YARNFED_HDFS_FETCH_MB sizes the large file (default 24 MiB: six
	// 4 MiB blocks); a larger one measures the fetch rate.
	bigMB := 24
	if v := os.Getenv("YARNFED_HDFS_FETCH_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 4096 {
			t.Fatalf("YARNFED_HDFS_FETCH_MB=%q: want 1..4096", v)
		}
		bigMB = n
	}
	big := filepath.Join(src, "big.bin")
	os.WriteFile(big, randomBytes(t, bigMB<<20), 0o644)
	tree := filepath.Join(src, "tree")
	os.MkdirAll(filepath.Join(tree, "sub", "deeper"), 0o755)
	os.WriteFile(filepath.Join(tree, "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(tree, "sub", "b.bin"), randomBytes(t, 1<<20+17), 0o644)
	os.WriteFile(filepath.Join(tree, "sub", "deeper", "empty"), nil, 0o644)
	unpacked := filepath.Join(src, "unpacked")
	os.MkdirAll(filepath.Join(unpacked, "lib"), 0o755)
	os.WriteFile(filepath.Join(unpacked, "lib", "x.txt"), []byte("from the archive\n"), 0o644)
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "lib/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "lib/x.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 17})
	io.WriteString(tw, "from the archive\n")
	tw.Close()
	gz.Close()
	os.WriteFile(filepath.Join(src, "env.tgz"), tgz.Bytes(), 0o644)
	big2 := filepath.Join(src, "big2.bin")
	os.WriteFile(big2, randomBytes(t, 1<<20), 0o644)

	app := "/user/alice/app"
	run := j.runDriver(t, "HdfsDriver", h.uri, "home\talice",
		"put\talice\t"+big+"\t"+app+"/big.bin",
		"put\talice\t"+tree+"\t"+app+"/tree",
		"put\talice\t"+filepath.Join(src, "env.tgz")+"\t"+app+"/env.tgz")
	var home, bigSt, treeSt, tgzSt hdfsStatus
	run.op(t, "home:alice").decode(t, &home)
	run.op(t, "put:alice").decode(t, &bigSt) // the first put's line
	for _, l := range run.lines {
		if l.Op == "put:alice" && l.OK {
			var st hdfsStatus
			l.decode(t, &st)
			switch st.Path {
			case app + "/tree":
				treeSt = st
			case app + "/env.tgz":
				tgzSt = st
			}
		}
		if !l.OK {
			t.Fatalf("HdfsDriver %s: %s: %s", l.Op, l.Exception, l.Message)
		}
	}
	if home.Owner != "alice" || bigSt.Len != int64(bigMB)<<20 || bigSt.Owner != "alice" || !treeSt.Dir || tgzSt.Len != int64(tgz.Len()) {
		t.Fatalf("uploaded: home %+v, big %+v, tree %+v, tgz %+v", home, bigSt, treeSt, tgzSt)
	}

	t.Run("fetched byte-identical", func(t *testing.T) {
		r := launchPod(t, launcher, "alice", &yarnpb.ContainerLaunchContextProto{
			LocalResources: []*yarnpb.StringLocalResourceMapProto{
				hdfsRes(h, "big.bin", app+"/big.bin", bigSt, yarnpb.LocalResourceTypeProto_FILE),
				hdfsRes(h, "tree", app+"/tree", treeSt, yarnpb.LocalResourceTypeProto_FILE),
				hdfsRes(h, "env", app+"/env.tgz", tgzSt, yarnpb.LocalResourceTypeProto_ARCHIVE),
			},
			Command: []string{"test -f big.bin && test -d tree/sub/deeper && test -f env/lib/x.txt"},
		})
		if r.code != 0 {
			t.Fatalf("launcher exit %d: %s\n%s", r.code, r.termination, tail(r.stderr, 3000))
		}
		a, _ := os.ReadFile(big)
		b, err := os.ReadFile(filepath.Join(r.work, "big.bin"))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("big.bin: %d bytes fetched (%v), %d uploaded: not identical", len(b), err, len(a))
		}
		sameTree(t, tree, filepath.Join(r.work, "tree"))
		sameTree(t, unpacked, filepath.Join(r.work, "env"))
		for _, m := range localizedLine.FindAllStringSubmatch(r.stderr, -1) {
			sec, _ := strconv.ParseFloat(m[2], 64)
			t.Logf("measured: localized %s in %.3f s", m[1], sec)
			if strings.HasSuffix(m[1], "/big.bin") && sec > 0 {
				t.Logf("measured: %d MiB from HDFS at %.1f MiB/s (launcher, fetcher process and checks included)", bigMB, float64(bigMB)/sec)
			}
		}
	})

	// "Submission" recorded big.bin's status; now it is replaced.
	run = j.runDriver(t, "HdfsDriver", h.uri, "put\talice\t"+big2+"\t"+app+"/big.bin")
	var replaced hdfsStatus
	run.op(t, "put:alice").decode(t, &replaced)
	if replaced.Mtime == bigSt.Mtime {
		t.Fatalf("the replaced file kept its modification time %d: the test cannot tell", bigSt.Mtime)
	}
	iso := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
	deadAddr := freeAddr(t)
	dead := &hdfsCluster{uri: "hdfs://" + deadAddr, addr: deadAddr}
	for _, c := range []struct {
		name, user string
		res        *yarnpb.StringLocalResourceMapProto
		want       string
	}{
		{"changed after submission", "alice", hdfsRes(h, "big.bin", app+"/big.bin", bigSt, yarnpb.LocalResourceTypeProto_FILE),
			fmt.Sprintf("resource %s%s/big.bin changed on src filesystem: timestamp expected %s, was %s", h.uri, app, iso(bigSt.Mtime), iso(replaced.Mtime))},
		{"recorded size differs", "alice", hdfsRes(h, "env", app+"/env.tgz", hdfsStatus{Len: tgzSt.Len + 1, Mtime: tgzSt.Mtime}, yarnpb.LocalResourceTypeProto_ARCHIVE),
			fmt.Sprintf("resource %s%s/env.tgz changed on src filesystem: size expected %d, was %d", h.uri, app, tgzSt.Len+1, tgzSt.Len)},
		{"another user", "bob", hdfsRes(h, "tree", app+"/tree", treeSt, yarnpb.LocalResourceTypeProto_FILE),
			"AccessControlException"},
		{"unreachable NameNode", "alice", hdfsRes(dead, "x", "/x.jar", hdfsStatus{Len: 1, Mtime: 1}, yarnpb.LocalResourceTypeProto_FILE),
			"no NameNode reachable at " + deadAddr},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := launchPod(t, launcher, c.user, &yarnpb.ContainerLaunchContextProto{
				LocalResources: []*yarnpb.StringLocalResourceMapProto{c.res}, Command: []string{"touch ran"}})
			if r.code != launch.ExitLocalizationFailed || !strings.Contains(r.termination, c.want) {
				t.Fatalf("launcher exit %d, termination log %q; want %d and %q\n%s", r.code, r.termination,
					launch.ExitLocalizationFailed, c.want, tail(r.stderr, 3000))
			}
			if _, err := os.Stat(filepath.Join(r.work, "ran")); err == nil {
				t.Fatal("the command ran")
			}
			t.Logf("refused: %s", r.termination)
		})
	}
}
