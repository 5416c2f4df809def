package test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
	"github.com/yarnfed/yarnfed/kuberm"
)

// Spark as PyPI ships it: the pyspark source distribution carries Spark's
// own jars (spark-core, spark-yarn, the shaded Hadoop client), bin/
// (spark-submit), python/lib (pyspark.zip, py4j) and the Python examples.
// Spark's Scala examples jar is not on Maven Central, so SparkPi's Python
// twin, examples/src/main/python/pi.py, is the example run here, unmodified.
const (
	sparkVersion = "3.5.9"
	// sparkSdistSHA256 pins the sdist pip fetches (--require-hashes):
	// PyPI's published digest of pyspark-3.5.9.tar.gz (317,858,593 bytes).
	sparkSdistSHA256 = "ea27adc39ddac9413b8951e45aa748cbed6c785971b81386efc41938f6243d93"
	sparkPiArg       = "10" // partitions: 10 tasks of 100,000 samples
)

// sparkPiLine is what pi.py prints on the driver's stdout.
var sparkPiLine = regexp.MustCompile(`Pi is roughly (3\.1[0-9]*)`)

// sparkRun is the Spark proof (TestKubermOnNode's "Spark Pi"): Spark 3.5's
// own Pi example (pi.py), submitted unmodified by Spark's own spark-submit
// in YARN cluster mode through the router to the kube sub-cluster
// (`yarnfed kuberm`). The AM (the Spark driver, with its Python) and every
// executor (with its Python workers) are pods bound by kube-scheduler;
// Spark's client stages its jars archive, its conf archive, pi.py and the
// PySpark archives on file:// (a host path the pods mount), the launcher
// localizes them (the archives unpacked); the pods are in the node's
// network (kuberm host_network), as a NodeManager's containers are. The
// application must SUCCEED, the driver must have printed Pi, and nothing
// of the application may be left.
func sparkRun(ctx context.Context, t *testing.T, c *kubenode.Cluster, kc kubernetes.Interface, bin, kubeconfig string, rt javaRuntime) {
	begin := time.Now()
	cached := sparkFetch(t)
	hd := sparkMakeHostDirs(t, cached)
	t.Logf("step spark %s distribution and host directories ready: %v", sparkVersion, time.Since(begin).Round(time.Millisecond))

	// The pods' runtime for Spark: the system host paths (the JDK and
	// /usr/bin/python3 under /usr) and the client's home (its staging);
	// JAVA_HOME in their environment. No HADOOP_CONF_DIR: Spark ships the
	// client's in __spark_conf__.zip.
	begin = time.Now()
	sparkWriteHadoopConf(t, hd)
	f := startKubeFed(ctx, t, c, bin, kubeconfig, hd.mounts, map[string]string{"JAVA_HOME": rt.javaHome}, map[string]any{
		// A YARN container's address is its NodeId's host (the node's
		// IP): Spark's executors bind their block manager to it (their
		// --hostname), which a pod on the pod network cannot. Found here:
		// see kuberm/DESIGN.md "Container networking".
		"host_network": true,
	})
	t.Logf("step federation up (state store, kuberm registered, router): %v", time.Since(begin).Round(time.Millisecond))

	w := watchPods(ctx, t, kc)
	logs := sparkKeepAMLogs(ctx, c, w)
	begin = time.Now()
	out, err := sparkSubmit(ctx, c, rt.javaHome, hd, 15*time.Minute)
	logs.stop()
	t.Logf("step spark-submit (cluster mode, pi.py %s): %v after %v", sparkPiArg, err, time.Since(begin).Round(time.Millisecond))
	app := regexp.MustCompile(`application_\d+_\d+`).FindString(out)
	if err != nil || !regexp.MustCompile(`final status: SUCCEEDED`).MatchString(out) {
		t.Errorf("spark-submit through the router: %v (it exits 0 only when the application SUCCEEDED)\n%s", err, tail(out, 10000))
		w.dump(t, app)
		sparkDumpAMLogs(t, c, w, app)
		f.rm.stop()
		t.Fatalf("kuberm log:\n%s", f.rm.tail(12000))
	}
	if app == "" {
		t.Fatalf("spark-submit printed no application id:\n%s", tail(out, 4000))
	}
	for _, line := range regexp.MustCompile(`(?m)^.*(Uploading resource|Submitted application|final status).*$`).FindAllString(out, -1) {
		t.Logf("spark-submit: %s", strings.TrimSpace(line))
	}

	begin = time.Now()
	am := sparkCheckPods(t, c, w, logs, app, hd.mounts)
	sparkLauncherLog(ctx, t, kc, am)
	checkAppGone(ctx, t, kc, app, false)
	t.Logf("step checks and leak check: %v", time.Since(begin).Round(time.Millisecond))
}

