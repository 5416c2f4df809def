//go:build interop

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// requiredEnv makes a missing Java or Maven a failure instead of a skip; CI
// sets it so the interop suite can never pass by not running.
const requiredEnv = "YARNFED_INTEROP_REQUIRED"

// javaEnv is the built Java side: the java binary and the classpath holding
// Hadoop's jars and our drivers.
type javaEnv struct {
	java      string
	classpath string
	jvmArgs   []string
}

var (
	javaOnce sync.Once
	javaErr  error
	javaSkip string
	theJava  *javaEnv
)

// needJava returns the built Java side, skipping the test (with the reason)
// when java or mvn is not installed, and failing it when the build fails.
func needJava(t testing.TB) *javaEnv {
	t.Helper()
	javaOnce.Do(func() { theJava, javaSkip, javaErr = buildJava() })
	if javaSkip != "" {
		if os.Getenv(requiredEnv) != "" {
			t.Fatalf("interop: %s (and %s is set)", javaSkip, requiredEnv)
		}
		t.Skipf("interop: %s", javaSkip)
	}
	if javaErr != nil {
		t.Fatalf("interop: building the Java side: %v", javaErr)
	}
	return theJava
}

func buildJava() (*javaEnv, string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, "java not found in PATH (install a JDK 17, e.g. apt-get install openjdk-17-jdk-headless)", nil
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		return nil, "", err
	}
	cpFile := filepath.Join(dir, "target", "classpath.txt")
	if stale(dir, cpFile) {
		mvn, err := exec.LookPath("mvn")
		if err != nil {
			return nil, "mvn not found in PATH (install Maven 3.8+, e.g. apt-get install maven)", nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-f", filepath.Join(dir, "pom.xml"), "package")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return nil, "", fmt.Errorf("mvn package: %w\n%s", err, tail(out.String(), 4000))
		}
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		return nil, "", fmt.Errorf("reading the Maven classpath: %w", err)
	}
	opts, err := os.ReadFile(filepath.Join(dir, "jvm.options"))
	if err != nil {
		return nil, "", err
	}
	return &javaEnv{
		java:      java,
		classpath: filepath.Join(dir, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(cp)),
		jvmArgs:   strings.Fields(string(opts)),
	}, "", nil
}

// stale reports whether the Maven output is older than the pom or any Java
// source or resource, so a warm checkout skips Maven entirely.
func stale(dir, cpFile string) bool {
	st, err := os.Stat(cpFile)
	if err != nil {
		return true
	}
	built := st.ModTime()
	newer := false
	check := func(p string) {
		if s, err := os.Stat(p); err == nil && s.ModTime().After(built) {
			newer = true
		}
	}
	check(filepath.Join(dir, "pom.xml"))
	_ = filepath.WalkDir(filepath.Join(dir, "src"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			check(p)
		}
		return nil
	})
	return newer
}

// driverLine is one JSON line printed by a Java driver.
type driverLine struct {
	Op          string          `json:"op"`
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	Exception   string          `json:"exception"`
	RemoteClass string          `json:"remoteClass"`
	Message     string          `json:"message"`
	Causes      []string        `json:"causes"`
}

func (l driverLine) decode(t testing.TB, v any) {
	t.Helper()
	if !l.OK {
		t.Fatalf("op %s failed in Java: %s: %s", l.Op, l.Exception, l.Message)
	}
	if err := json.Unmarshal(l.Result, v); err != nil {
		t.Fatalf("op %s: decoding %s: %v", l.Op, l.Result, err)
	}
}

// driverRun is what a driver JVM printed.
type driverRun struct {
	lines  []driverLine
	stderr string
}

// op returns the line printed for op, failing the test if there is none.
func (r driverRun) op(t testing.TB, op string) driverLine {
	t.Helper()
	for _, l := range r.lines {
		if l.Op == op {
			return l
		}
	}
	t.Fatalf("the driver printed no line for %q; stderr:\n%s", op, tail(r.stderr, 3000))
	return driverLine{}
}

// runDriver runs a Java main class to completion and parses its JSON lines.
// A non-zero exit is expected when an operation fails on purpose, so only
// the lines are checked by callers.
func (j *javaEnv) runDriver(t testing.TB, class string, args ...string) driverRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	argv := append(append([]string{}, j.jvmArgs...), "-cp", j.classpath, "org.yarnfed.e2e."+class)
	cmd := exec.CommandContext(ctx, j.java, append(argv, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("java %s %s: %v in %s", class, strings.Join(args, " "), exitText(err), time.Since(start).Round(time.Millisecond))
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running java %s: %v", class, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("java %s timed out; stderr:\n%s", class, tail(stderr.String(), 3000))
	}
	run := driverRun{stderr: stderr.String()}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var l driverLine
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("java %s printed a bad JSON line %q: %v", class, line, err)
		}
		run.lines = append(run.lines, l)
	}
	return run
}

