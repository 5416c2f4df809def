package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
	"github.com/yarnfed/yarnfed/kuberm"
)

const (
	storeAddr  = kubenode.NodeIP + ":9090"
	raftAddr   = kubenode.NodeIP + ":9091"
	routerAddr = kubenode.NodeIP + ":8050"
	dsClass    = "org.apache.hadoop.yarn.applications.distributedshell.Client"
	cliClass   = "org.apache.hadoop.yarn.client.cli.ApplicationCLI"
)

// runDistributedShell: a federation of one kube sub-cluster on the node
// (startDSFed), then the stock distributed shell client (-num_containers 4)
// through the router. Every pod kuberm makes is watched from before the
// submission, so the checks see each one as it was created (unbound),
// bound, and ended.
func runDistributedShell(ctx context.Context, t *testing.T, c *kubenode.Cluster, kc kubernetes.Interface, bin, kubeconfig string, rt javaRuntime, hd hostDirs) {
	f := startDSFed(ctx, t, c, bin, kubeconfig, rt, hd)
	w := watchPods(ctx, t, kc)
	dsJar := hd.dsJar(t)
	marker := fmt.Sprintf("kuberm-ds-%d", time.Now().UnixNano())
	// The shell command's stdout goes to <LOG_DIR>/stdout, an emptyDir
	// that dies with the pod; tee also writes it to the container's
	// termination message, which the API server keeps in the pod status.
	begin := time.Now()
	out, err := runJava(ctx, c, rt, hd, 10*time.Minute, dsClass,
		"-jar", dsJar, "-appname", "kuberm-ds", "-queue", "default", "-log_properties", filepath.Join(hd.conf, "am-log4j.properties"),
		"-shell_command", "echo "+marker+" $CONTAINER_ID | tee /dev/termination-log",
		"-num_containers", "4", "-container_memory", "256", "-container_vcores", "1",
		"-master_memory", "512", "-master_vcores", "1", "-timeout", "540000")
	t.Logf("distributed shell client: %v after %v", err, time.Since(begin).Round(time.Millisecond))
	app := regexp.MustCompile(`application_\d+_\d+`).FindString(out)
	if err != nil {
		t.Errorf("distributed shell through the router: %v (exit 0 means the application SUCCEEDED)\n%s", err, tail(out, 8000))
		w.dump(t, app)
		f.rm.stop()
		t.Fatalf("kuberm log:\n%s", f.rm.tail(12000))
	}
	if app == "" {
		t.Fatalf("the client printed no application id:\n%s", tail(out, 4000))
	}
	if !strings.Contains(out, "Application completed successfully") {
		t.Errorf("the client did not report success:\n%s", tail(out, 4000))
	}
	checkAppPods(t, w, app, marker, hd.mountPaths(rt), 4)
	checkAppGone(ctx, t, kc, app, false)

	// Kill through the router: every pod of the application goes, the AM
	// pod too, and so do the launch Secrets (owned by the container pods).
	t.Run("kill through the router", func(t *testing.T) {
		_, r := killThroughRouter(ctx, t, c, kc, rt, hd, w, func(ctx context.Context) (string, error) {
			return runJava(ctx, c, rt, hd, 10*time.Minute, dsClass,
				"-jar", dsJar, "-appname", "kuberm-ds-kill", "-queue", "default", "-shell_command", "sleep 600",
				"-num_containers", "1", "-container_memory", "256", "-master_memory", "512", "-timeout", "540000")
		})
		if r.err == nil {
			t.Errorf("the killed application's client exited 0:\n%s", tail(r.out, 4000))
		}
	})
}

