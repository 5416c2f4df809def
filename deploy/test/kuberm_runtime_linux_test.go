package test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
)

// What a YARN container pod needs from the node when the image is ours
// (FROM scratch, only /yarnfed) and the JDK, the shell and Hadoop are the
// operator's, on every host, as a NodeManager host has them: "host paths",
// mounted read-only at the same paths. Found by running pods without each
// one (TestKubermOnNode/host-path runtime); kuberm's
// host_paths setting takes this list.

// runtimeMount is one read-only hostPath mount of a YARN container pod.
type runtimeMount struct {
	Path string // on the host, and in the pod
	Why  string // what it provides
	// FailsWith matches what a pod without this mount reports (the
	// container's start error in its status, or its output); nil: the
	// commands here still run without it (see Why).
	FailsWith *regexp.Regexp
}

// systemMounts are the host's runtime for a Debian 12 host (merged /usr:
// /bin, /lib and /lib64 are symbolic links into /usr; a hostPath volume
// follows them, so the pod sees directories) with OpenJDK 17 from Debian.
// The errors are what runc 1.1.5 and bash 5.2 report here.
func systemMounts(javaHome string) []runtimeMount {
	return []runtimeMount{
		{Path: "/usr", Why: "the JDK (" + javaHome + "), bash, coreutils and every shared library (merged /usr)",
			FailsWith: regexp.MustCompile(`/bin/java: No such file or directory`)},
		{Path: "/bin", Why: "/bin/bash, the launch script's interpreter (and /bin/sh)",
			FailsWith: regexp.MustCompile(`exec: "/bin/bash": stat /bin/bash: no such file or directory`)},
		{Path: "/lib", Why: "libc and the dynamic loader's real file (/lib/x86_64-linux-gnu), where /lib64/ld-linux-x86-64.so.2 points",
			FailsWith: regexp.MustCompile(`exec /bin/bash: no such file or directory`)},
		{Path: "/lib64", Why: "/lib64/ld-linux-x86-64.so.2, the ELF interpreter every dynamic binary names",
			FailsWith: regexp.MustCompile(`exec /bin/bash: no such file or directory`)},
		// Measured: without it `java -version` and a Hadoop class still
		// run (Debian's launcher falls back to lib/jvm.cfg-default, the
		// security code to its built-in provider list), silently ignoring
		// the host's java.security, java.policy and logging.properties.
		{Path: "/etc/passwd", Why: "the containers' uid must have a name: Hadoop's login (UserGroupInformation, JAAS UnixLoginModule) refuses a uid getpwuid does not know",
			FailsWith: regexp.MustCompile(`Invalid UID, could not determine effective user`)},
		{Path: "/etc/group", Why: "group names (`id -Gn`, Hadoop's ShellBasedUnixGroupsMapping); without it Hadoop logs a warning and runs with no groups"},
		{Path: "/etc/java-17-openjdk", Why: "the JDK's configuration that $JAVA_HOME/conf and lib/jvm.cfg link to (java.security, java.policy, logging.properties): without it the JDK runs on built-in defaults, not the host's settings"},
	}
}

// javaRuntime is the host's JDK and the Hadoop jars e2e's Maven build
// resolves (the same 3.4 client, AM and server jars the interop tests use).
type javaRuntime struct {
	javaHome string
	// classpath is e2e/target/classpath.txt's jars, in order.
	classpath []string
}

// needJavaRuntime finds java and the Hadoop classpath (running e2e's Maven
// build when its output is missing or older than the pom). Missing java or
// mvn skips the test with the reason, or fails it under
// YARNFED_KUBENODE_REQUIRED=1.
func needJavaRuntime(t *testing.T) javaRuntime {
	t.Helper()
	missing := func(what string) {
		msg := "kuberm on the node needs " + what
		if os.Getenv(kubenode.EnvRequired) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		missing("java on PATH (apt-get install openjdk-17-jdk-headless)")
	}
	real, err := filepath.EvalSymlinks(java)
	if err != nil {
		t.Fatal(err)
	}
	rt := javaRuntime{javaHome: filepath.Dir(filepath.Dir(real))}
	e2e := filepath.Join(repoRoot(t), "e2e")
	cpFile := filepath.Join(e2e, "target", "classpath.txt")
	if classpathStale(cpFile, filepath.Join(e2e, "pom.xml")) {
		mvn, err := exec.LookPath("mvn")
		if err != nil {
			missing("mvn on PATH (apt-get install maven), to resolve the Hadoop jars")
		}
		// Only the dependency list (the execution e2e's package phase runs),
		// not e2e's own Java drivers.
		begin := time.Now()
		cmd := exec.Command(mvn, "-q", "-B", "-f", filepath.Join(e2e, "pom.xml"), "dependency:build-classpath@classpath")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("mvn dependency:build-classpath: %v\n%s", err, out)
		}
		t.Logf("mvn dependency:build-classpath: %v", time.Since(begin).Round(time.Millisecond))
	}
	b, err := os.ReadFile(cpFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Split(strings.TrimSpace(string(b)), string(os.PathListSeparator)) {
		if p != "" {
			rt.classpath = append(rt.classpath, p)
		}
	}
	if len(rt.classpath) == 0 {
		t.Fatalf("%s lists no jar", cpFile)
	}
	return rt
}

