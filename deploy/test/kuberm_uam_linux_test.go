package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
	"github.com/yarnfed/yarnfed/kuberm"
)

const (
	uamLauncherClass = "org.apache.hadoop.yarn.applications.unmanagedamlauncher.UnmanagedAMLauncher"
	uamDSAMClass     = "org.apache.hadoop.yarn.applications.distributedshell.ApplicationMaster"
)

// uamRun is the unmanaged-AM proof (TestKubermOnNode's "unmanaged AM"):
// Hadoop's own UnmanagedAMLauncher submits an unmanaged application
// through the router to `yarnfed kuberm`, waits for its attempt to be
// LAUNCHED, takes the AMRMToken from the application report and runs the
// stock distributed shell ApplicationMaster as a process on the host (the
// node's network namespace), not in a pod. The AM registers and allocates
// at kuberm's scheduler port and starts its two containers through
// kuberm's NodeManager face at the node's IP; they run as pods. The
// application SUCCEEDS, no AM pod ever exists, and nothing of it is left.
// A second unmanaged application, killed through the router while its
// container runs, leaves no pod either.
//
// Why through the router: the launcher is a plain YarnClient
// (yarn.resourcemanager.address), and every call it makes (getNewApplication,
// submitApplication, getApplicationReport, getApplicationAttemptReport) is
// one the router forwards to the home sub-cluster as the calling user, so
// kuberm sees the owner and hands the token over in the report the router
// relays. The AM itself talks to kuberm's scheduler port directly (the
// token's RM), as any AM of a sub-cluster does.
func uamRun(ctx context.Context, t *testing.T, c *kubenode.Cluster, kc kubernetes.Interface, bin, kubeconfig string, rt javaRuntime, hd hostDirs) {
	f := startDSFed(ctx, t, c, bin, kubeconfig, rt, hd)
	w := watchPods(ctx, t, kc)
	marker := fmt.Sprintf("kuberm-uam-%d", time.Now().UnixNano())
	dir := uamWorkDir(t, hd, "run", "echo "+marker+" $CONTAINER_ID | tee /dev/termination-log")
	begin := time.Now()
	out, err := uamLaunch(ctx, c, rt, hd, dir, 10*time.Minute, "kuberm-uam", 2)
	t.Logf("UnmanagedAMLauncher: %v after %v", err, time.Since(begin).Round(time.Millisecond))
	app := regexp.MustCompile(`application_\d+_\d+`).FindString(out)
	if err != nil || !strings.Contains(out, "Application has completed successfully.") ||
		!strings.Contains(out, "App ended with state: FINISHED and status: SUCCEEDED") {
		// The launcher's main exits 0 whatever the outcome: its log says.
		t.Errorf("UnmanagedAMLauncher through the router: %v, no success in its log\n%s", err, tail(out, 12000))
		w.dump(t, app)
		f.rm.stop()
		t.Fatalf("kuberm log:\n%s", f.rm.tail(12000))
	}
	if app == "" {
		t.Fatalf("the launcher printed no application id:\n%s", tail(out, 4000))
	}
	uamLogMilestones(t, out)
	// The AM ran on the host with the attempt kuberm launched for it.
	if !regexp.MustCompile(`Launching AM with application attempt id appattempt_\d+_\d+_000001`).MatchString(out) ||
		!strings.Contains(out, "Application Master completed successfully") {
		t.Errorf("the launcher's log does not show the AM launched on the host and succeeding:\n%s", tail(out, 6000))
	}
	uamCheckPods(t, w, app, marker, hd.mountPaths(rt), 2)
	checkAppGone(ctx, t, kc, app, false)

	t.Run("kill through the router", func(t *testing.T) {
		kdir := uamWorkDir(t, hd, "kill", "sleep 600")
		victim, r := killThroughRouter(ctx, t, c, kc, rt, hd, w, func(ctx context.Context) (string, error) {
			return uamLaunch(ctx, c, rt, hd, kdir, 10*time.Minute, "kuberm-uam-kill", 1)
		})
		if !strings.Contains(r.out, "App ended with state: KILLED") {
			t.Errorf("the killed application's launcher did not see KILLED:\n%s", tail(r.out, 4000))
		}
		uamCheckNoAMPod(t, w, victim)
	})
}