// writeHadoopConf writes HADOOP_CONF_DIR (the client's and, mounted at the
// same path, the AM's and containers'): clients reach the router, AMs
// kuberm's scheduler port (its AMRMToken's service is that address), the
// AM's classpath is the mounted jars, INFO logging so the client prints
// the application id.
func writeHadoopConf(t *testing.T, hd hostDirs) {
	t.Helper()
	const layout = "log4j.appender.console=org.apache.log4j.ConsoleAppender\nlog4j.appender.console.target=System.err\n" +
		"log4j.appender.console.layout=org.apache.log4j.PatternLayout\nlog4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n\n"
	files := map[string]string{
		"yarn-site.xml": clientSiteXML([2]string{"yarn.application.classpath", "$HADOOP_CONF_DIR," + hd.jars + "/*"}),
		"core-site.xml": "<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>fs.defaultFS</name><value>file:///</value></property>\n</configuration>\n",
		// Not log4j.properties: HADOOP_CONF_DIR precedes the AM's own
		// ./log4j.properties on its classpath. The clients name this one
		// with -Dlog4j.configuration (runJava).
		"client-log4j.properties": "log4j.rootLogger=INFO,console\n" + layout,
		// The AM's (the client's -log_properties): its log goes to
		// <LOG_DIR>/AppMaster.stderr, an emptyDir gone with the pod, so
		// errors also go to its termination message, which the API server
		// keeps (the first 4 KiB): where a failed run's AM says why.
		"am-log4j.properties": "log4j.rootLogger=INFO,console,term\n" + layout +
			"log4j.appender.term=org.apache.log4j.FileAppender\nlog4j.appender.term.File=/dev/termination-log\n" +
			"log4j.appender.term.Threshold=ERROR\nlog4j.appender.term.layout=org.apache.log4j.PatternLayout\n" +
			"log4j.appender.term.layout.ConversionPattern=%p %c{2}: %m%n\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(hd.conf, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// clientSiteXML is a Hadoop configuration file for the clients and AMs
// here: clients reach the router, AMs kuberm's scheduler port (their
// AMRMToken's service is that address), no timeline service, and short
// connection retries (a test fails in seconds, not in Hadoop's 15
// minutes); extra properties follow.
func clientSiteXML(extra ...[2]string) string {
	props := append([][2]string{
		{"yarn.resourcemanager.address", routerAddr},
		{"yarn.resourcemanager.scheduler.address", kubermPorts["scheduler_address"]},
		{"yarn.timeline-service.enabled", "false"},
		{"yarn.resourcemanager.connect.max-wait.ms", "30000"},
		{"yarn.resourcemanager.connect.retry-interval.ms", "500"},
		{"yarn.client.nodemanager-connect.max-wait-ms", "30000"},
		{"yarn.client.nodemanager-connect.retry-interval-ms", "500"},
	}, extra...)
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for _, p := range props {
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", p[0], p[1])
	}
	b.WriteString("</configuration>\n")
	return b.String()
}

// runJava runs a stock Hadoop main class inside the node's network
// namespace (the router and kuberm listen on the node IP) as podUID, the
// pods' user, with HADOOP_CONF_DIR first on the classpath and the home
// directory the pods mount: the distributed shell client writes its
// file:// staging there (AppMaster.jar 0644, the shellCommands file 0710,
// as Client.addToLocalResources does), and the launcher in the AM's pod
// must read both. A client of another uid gets "permission denied" on
// shellCommands at the AM's localization (seen).
func runJava(ctx context.Context, c *kubenode.Cluster, rt javaRuntime, hd hostDirs, timeout time.Duration, class string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := append([]string{"--reuid=" + podUID, "--regid=" + podUID, "--clear-groups", "--", filepath.Join(rt.javaHome, "bin", "java")}, javaOptions()...)
	argv = append(argv, "-Dlog4j.configuration=file:"+filepath.Join(hd.conf, "client-log4j.properties"), "-Duser.home="+hd.home, "-Djava.io.tmpdir="+hd.home, "-cp", hd.conf+string(os.PathListSeparator)+hd.jars+"/*", class)
	cmd := c.Command("setpriv", append(argv, args...)...)
	cmd.Dir = hd.home
	cmd.Env = append(cmd.Env, "HOME="+hd.home, "HADOOP_USER_NAME=dsuser", "HADOOP_CONF_DIR="+hd.conf)
	return runClient(ctx, cmd, class)
}

// javaOptions are e2e's JVM flags (the --add-opens Hadoop needs on 17),
// and a hosts file as the JVM's only name service (javaHostsFile).
func javaOptions() []string {
	var opts []string
	if b, err := os.ReadFile(filepath.Join(repoRootDir(), "e2e", "jvm.options")); err == nil {
		opts = strings.Fields(string(b))
	}
	if f := javaHostsFile(); f != "" {
		opts = append(opts, "-Djdk.net.hosts.file="+f)
	}
	return opts
}

var javaHosts struct {
	once sync.Once
	path string
}

// javaHostsFile writes, once per test process, a hosts file naming this
// machine and the node, for the JVMs the tests run in the node's network
// namespace. Their /etc/resolv.conf is the host's, whose name server that
// namespace cannot reach, so every lookup Hadoop makes of a name or an
// address (its own host name, the reverse lookup of a NodeId's IP before
// an NM call) waited out the resolver's timeouts: about 10 s before a
// client's first call and about 12 s per container the distributed shell
// AM stopped. With jdk.net.hosts.file the JDK answers from the file alone,
// at once, and an unknown name fails at once.
func javaHostsFile() string {
	javaHosts.once.Do(func() {
		host, err := os.Hostname()
		if err != nil {
			return
		}
		// One fixed path, replaced whole (rename), so runs leave one file
		// and a JVM of another test process never reads half of it.
		path := filepath.Join(os.TempDir(), "yarnfed-java-hosts")
		f, err := os.CreateTemp(os.TempDir(), "yarnfed-java-hosts-")
		if err != nil {
			return
		}
		_, werr := fmt.Fprintf(f, "127.0.0.1 localhost %s\n%s %s\n", host, kubenode.NodeIP, kubenode.NodeName)
		cerr := f.Close()
		if werr != nil || cerr != nil || os.Chmod(f.Name(), 0o644) != nil || os.Rename(f.Name(), path) != nil {
			_ = os.Remove(f.Name()) // the JVMs then resolve as before
			return
		}
		javaHosts.path = path
	})
	return javaHosts.path
}

func waitDial(ctx context.Context, t *testing.T, c *kubenode.Cluster, p *nodeProcess, addr string) {
	t.Helper()
	waitFor(ctx, t, p.name+" at "+addr, func() (bool, string) {
		if p.exited() {
			t.Fatalf("%s exited (%v):\n%s", p.name, p.err, p.tail(8000))
		}
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		conn, err := c.DialContext(dctx, "tcp", addr)
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, ""
	})
}

// podWatch records every pod kuberm makes in its namespace: the first
// version seen (as created) and the latest (deleted ones included).
type podWatch struct {
	mu     sync.Mutex
	first  map[string]*corev1.Pod
	last   map[string]*corev1.Pod
	events map[string][]string // name -> phase/node transitions, for failure reports
}

func watchPods(ctx context.Context, t *testing.T, kc kubernetes.Interface) *podWatch {
	t.Helper()
	wi, err := kc.CoreV1().Pods(kubermNS).Watch(ctx, metav1.ListOptions{LabelSelector: kuberm.LabelSubCluster + "=" + kubermSubCluster})
	if err != nil {
		t.Fatal(err)
	}
	w := &podWatch{first: map[string]*corev1.Pod{}, last: map[string]*corev1.Pod{}, events: map[string][]string{}}
	t.Cleanup(wi.Stop)
	go func() {
		for ev := range wi.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			w.mu.Lock()
			if w.first[p.Name] == nil {
				w.first[p.Name] = p.DeepCopy()
			}
			w.last[p.Name] = p.DeepCopy()
			s := fmt.Sprintf("%s %s node=%q", ev.Type, p.Status.Phase, p.Spec.NodeName)
			if ev.Type == watch.Deleted {
				s += " (deleted)"
			}
			if ev := w.events[p.Name]; len(ev) == 0 || ev[len(ev)-1] != s {
				w.events[p.Name] = append(w.events[p.Name], s)
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// apps is the set of applications the watch has seen pods of.
func (w *podWatch) apps() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	apps := map[string]bool{}
	for _, p := range w.last {
		apps[p.Labels[kuberm.LabelApplication]] = true
	}
	return apps
}

func (w *podWatch) pods() []*corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ps []*corev1.Pod
	for _, p := range w.last {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	return ps
}

// dump logs what the watch saw of app's pods ("" = all), with the status
// of each container: where a run stopped.
func (w *podWatch) dump(t *testing.T, app string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, p := range w.last {
		if app != "" && p.Labels[kuberm.LabelApplication] != app {
			continue
		}
		var cs []string
		for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			switch {
			case s.State.Waiting != nil:
				cs = append(cs, fmt.Sprintf("%s waiting %s: %s", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message))
			case s.State.Terminated != nil:
				cs = append(cs, fmt.Sprintf("%s terminated %s exit %d: %s", s.Name, s.State.Terminated.Reason, s.State.Terminated.ExitCode, s.State.Terminated.Message))
			case s.State.Running != nil:
				cs = append(cs, s.Name+" running")
			}
		}
		t.Logf("pod %s (role %s): %s\n  containers: %s\n  conditions: %v", name, p.Labels[kuberm.LabelRole],
			strings.Join(w.events[name], " -> "), strings.Join(cs, "; "), p.Status.Conditions)
	}
}

// checkKubeScheduled: pod name, last seen as last, is on the node, placed
// by kube-scheduler (the default scheduler, PodScheduled=True).
func checkKubeScheduled(t *testing.T, name string, last *corev1.Pod) {
	t.Helper()
	if last.Spec.NodeName != kubenode.NodeName || last.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Errorf("pod %s: node %q by scheduler %q, want %s by %s", name, last.Spec.NodeName, last.Spec.SchedulerName, kubenode.NodeName, corev1.DefaultSchedulerName)
	}
	scheduled := false
	for _, cond := range last.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue {
			scheduled = true
		}
	}
	if !scheduled {
		t.Errorf("pod %s: no PodScheduled=True condition (%v)", name, last.Status.Conditions)
	}
}

// checkAppPods: the application's AM and its n containers ran as pods of
// the kuberm image that kube-scheduler bound (created without a node, later
// on the node with PodScheduled true), each requesting its size with
// requests = limits, each mounting the host paths read-only; every
// container's termination message is the marker and its own container id
// (the shell command ran in that pod, with the NodeManager's environment).
func checkAppPods(t *testing.T, w *podWatch, app, marker string, hostPaths []string, n int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var ams, containers int
	for name, last := range w.last {
		if last.Labels[kuberm.LabelApplication] != app {
			continue
		}
		first := w.first[name]
		role := last.Labels[kuberm.LabelRole]
		switch role {
		case kuberm.RoleAM:
			ams++
		case kuberm.RoleContainer:
			containers++
		default:
			t.Errorf("pod %s has role %q", name, role)
			continue
		}
		if first.Spec.NodeName != "" {
			t.Errorf("pod %s was created bound to %q: kuberm must leave placement to kube-scheduler", name, first.Spec.NodeName)
		}
		checkKubeScheduled(t, name, last)
		main := last.Spec.Containers[0]
		if main.Image != kubermImage {
			t.Errorf("pod %s runs %s, want %s", name, main.Image, kubermImage)
		}
		req, lim := main.Resources.Requests, main.Resources.Limits
		if req.Cpu().IsZero() || req.Memory().IsZero() || !req.Cpu().Equal(*lim.Cpu()) || !req.Memory().Equal(*lim.Memory()) {
			t.Errorf("pod %s: requests %v, limits %v: want a size with requests = limits", name, req, lim)
		}
		mounted := readOnlyMounts(main)
		for _, v := range last.Spec.Volumes {
			if v.HostPath != nil && !mounted[v.HostPath.Path] {
				t.Errorf("pod %s: host path %s is not mounted read-only at its own path", name, v.HostPath.Path)
			}
		}
		for _, hp := range hostPaths {
			if !mounted[hp] {
				t.Errorf("pod %s does not mount host path %s", name, hp)
			}
		}
		if role != kuberm.RoleContainer {
			// The client sees FINISHED once the AM unregisters; its JVM
			// may still be exiting: checkAppGone waits for the pod's end.
			continue
		}
		if last.Status.Phase != corev1.PodSucceeded && last.DeletionTimestamp == nil {
			t.Errorf("container pod %s ended %s", name, last.Status.Phase)
		}
		want := marker + " " + last.Labels[kuberm.LabelContainerID] + "\n"
		if got := termination(last, main.Name); got != want {
			t.Errorf("container pod %s: termination message %q, want %q (the shell command's output)", name, got, want)
		}
	}
	if ams != 1 || containers != n {
		t.Errorf("application %s ran %d AM and %d container pods, want 1 and %d", app, ams, containers, n)
	}
}

// readOnlyMounts is the set of paths c mounts read-only.
func readOnlyMounts(c corev1.Container) map[string]bool {
	mounted := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if m.ReadOnly {
			mounted[m.MountPath] = true
		}
	}
	return mounted
}