// cliRun is what a stock Hadoop command-line tool printed.
type cliRun struct {
	stdout, stderr string
	exit           int
	took           time.Duration
}

// runCLI runs a stock Hadoop CLI main class (what the `yarn` script runs)
// with confDir first on the classpath, where the tool looks for
// yarn-site.xml, and returns its output and exit code.
func (j *javaEnv) runCLI(t testing.TB, confDir, class string, args ...string) cliRun {
	t.Helper()
	return j.runCLIWith(t, nil, confDir, class, args...)
}

// runCLIWith is runCLI with extra JVM flags (e.g. -Dyarnfed.e2e.log=INFO).
func (j *javaEnv) runCLIWith(t testing.TB, jvmFlags []string, confDir, class string, args ...string) cliRun {
	t.Helper()
	res, err := j.execCLI(cliOptions{jvmFlags: jvmFlags}, confDir, class, args...)
	t.Logf("%s %s: exit %d in %s", class[strings.LastIndex(class, ".")+1:], strings.Join(args, " "), res.exit, res.took.Round(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// cliOptions tune execCLI: extra JVM flags, the working directory (a
// file:/// job writes relative paths there), environment, and the time
// allowed.
type cliOptions struct {
	jvmFlags []string
	dir      string
	env      []string      // added to this process's environment
	timeout  time.Duration // default 3 minutes
}

// execCLI runs a stock Hadoop CLI main class to completion and returns its
// output and exit code; the error is for failures to run it at all (or a
// timeout), not for a non-zero exit. Safe to call from any goroutine.
func (j *javaEnv) execCLI(o cliOptions, confDir, class string, args ...string) (cliRun, error) {
	if o.timeout == 0 {
		o.timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	argv := append(append(append([]string{}, j.jvmArgs...), o.jvmFlags...), "-cp", confDir+string(os.PathListSeparator)+j.classpath, class)
	cmd := exec.CommandContext(ctx, j.java, append(argv, args...)...)
	cmd.Dir = o.dir
	if o.env != nil {
		cmd.Env = append(os.Environ(), o.env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := cliRun{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		res.exit = ee.ExitCode()
	default:
		res.exit = -1
		return res, fmt.Errorf("running %s: %v\n%s", class, err, tail(stderr.String(), 3000))
	}
	return res, nil
}

// javaHome is the JDK directory of the java binary in use.
func (j *javaEnv) javaHome() string {
	p, err := filepath.EvalSymlinks(j.java)
	if err != nil {
		p = j.java
	}
	return filepath.Dir(filepath.Dir(p))
}

func exitText(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// clusterInfo is the READY line of the MiniCluster launcher.
type clusterInfo struct {
	ClusterID string `json:"clusterId"`
	Epoch     int64  `json:"epoch"`
	RM        string `json:"rm"`
	Scheduler string `json:"scheduler"`
	Admin     string `json:"admin"`
	Tracker   string `json:"tracker"`
	Web       string `json:"web"`
	NMs       int    `json:"nms"`
	Conf      string `json:"conf"`
}

// miniCluster is a running MiniYARNCluster JVM; closing its stdin stops it.
type miniCluster struct {
	info    clusterInfo
	dir     string // conf, logs and the NMs' local and log dirs
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	logPath string
	done    chan error
}

type clusterOptions struct {
	clusterID string
	epoch     int64
	nms       int
	// nmMemoryMB is each NodeManager's memory (--nm-memory-mb); 0 keeps
	// the launcher's 4096 MB.
	nmMemoryMB int
	set        []string // extra key=value configuration
	// amSet is key=value configuration only the AMs (and other containers)
	// on this cluster's NodeManagers see, marked final: e.g. the scheduler
	// address of an AMRMProxy while the RM binds its own. See DESIGN.md.
	amSet []string
	// jvm are extra JVM flags (e.g. krbtest's -Djava.security.krb5.conf).
	jvm []string
}

// startMiniCluster starts a real RM with NMs on loopback and waits for READY.
func (j *javaEnv) startMiniCluster(opts clusterOptions, dir string) (*miniCluster, error) {
	logPath := filepath.Join(dir, "minicluster.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	argv := append(append(append([]string{}, j.jvmArgs...), opts.jvm...), "-cp", j.classpath, "org.yarnfed.e2e.MiniCluster",
		"--conf-out", filepath.Join(dir, "yarn-site.xml"),
		"--work-dir", filepath.Join(dir, "work"),
		"--cluster-id", opts.clusterID,
		"--epoch", fmt.Sprint(opts.epoch),
		"--nms", fmt.Sprint(opts.nms))
	if opts.nmMemoryMB > 0 {
		argv = append(argv, "--nm-memory-mb", fmt.Sprint(opts.nmMemoryMB))
	}
	// An NM marks its disks bad above 90% use (Hadoop's default) and the
	// cluster then runs nothing: CI and developer machines with a fuller
	// disk than that saw applications stay ACCEPTED. The standalone NMs
	// set the same. A test's own --set comes after and wins.
	argv = append(argv, "--set", "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage=99")
	for _, kv := range opts.set {
		argv = append(argv, "--set", kv)
	}
	// The containers' HADOOP_CONF_DIR: the RM's own yarn-site.xml, or the
	// AM-facing one when some keys differ for AMs.
	confDir := dir
	if len(opts.amSet) > 0 {
		confDir = filepath.Join(dir, "am-conf")
		argv = append(argv, "--am-conf-out", filepath.Join(confDir, "yarn-site.xml"))
		for _, kv := range opts.amSet {
			argv = append(argv, "--am-set", kv)
		}
	}
	cmd := exec.Command(j.java, argv...)
	cmd.Dir = dir
	// NodeManagers pass these (yarn.nodemanager.env-whitelist) to the
	// containers they launch: a managed AM finds java, and its classpath's
	// $HADOOP_CONF_DIR entry finds the yarn-site.xml of its NodeManager's
	// cluster (one host's configuration, in production terms).
	cmd.Env = append(os.Environ(), "JAVA_HOME="+j.javaHome(), "HADOOP_CONF_DIR="+confDir)
	cmd.Stderr = logf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	mc := &miniCluster{cmd: cmd, dir: dir, stdin: stdin, logPath: logPath, done: make(chan error, 1)}
	ready := make(chan clusterInfo, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if !sent && strings.HasPrefix(line, "READY ") {
				var info clusterInfo
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "READY ")), &info) == nil {
					ready <- info
					sent = true
				}
			}
		}
		mc.done <- cmd.Wait()
		logf.Close()
	}()
	select {
	case info := <-ready:
		mc.info = info
		return mc, nil
	case err := <-mc.done:
		mc.done <- err
		b, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("minicluster exited before READY (%v):\n%s", err, tail(string(b), 4000))
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		b, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("minicluster not READY within 3m:\n%s", tail(string(b), 4000))
	}
}

// stop closes stdin (the launcher then stops the cluster) and waits, killing
// the JVM if it does not exit promptly.
func (mc *miniCluster) stop() {
	_ = mc.stdin.Close()
	select {
	case <-mc.done:
	case <-time.After(30 * time.Second):
		_ = mc.cmd.Process.Kill()
		<-mc.done
	}
}

// loopback rewrites Hadoop's "localhost:port" into an IPv4 address: the JVMs
// run with preferIPv4Stack, and Go may try ::1 first.
func loopback(addr string) string {
	return strings.Replace(addr, "localhost:", "127.0.0.1:", 1)
}

var (
	clusterMu     sync.Mutex
	sharedCluster *miniCluster
	clusterErr    error
	clusterDir    string
)

// needCluster returns the one MiniYARNCluster shared by every scenario of the
// test binary (starting it takes seconds; scenarios use distinct apps).
func needCluster(t testing.TB) *miniCluster {
	t.Helper()
	j := needJava(t)
	clusterMu.Lock()
	defer clusterMu.Unlock()
	if sharedCluster == nil && clusterErr == nil {
		clusterDir, clusterErr = os.MkdirTemp("", "yarnfed-e2e-cluster-")
		if clusterErr == nil {
			start := time.Now()
			sharedCluster, clusterErr = j.startMiniCluster(clusterOptions{
				clusterID: "e2e-sc1", epoch: 7, nms: 2,
				// Offer every SASL quality of protection, so each client
				// picks by its own preference (Java's default: auth).
				set: []string{"hadoop.rpc.protection=authentication,integrity,privacy"},
			}, clusterDir)
			t.Logf("MiniYARNCluster started in %s: %+v", time.Since(start).Round(time.Millisecond), sharedCluster.infoOrZero())
		}
	}
	if clusterErr != nil {
		t.Fatalf("interop: starting MiniYARNCluster: %v", clusterErr)
	}
	return sharedCluster
}

// newCluster starts a MiniYARNCluster private to one test (e.g. a second
// sub-cluster with its own cluster id and epoch) and stops it at cleanup.
// Prefer needCluster when the shared one will do: each JVM costs seconds
// and a few hundred MB.
func newCluster(t testing.TB, opts clusterOptions) *miniCluster {
	t.Helper()
	return newClusters(t, opts)[0]
}

// newClusters starts several private MiniYARNClusters at once (JVM start is
// mostly waiting on class loading and I/O, so two overlap well even on two
// cores) and stops each at cleanup.
func newClusters(t testing.TB, opts ...clusterOptions) []*miniCluster {
	t.Helper()
	j := needJava(t)
	type started struct {
		mc   *miniCluster
		dir  string
		took time.Duration
		err  error
	}
	res := make([]started, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		dir, err := os.MkdirTemp("", "yarnfed-e2e-"+o.clusterID+"-")
		if err != nil {
			t.Fatal(err)
		}
		res[i].dir = dir
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			res[i].mc, res[i].err = j.startMiniCluster(o, dir)
			res[i].took = time.Since(start)
		}()
	}
	wg.Wait()
	// An RM's cluster timestamp is the time its JVM loaded the
	// ResourceManager class, in ms: two JVMs started together can get the
	// same one, and then hand out the same application ids (the router
	// rightly refuses the second submission). A cluster whose timestamp
	// another already has is started again, once, so it gets its own.
	seen := map[int64]bool{}
	for i, o := range opts {
		if res[i].mc == nil {
			continue
		}
		info, err := rmrest.NewClient(loopback(res[i].mc.info.Web)).GetClusterInfo(context.Background())
		if err != nil || !seen[info.ID] {
			if err == nil {
				seen[info.ID] = true
			}
			continue
		}
		t.Logf("MiniYARNCluster %s has cluster timestamp %d like another; starting it again", o.clusterID, info.ID)
		res[i].mc.stop()
		_ = os.RemoveAll(res[i].dir)
		if res[i].dir, err = os.MkdirTemp("", "yarnfed-e2e-"+o.clusterID+"-"); err != nil {
			t.Fatal(err)
		}
		res[i].mc, res[i].err = j.startMiniCluster(o, res[i].dir)
	}
	var out []*miniCluster
	for i, o := range opts {
		mc, dir := res[i].mc, res[i].dir
		if mc == nil {
			continue
		}
		t.Logf("MiniYARNCluster %s started in %s", o.clusterID, res[i].took.Round(time.Millisecond))
		t.Cleanup(func() {
			start := time.Now()
			mc.stop()
			t.Logf("MiniYARNCluster %s stopped in %s", o.clusterID, time.Since(start).Round(time.Millisecond))
			// Keep the RM log and the NMs' container logs of a failed test.
			if t.Failed() {
				t.Logf("MiniYARNCluster %s files kept in %s", o.clusterID, dir)
				return
			}
			_ = os.RemoveAll(dir)
		})
		out = append(out, mc)
	}
	for i, o := range opts {
		if res[i].err != nil {
			t.Fatalf("interop: starting MiniYARNCluster %s: %v (files in %s)", o.clusterID, res[i].err, res[i].dir)
		}
	}
	return out
}

func (mc *miniCluster) infoOrZero() clusterInfo {
	if mc == nil {
		return clusterInfo{}
	}
	return mc.info
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopUAMFed(code != 0)
	clusterMu.Lock()
	if sharedCluster != nil {
		sharedCluster.stop()
	}
	if clusterDir != "" && code == 0 {
		_ = os.RemoveAll(clusterDir)
	} else if clusterDir != "" {
		fmt.Fprintf(os.Stderr, "interop: MiniYARNCluster files kept in %s\n", clusterDir)
	}
	clusterMu.Unlock()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// writeYarnSite writes a minimal yarn-site.xml for a Java client.
func writeYarnSite(t testing.TB, props map[string]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for k, v := range props {
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", k, v)
	}
	b.WriteString("</configuration>\n")
	p := filepath.Join(t.TempDir(), "yarn-site.xml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// kill SIGKILLs the cluster's JVM (its RM and NMs die at once, as a lost
// host's would) and waits until it is gone; stop afterwards is a no-op.
func (mc *miniCluster) kill() {
	_ = mc.cmd.Process.Kill()
	err := <-mc.done
	mc.done <- err
}