func classpathStale(cpFile, pom string) bool {
	cp, err := os.Stat(cpFile)
	if err != nil {
		return true
	}
	p, err := os.Stat(pom)
	return err != nil || p.ModTime().After(cp.ModTime())
}

// hostDirs is the test's world-readable tree on the host, mounted into the
// pods at the same paths: jars (the Hadoop classpath, hard-linked out of
// ~/.m2, which is under /root, mode 0700), conf (HADOOP_CONF_DIR) and home
// (the distributed shell client's home directory: with fs.defaultFS
// file:/// it uploads AppMaster.jar there, and the AM's pod must read it at
// the same path).
type hostDirs struct {
	root, jars, conf, home string
	// jarPaths are the jars in classpath order, under jars.
	jarPaths []string
}

func makeHostDirs(t *testing.T, rt javaRuntime) hostDirs {
	t.Helper()
	root, err := os.MkdirTemp("", "kuberm-node")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	h := hostDirs{root: root, jars: filepath.Join(root, "jars"), conf: filepath.Join(root, "conf"), home: filepath.Join(root, "home")}
	for _, d := range []string{root, h.jars, h.conf, h.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		// MkdirTemp makes 0700 and the umask may strip bits: the pods'
		// uid must traverse and read.
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The client runs as the pods' uid (runJava) and writes its staging
	// files into home.
	if err := os.Chown(h.home, podUIDNum, podUIDNum); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, src := range rt.classpath {
		base := filepath.Base(src)
		if n := seen[base]; n > 0 { // two artifacts with one file name
			base = fmt.Sprintf("%d-%s", n, base)
		}
		seen[filepath.Base(src)]++
		dst := filepath.Join(h.jars, base)
		if err := linkOrCopy(src, dst); err != nil {
			t.Fatal(err)
		}
		h.jarPaths = append(h.jarPaths, dst)
	}
	return h
}

// linkOrCopy hard-links src to dst (same file system: no copy), else copies
// it; either way dst is world-readable.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		if st, err := os.Stat(dst); err == nil && st.Mode().Perm()&0o004 != 0 {
			return nil
		}
		os.Remove(dst) // a link shares the mode: copy instead
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// mountPaths is every host path the pods of this test mount: the system's
// and the test's own directories.
func (h hostDirs) mountPaths(rt javaRuntime) []string {
	var ps []string
	for _, m := range systemMounts(rt.javaHome) {
		ps = append(ps, m.Path)
	}
	return append(ps, h.jars, h.conf, h.home)
}

// yarnNamespace creates the namespace kuberm's pods live in. hostPath
// volumes are refused by Pod Security's "baseline" and "restricted"
// levels, so it enforces "privileged" (warn and audit stay "restricted", so
// the API server still says what is not restricted); the pods themselves
// keep every other restricted setting (non-root, no privilege escalation,
// no capabilities, RuntimeDefault seccomp).
func yarnNamespace(ctx context.Context, t *testing.T, kc kubernetes.Interface, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "privileged",
		"pod-security.kubernetes.io/warn":    "restricted",
		"pod-security.kubernetes.io/audit":   "restricted",
	}}}
	if _, err := kc.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	// The ServiceAccount admission plugin refuses pods until the
	// controller-manager has made the namespace's default account.
	waitFor(ctx, t, "the default ServiceAccount of "+name, func() (bool, string) {
		_, err := kc.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// podUID is the uid kuberm's pods run as here (its run_as_user) and the
// test's Java clients too: nobody, the user Hadoop's LinuxContainerExecutor
// runs containers as in non-secure mode by default
// (yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user),
// and one the host's /etc/passwd (mounted) names. Hadoop cannot run as a
// uid without a passwd entry: UserGroupInformation's login fails with
// "Invalid UID, could not determine effective user" (seen with kuberm's
// default 65532, which neither the image nor the host knows).
const (
	podUIDNum = 65534
	podUID    = "65534"
)

// runtimePod is a pod of IMAGE as kuberm's container pods are (podUID,
// runAsNonRoot, no privilege escalation, no capabilities, RuntimeDefault
// seccomp, no service-account token, the pod network) that runs /bin/bash
// -c SCRIPT with the given host paths mounted read-only at the same paths.
func runtimePod(ns, name, image string, mounts []string, env map[string]string, script string) *corev1.Pod {
	no, yes := false, true
	uid := int64(podUIDNum)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: &no,
			EnableServiceLinks:           &no,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   &yes,
				RunAsUser:      &uid,
				RunAsGroup:     &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "container",
				Image:           image,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"/bin/bash", "-c", script},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	for k, v := range env {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: k, Value: v})
	}
	for i, m := range mounts {
		vol := fmt.Sprintf("host-%d", i)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: m}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: m, ReadOnly: true})
	}
	return p
}