// termination is a container's termination message ("" if it has none or
// did not end).
func termination(p *corev1.Pod, container string) string {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == container && s.State.Terminated != nil {
			return s.State.Terminated.Message
		}
	}
	return ""
}

// checkAppGone waits (up to 2 minutes) until nothing of app holds the
// node: no container pod, no launch Secret (it holds the application's
// credentials), and an AM pod only once it ended (Succeeded or Failed: the
// attempt's record); with all, no pod of it at all (a kill deletes the AM
// pod too). The application's own Secret stays: reports are answered from
// it. What is left then is an error, not a fatal one, so the next check
// still runs.
func checkAppGone(ctx context.Context, t *testing.T, kc kubernetes.Interface, app string, all bool) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: kuberm.LabelApplication + "=" + app}
	deadline := time.Now().Add(2 * time.Minute)
	var left []string
	for {
		left = left[:0]
		pods, err := kc.CoreV1().Pods(kubermNS).List(ctx, sel)
		if err != nil {
			left = append(left, err.Error())
		} else {
			for _, p := range pods.Items {
				over := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
				if all || p.Labels[kuberm.LabelRole] != kuberm.RoleAM || !over {
					left = append(left, fmt.Sprintf("pod %s (%s %s)", p.Name, p.Labels[kuberm.LabelRole], p.Status.Phase))
				}
			}
		}
		secrets, err := kc.CoreV1().Secrets(kubermNS).List(ctx, metav1.ListOptions{FieldSelector: "type=" + kuberm.LaunchSecretType})
		if err != nil {
			left = append(left, err.Error())
		} else {
			for _, s := range secrets.Items {
				// By label (the contract: labels as the pod's) or by name
				// (the container id's <timestamp>-<sequence> is in it).
				if s.Labels[kuberm.LabelApplication] == app || strings.Contains(s.Name, strings.ReplaceAll(strings.TrimPrefix(app, "application_"), "_", "-")) {
					left = append(left, "launch Secret "+s.Name)
				}
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Errorf("application %s left behind: %s", app, strings.Join(left, ", "))
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// repoRootDir is the repository root (this file is in deploy/test).
func repoRootDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return ".."
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}