// uamWorkDir is the launcher's working directory, which the AM it spawns
// inherits: the distributed shell AM reads its command from ./shellCommands
// (the distributed shell client writes and localizes that file for a
// managed AM).
// Owned by the pods' uid, which the launcher runs as.
func uamWorkDir(t *testing.T, hd hostDirs, name, command string) string {
	t.Helper()
	dir := filepath.Join(hd.home, "uam-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The client writes it with DataOutputStream.writeUTF and the AM reads
	// it with readUTF: a 2-byte big-endian length, then the bytes (ASCII
	// here, where modified UTF-8 is plain bytes).
	if len(command) > 0xffff {
		t.Fatalf("shell command of %d bytes", len(command))
	}
	body := append([]byte{byte(len(command) >> 8), byte(len(command))}, command...)
	if err := os.WriteFile(filepath.Join(dir, "shellCommands"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "shellCommands")} {
		if err := os.Chown(p, podUIDNum, podUIDNum); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// uamLaunch runs Hadoop's UnmanagedAMLauncher (as runJava runs a client: the
// node's network namespace, the pods' uid, HADOOP_CONF_DIR first on the
// classpath) in dir, with the stock distributed shell ApplicationMaster as
// the AM command. The launcher splits -cmd on whitespace and execs it
// without a shell, so the command is plain words; java expands the
// classpath's `jars/*` itself.
func uamLaunch(ctx context.Context, c *kubenode.Cluster, rt javaRuntime, hd hostDirs, dir string, timeout time.Duration, name string, containers int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	java := filepath.Join(rt.javaHome, "bin", "java")
	cp := hd.conf + string(os.PathListSeparator) + hd.jars + "/*"
	logConf := "-Dlog4j.configuration=file:" + filepath.Join(hd.conf, "client-log4j.properties")
	amCmd := append([]string{java}, javaOptions()...)
	amCmd = append(amCmd, logConf, "-Djava.io.tmpdir="+dir, "-cp", cp, uamDSAMClass,
		"-num_containers", fmt.Sprint(containers), "-container_memory", "256", "-container_vcores", "1", "-priority", "0")
	argv := append([]string{"--reuid=" + podUID, "--regid=" + podUID, "--clear-groups", "--", java}, javaOptions()...)
	argv = append(argv, logConf, "-Duser.home="+hd.home, "-Djava.io.tmpdir="+dir, "-cp", cp, uamLauncherClass,
		"-appname", name, "-queue", "default", "-cmd", strings.Join(amCmd, " "))
	cmd := c.Command("setpriv", argv...)
	cmd.Dir = dir
	// The launcher passes its whole environment to the AM, whose USER the
	// distributed shell AM takes as the submitter (a NodeManager sets it for
	// a managed AM; a user's shell has it).
	cmd.Env = append(cmd.Env, "HOME="+hd.home, "HADOOP_USER_NAME=dsuser", "USER=dsuser", "LOGNAME=dsuser", "HADOOP_CONF_DIR="+hd.conf)
	return runClient(ctx, cmd, uamLauncherClass)
}

// uamCheckPods: the application's n containers ran as pods bound by
// kube-scheduler, each with the host paths and the marker with its own
// container id as termination message (the AM's command, started through
// the NM face); no AM pod ever existed.
func uamCheckPods(t *testing.T, w *podWatch, app, marker string, hostPaths []string, n int) {
	t.Helper()
	uamCheckNoAMPod(t, w, app)
	w.mu.Lock()
	defer w.mu.Unlock()
	containers := 0
	for name, last := range w.last {
		if last.Labels[kuberm.LabelApplication] != app || last.Labels[kuberm.LabelRole] != kuberm.RoleContainer {
			continue
		}
		containers++
		if w.first[name].Spec.NodeName != "" || last.Spec.NodeName != kubenode.NodeName {
			t.Errorf("pod %s: created on %q, ended on %q; want created unbound and placed on %s", name, w.first[name].Spec.NodeName, last.Spec.NodeName, kubenode.NodeName)
		}
		main := last.Spec.Containers[0]
		mounted := readOnlyMounts(main)
		for _, hp := range hostPaths {
			if !mounted[hp] {
				t.Errorf("pod %s does not mount host path %s", name, hp)
			}
		}
		want := marker + " " + last.Labels[kuberm.LabelContainerID] + "\n"
		if got := termination(last, main.Name); got != want {
			t.Errorf("container pod %s: termination message %q, want %q (the shell command's output)", name, got, want)
		}
	}
	if containers != n {
		t.Errorf("application %s ran %d container pods, want %d", app, containers, n)
	}
}

// uamCheckNoAMPod: the watch (from before the submission) never saw a pod
// of app other than container pods.
func uamCheckNoAMPod(t *testing.T, w *podWatch, app string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, p := range w.last {
		if p.Labels[kuberm.LabelApplication] == app && p.Labels[kuberm.LabelRole] != kuberm.RoleContainer {
			t.Errorf("pod %s (role %q) of the unmanaged application %s: an unmanaged AM has no pod", name, p.Labels[kuberm.LabelRole], app)
		}
	}
}

// uamMilestone matches the launcher's and the AM's log lines that time a
// run: submitted, AM launched, registered containers, AM done, app ended.
var uamMilestone = regexp.MustCompile(`(?m)^\S+ \S+ .*(Submitted application|Launching AM with|Launching shell command on a new container|Application completed|Application Master completed|AM process exited|App ended with state).*$`)

func uamLogMilestones(t *testing.T, out string) {
	t.Helper()
	t.Logf("launcher milestones:\n%s", strings.Join(uamMilestone.FindAllString(out, -1), "\n"))
}