// podOutcome is how a run-once pod ended.
type podOutcome struct {
	phase corev1.PodPhase
	// reason, exit and message: the container's termination (message is
	// what it wrote to /dev/termination-log, or the runtime's start error).
	reason, message string
	exit            int32
	logs            string
}

func (o podOutcome) String() string {
	return fmt.Sprintf("%s, %s exit %d %q; output:\n%s", o.phase, o.reason, o.exit, o.message, o.logs)
}

// waitPodEnded polls a run-once pod until it Succeeded or Failed (a
// container that cannot start ends Failed with the runtime's error, as
// does a command that exits non-zero) and returns how, with its output.
func waitPodEnded(ctx context.Context, t *testing.T, kc kubernetes.Interface, ns, name string) podOutcome {
	t.Helper()
	var o podOutcome
	waitFor(ctx, t, "pod "+ns+"/"+name+" to end", func() (bool, string) {
		p, err := kc.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		o = podOutcome{phase: p.Status.Phase}
		var last string
		for _, cs := range p.Status.ContainerStatuses {
			if term := cs.State.Terminated; term != nil {
				o.reason, o.message, o.exit = term.Reason, term.Message, term.ExitCode
			}
			if w := cs.State.Waiting; w != nil {
				last = w.Reason + ": " + w.Message
			}
		}
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, fmt.Sprintf("phase %s %s", p.Status.Phase, last)
	})
	if b, err := kc.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx); err == nil {
		o.logs = string(b)
	} else {
		o.logs = "(logs: " + err.Error() + ")"
	}
	return o
}

// waitFor polls cond every 250 ms until it holds or ctx ends (then the
// test fails with cond's last word).
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last: %s)", what, ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// nodeProcess is a yarnfed role run as a process of the node's network
// namespace (Cluster.Command): it binds the node IP as a process on the
// node (or a hostNetwork pod) would, so pods reach it at NodeIP:port and
// the test process through Cluster.DialContext.
type nodeProcess struct {
	name string
	cmd  *exec.Cmd
	log  string // file
	done chan struct{}
	err  error
}

// startNodeProcess starts BIN ARGS inside the cluster's network namespace,
// its output in a log file; it is stopped (SIGTERM, then SIGKILL after 15
// s) at cleanup, before the cluster's own teardown.
func startNodeProcess(t *testing.T, c *kubenode.Cluster, name, bin string, args ...string) *nodeProcess {
	t.Helper()
	logf, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	p := &nodeProcess{name: name, cmd: c.Command(bin, args...), log: logf.Name(), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	logf.Close()
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.tail(8000))
		}
	})
	return p
}

func (p *nodeProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *nodeProcess) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *nodeProcess) output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

func (p *nodeProcess) tail(n int) string {
	s := p.output()
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}

// waitOutput waits until the process's output matches re, failing the
// test if it exits first; it returns the match.
func (p *nodeProcess) waitOutput(ctx context.Context, t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	waitFor(ctx, t, fmt.Sprintf("%s to print %s", p.name, re), func() (bool, string) {
		if m = re.FindStringSubmatch(p.output()); m != nil {
			return true, ""
		}
		if p.exited() {
			t.Fatalf("%s exited (%v) before printing %s:\n%s", p.name, p.err, re, p.tail(8000))
		}
		return false, "not yet"
	})
	return m
}

// listenAddrs reads the "  name  host:port" lines a yarnfed role prints at
// start (kuberm: client, scheduler, admin, nm, webapp).
func listenAddrs(out string) map[string]string {
	addrs := map[string]string{}
	re := regexp.MustCompile(`^\s+([a-z]+)\s+(\d+\.\d+\.\d+\.\d+:\d+)\b`)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			addrs[m[1]] = m[2]
		}
	}
	return addrs
}