func sparkMissing(t *testing.T, what string) {
	t.Helper()
	msg := "Spark on kuberm needs " + what
	if os.Getenv(kubenode.EnvRequired) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// sparkCacheDir is ${YARNFED_CACHE:-$HOME/.cache/yarnfed}/spark/<version>.
func sparkCacheDir() string {
	root := os.Getenv("YARNFED_CACHE")
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".cache", "yarnfed")
	}
	return filepath.Join(root, "spark", sparkVersion)
}

// sparkFetch returns a SPARK_HOME laid out as `pip install pyspark` lays
// it out (bin, jars, python/lib, examples/src/main/python), cached in
// sparkCacheDir: reused when complete, else made from the pyspark sdist
// that pip downloads from PyPI (hash-pinned), keeping only what a YARN
// submission of pi.py uses (the jars, bin, the two Python archives, pi.py).
func sparkFetch(t *testing.T) string {
	t.Helper()
	dir := sparkCacheDir()
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		t.Logf("spark %s: cached at %s", sparkVersion, dir)
		return dir
	}
	pip, pipArgs := "", []string(nil)
	if p, err := exec.LookPath("pip3"); err == nil {
		pip = p
	} else if p, err := exec.LookPath("python3"); err == nil {
		pip, pipArgs = p, []string{"-m", "pip"}
	} else {
		sparkMissing(t, "pip (python3 -m pip) to download pyspark "+sparkVersion+" from PyPI")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	work, err := os.MkdirTemp(filepath.Dir(dir), sparkVersion+".partial-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	req := filepath.Join(work, "requirements.txt")
	if err := os.WriteFile(req, []byte("pyspark=="+sparkVersion+" --hash=sha256:"+sparkSdistSHA256+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dl := filepath.Join(work, "dl")
	begin := time.Now()
	cmd := exec.Command(pip, append(pipArgs, "download", "--no-deps", "--no-binary", ":all:", "--require-hashes",
		"--disable-pip-version-check", "-d", dl, "-r", req)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pip download pyspark==%s: %v\n%s", sparkVersion, err, tail(string(out), 4000))
	}
	t.Logf("spark %s: pip download: %v", sparkVersion, time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	home := filepath.Join(work, "spark")
	n, err := sparkExtract(filepath.Join(dl, "pyspark-"+sparkVersion+".tar.gz"), home)
	if err != nil {
		t.Fatalf("unpack pyspark %s: %v", sparkVersion, err)
	}
	for _, must := range []string{"bin/spark-submit", "jars/spark-yarn_2.12-" + sparkVersion + ".jar", "python/lib/pyspark.zip", "examples/src/main/python/pi.py"} {
		if _, err := os.Stat(filepath.Join(home, must)); err != nil {
			t.Fatalf("pyspark %s's sdist has no %s: %v", sparkVersion, must, err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(dir) // an earlier partial or corrupt copy
	if err := os.Rename(home, dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("spark %s: unpacked %d files into %s: %v", sparkVersion, n, dir, time.Since(begin).Round(time.Millisecond))
	return dir
}

// sparkExtract unpacks the parts of the pyspark sdist a submission uses
// into SPARK_HOME's layout (pyspark's setup.py maps them the same way:
// deps/jars -> jars, deps/bin -> bin, lib -> python/lib, deps/examples ->
// examples/src/main/python).
func sparkExtract(sdist, home string) (int, error) {
	f, err := os.Open(sdist)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return 0, err
	}
	prefix := "pyspark-" + sparkVersion + "/"
	maps := [][2]string{
		{"deps/jars/", "jars/"},
		{"deps/bin/", "bin/"},
		{"lib/", "python/lib/"},
		{"deps/examples/pi.py", "examples/src/main/python/pi.py"},
	}
	n := 0
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name, ok := strings.CutPrefix(h.Name, prefix)
		if !ok || strings.Contains(name, "..") {
			continue
		}
		var dst string
		for _, m := range maps {
			if !strings.HasSuffix(m[0], "/") { // one file
				if name == m[0] {
					dst = m[1]
				}
			} else if rest, ok := strings.CutPrefix(name, m[0]); ok && !strings.Contains(rest, "/") {
				dst = m[1] + rest
			}
			if dst != "" {
				break
			}
		}
		if dst == "" {
			continue
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(dst, "bin/") {
			mode = 0o755
		}
		p := filepath.Join(home, dst)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return n, err
		}
		out, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		if err != nil {
			return n, err
		}
		if _, err := io.Copy(out, tr); err != nil {
			out.Close()
			return n, err
		}
		if err := out.Close(); err != nil {
			return n, err
		}
		// Spark records each local resource's modification time and the
		// launcher compares it (FSDownload's rule); keep the sdist's.
		if err := os.Chtimes(p, h.ModTime, h.ModTime); err != nil {
			return n, err
		}
		n++
	}
}

// sparkHostDirs is the test's world-readable tree: spark (SPARK_HOME for
// the client, which runs as the pods' uid: hard links into the cache, which
// is under /root, mode 0700), conf (the client's HADOOP_CONF_DIR: Spark
// ships it to the AM in __spark_conf__.zip) and home (the client's home and
// its file:// staging directory, the one the pods mount, at the same path).
type sparkHostDirs struct {
	root, spark, conf, home string
	mounts                  []string // every host path the pods mount
}

func sparkMakeHostDirs(t *testing.T, cached string) sparkHostDirs {
	t.Helper()
	root, err := os.MkdirTemp("", "kuberm-spark")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	h := sparkHostDirs{root: root, spark: filepath.Join(root, "spark"), conf: filepath.Join(root, "conf"), home: filepath.Join(root, "home")}
	for _, d := range []string{root, h.conf, h.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err = filepath.WalkDir(cached, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(cached, p)
		dst := filepath.Join(h.spark, rel)
		if d.IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			return os.Chmod(dst, 0o755)
		}
		return linkOrCopy(p, dst)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The client runs as the pods' uid and writes its staging there.
	if err := os.Chown(h.home, podUIDNum, podUIDNum); err != nil {
		t.Fatal(err)
	}
	for _, m := range systemMounts("") {
		h.mounts = append(h.mounts, m.Path)
	}
	// Not SPARK_HOME: Spark's client stages its jars (the
	// __spark_libs__ archive), pi.py and the PySpark archives, so the pods
	// need the JDK, python3 and the staging directory only.
	h.mounts = append(h.mounts, h.home)
	return h
}

// sparkWriteHadoopConf: clients reach the router, the AM kuberm's
// scheduler port, staging on file:// (no HDFS here).
func sparkWriteHadoopConf(t *testing.T, hd sparkHostDirs) {
	t.Helper()
	site := clientSiteXML([2]string{"fs.defaultFS", "file:///"})
	for _, name := range []string{"yarn-site.xml", "core-site.xml"} {
		if err := os.WriteFile(filepath.Join(hd.conf, name), []byte(site), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sparkConf is what an operator sets for Spark on kuberm (README text in
// kuberm/DESIGN.md), plus the smallest sizes that run pi.py.
func sparkConf(hd sparkHostDirs) [][2]string {
	return [][2]string{
		// Staging on a file system every pod mounts at the same path (no
		// HDFS here; the default is the client's home directory, which the
		// JVM takes from the passwd entry, not $HOME).
		{"spark.yarn.stagingDir", "file://" + hd.home},
		// The Python of the pods (the host's, under /usr).
		{"spark.pyspark.python", "/usr/bin/python3"},
		// Small: the node has 2 cores (1 vcore = 1000m), so the driver and
		// one executor fill it.
		{"spark.executor.instances", "1"},
		{"spark.executor.cores", "1"},
		{"spark.driver.cores", "1"},
		{"spark.driver.memory", "512m"},
		{"spark.executor.memory", "512m"},
		{"spark.yarn.report.interval", "2s"},
	}
}

// sparkSubmit runs Spark's own spark-submit in the node's network
// namespace as the pods' uid (its staging must be readable by the
// launcher in the pods) with HOME, java.io.tmpdir and the staging
// directory in the mounted home.
func sparkSubmit(ctx context.Context, c *kubenode.Cluster, javaHome string, hd sparkHostDirs, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tmp := filepath.Join(hd.home, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	if err := os.Chown(tmp, podUIDNum, podUIDNum); err != nil {
		return "", err
	}
	argv := []string{"--reuid=" + podUID, "--regid=" + podUID, "--clear-groups", "--",
		filepath.Join(hd.spark, "bin", "spark-submit"), "--master", "yarn", "--deploy-mode", "cluster", "--name", "kuberm-spark-pi"}
	for _, kv := range sparkConf(hd) {
		argv = append(argv, "--conf", kv[0]+"="+kv[1])
	}
	argv = append(argv, filepath.Join(hd.spark, "examples", "src", "main", "python", "pi.py"), sparkPiArg)
	cmd := c.Command("setpriv", argv...)
	cmd.Dir = hd.home
	cmd.Env = append(cmd.Env, "HOME="+hd.home, "JAVA_HOME="+javaHome, "SPARK_HOME="+hd.spark, "HADOOP_CONF_DIR="+hd.conf,
		"HADOOP_USER_NAME=sparkuser", "SPARK_SUBMIT_OPTS=-Djava.io.tmpdir="+tmp+" -Duser.home="+hd.home)
	return runClient(ctx, cmd, "spark-submit")
}

// sparkLogFile reads a file of a pod's log directory (kuberm's `logs`
// emptyDir) from the kubelet's directory on the host: the driver's stdout
// lives there, and stays while the ended AM pod does.
func sparkLogFile(c *kubenode.Cluster, p *corev1.Pod, name string) (string, error) {
	dir := filepath.Join(c.Dir, "kubelet", "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", "logs")
	var found string
	err := filepath.WalkDir(dir, func(q string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name && found == "" {
			found = q
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if found == "" {
		return "", fmt.Errorf("no %s under %s", name, dir)
	}
	b, err := os.ReadFile(found)
	return string(b), err
}

// sparkAMLogs keeps the last copy of each AM pod's stdout and stderr read
// while the application ran. The files live in the pod's emptyDir, which
// the kubelet removes with the rest of a terminated pod's volumes, sometimes
// before the test reads them (seen in a CI run: the application SUCCEEDED
// and "no stdout under .../empty-dir/logs").
type sparkAMLogs struct {
	mu   sync.Mutex
	last map[string]string // pod UID/file -> content
	done chan struct{}
	wg   sync.WaitGroup
}

func sparkKeepAMLogs(ctx context.Context, c *kubenode.Cluster, w *podWatch) *sparkAMLogs {
	l := &sparkAMLogs{last: map[string]string{}, done: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, p := range w.pods() {
				if p.Labels[kuberm.LabelRole] != kuberm.RoleAM {
					continue
				}
				for _, f := range []string{"stdout", "stderr"} {
					if s, err := sparkLogFile(c, p, f); err == nil {
						l.mu.Lock()
						if k := string(p.UID) + "/" + f; len(s) >= len(l.last[k]) {
							l.last[k] = s
						}
						l.mu.Unlock()
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-l.done:
				return
			case <-tick.C:
			}
		}
	}()
	return l
}

// stop ends the copying.
func (l *sparkAMLogs) stop() {
	close(l.done)
	l.wg.Wait()
}

// read is the pod's file as it is now, or else its last copy.
func (l *sparkAMLogs) read(c *kubenode.Cluster, p *corev1.Pod, name string) (string, error) {
	s, err := sparkLogFile(c, p, name)
	l.mu.Lock()
	kept := l.last[string(p.UID)+"/"+name]
	l.mu.Unlock()
	if err != nil || len(kept) > len(s) {
		if kept != "" {
			return kept, nil
		}
	}
	return s, err
}

// sparkDumpAMLogs logs the AM pods' stdout and stderr (what the driver
// said) for a failed run.
func sparkDumpAMLogs(t *testing.T, c *kubenode.Cluster, w *podWatch, app string) {
	t.Helper()
	for _, p := range w.pods() {
		if app != "" && p.Labels[kuberm.LabelApplication] != app {
			continue
		}
		for _, f := range []string{"stdout", "stderr", "prelaunch.err"} {
			s, err := sparkLogFile(c, p, f)
			if err != nil {
				t.Logf("pod %s %s: %v", p.Name, f, err)
				continue
			}
			t.Logf("pod %s %s:\n%s", p.Name, f, tail(s, 8000))
		}
	}
}

// sparkCheckPods: the application's AM (the driver) and its executors ran
// as pods of the kuberm image that kube-scheduler bound, with requests =
// limits, the host paths mounted read-only and the node's network; the
// driver printed Pi (its stdout, in the AM pod's log directory); its log
// shows each executor registering from its NodeId's host and the ten
// tasks finishing on the executors.
func sparkCheckPods(t *testing.T, c *kubenode.Cluster, w *podWatch, logs *sparkAMLogs, app string, hostPaths []string) *corev1.Pod {
	t.Helper()
	var am *corev1.Pod
	executors := 0
	for _, p := range w.pods() {
		if p.Labels[kuberm.LabelApplication] != app {
			continue
		}
		w.mu.Lock()
		first := w.first[p.Name]
		w.mu.Unlock()
		switch p.Labels[kuberm.LabelRole] {
		case kuberm.RoleAM:
			am = p
		case kuberm.RoleContainer:
			executors++
		default:
			t.Errorf("pod %s has role %q", p.Name, p.Labels[kuberm.LabelRole])
		}
		if first.Spec.NodeName != "" {
			t.Errorf("pod %s was created bound to %q: kuberm must leave placement to kube-scheduler", p.Name, first.Spec.NodeName)
		}
		if p.Spec.NodeName != kubenode.NodeName || p.Spec.SchedulerName != corev1.DefaultSchedulerName {
			t.Errorf("pod %s: node %q by scheduler %q, want %s by %s", p.Name, p.Spec.NodeName, p.Spec.SchedulerName, kubenode.NodeName, corev1.DefaultSchedulerName)
		}
		if !p.Spec.HostNetwork {
			t.Errorf("pod %s is not in the node's network (kuberm host_network)", p.Name)
		}
		main := p.Spec.Containers[0]
		if main.Image != kubermImage {
			t.Errorf("pod %s runs %s, want %s", p.Name, main.Image, kubermImage)
		}
		req, lim := main.Resources.Requests, main.Resources.Limits
		if req.Cpu().IsZero() || req.Memory().IsZero() || !req.Cpu().Equal(*lim.Cpu()) || !req.Memory().Equal(*lim.Memory()) {
			t.Errorf("pod %s: requests %v, limits %v: want a size with requests = limits", p.Name, req, lim)
		}
		mounted := readOnlyMounts(main)
		for _, hp := range hostPaths {
			if !mounted[hp] {
				t.Errorf("pod %s does not mount host path %s read-only", p.Name, hp)
			}
		}
	}
	if am == nil || executors < 1 {
		t.Fatalf("application %s: AM pod %v, %d executor pods; want one AM and at least one executor", app, am != nil, executors)
	}
	t.Logf("application %s: AM pod %s, %d executor pod(s)", app, am.Name, executors)
	stdout, err := logs.read(c, am, "stdout")
	if err != nil {
		t.Fatalf("the driver's stdout: %v", err)
	}
	m := sparkPiLine.FindStringSubmatch(stdout)
	if m == nil {
		t.Errorf("the driver's stdout has no %q:\n%s", sparkPiLine, tail(stdout, 4000))
	} else {
		t.Logf("the driver printed: %s", m[0])
	}
	stderr, err := logs.read(c, am, "stderr")
	if err != nil {
		t.Fatalf("the driver's stderr: %v", err)
	}
	reg := regexp.MustCompile(`Registered executor \S+ \((\d+\.\d+\.\d+\.\d+):\d+\) with ID (\d+)`).FindAllStringSubmatch(stderr, -1)
	if len(reg) == 0 {
		t.Errorf("the driver's log shows no executor registering:\n%s", tail(stderr, 6000))
	}
	for _, r := range reg {
		if r[1] != kubenode.NodeIP {
			t.Errorf("executor %s registered from %s, not from its NodeId's host %s", r[2], r[1], kubenode.NodeIP)
		}
	}
	sparkTimeline(t, stderr)
	done := regexp.MustCompile(`Finished task \S+ in stage \S+ \(TID \d+\) in \d+ ms on \S+ \(executor \d+\) \((\d+)/(\d+)\)`).FindAllStringSubmatch(stderr, -1)
	if len(done) == 0 || done[len(done)-1][1] != sparkPiArg || done[len(done)-1][2] != sparkPiArg {
		t.Errorf("the driver's log does not show the %s tasks finishing on executors (%d lines)", sparkPiArg, len(done))
	}
	return am
}

// sparkLauncherLog logs the AM pod's start (created, launcher installed,
// launcher started) and what its launcher said about localization (the
// pod's log): the share of the Spark jars archive in the run.
func sparkLauncherLog(ctx context.Context, t *testing.T, kc kubernetes.Interface, am *corev1.Pod) {
	t.Helper()
	created := am.CreationTimestamp.Time
	for _, s := range am.Status.InitContainerStatuses {
		if s.State.Terminated != nil {
			t.Logf("AM pod: launcher installed %v after creation", s.State.Terminated.FinishedAt.Sub(created))
		}
	}
	for _, s := range am.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			t.Logf("AM pod: launcher started %v after creation, exited %v after", s.State.Terminated.StartedAt.Sub(created), s.State.Terminated.FinishedAt.Sub(created))
		}
	}
	b, err := kc.CoreV1().Pods(kubermNS).GetLogs(am.Name, &corev1.PodLogOptions{Container: am.Spec.Containers[0].Name}).DoRaw(ctx)
	if err != nil {
		t.Logf("AM pod log: %v", err)
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "localized") {
			t.Logf("AM launcher: %s", line)
		}
	}
}

// sparkTimeline logs when the driver reached each milestone (its log4j
// timestamps, to the second): where spark-submit's time went.
func sparkTimeline(t *testing.T, driverLog string) {
	t.Helper()
	marks := []struct{ what, re string }{
		{"driver JVM logging", `.`},
		{"registered with kuberm", `Registering the ApplicationMaster`},
		{"first executor container launched", `Launching container \S+ on host`},
		{"first executor registered", `Registered executor`},
		{"job started", `Starting job`},
		{"job finished", `Job 0 finished`},
		{"unregistering", `Final app status|Unregistering ApplicationMaster`},
	}
	stamp := regexp.MustCompile(`(?m)^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d) `)
	var first time.Time
	for _, m := range marks {
		re := regexp.MustCompile(`(?m)^\d\d/\d\d/\d\d \d\d:\d\d:\d\d .*` + m.re)
		line := re.FindString(driverLog)
		if line == "" {
			t.Logf("driver timeline: %s: not in the log", m.what)
			continue
		}
		at, err := time.Parse("06/01/02 15:04:05", stamp.FindStringSubmatch(line)[1])
		if err != nil {
			continue
		}
		if first.IsZero() {
			first = at
		}
		t.Logf("driver timeline: +%3.0fs %s", at.Sub(first).Seconds(), m.what)
	}
}
