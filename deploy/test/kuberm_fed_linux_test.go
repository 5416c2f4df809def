package test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/kuberm"
)

// kubeFed is a federation of one kube sub-cluster on the node: a state
// store (one replica), `yarnfed kuberm` registered in it as SC-kube, and a
// router, each a process of the node's network namespace on the node IP,
// the store reached with mutual TLS from `yarnfed certs`. Every scenario of
// TestKubermOnNode starts its own (a fresh store directory, a kuberm with
// the scenario's configuration) on the one cluster; its processes stop at
// the end of the test that started it, so the next scenario can bind the
// same addresses.
type kubeFed struct {
	t      *testing.T // whose cleanup stops the processes: they outlive its subtests
	c      *kubenode.Cluster
	bin    string
	pki    string
	rmArgs []string
	starts int
	store  *nodeProcess
	rm     *nodeProcess
	router *nodeProcess
}

// startKubeFed starts the federation. kuberm's configuration is
// kubermConfig's (ports on the node IP, the image, the ServiceAccount's
// kubeconfig) with what every scenario's pods get (the image as launcher,
// the smallest allocation of 256 MB: one vcore and 1 GiB would let the
// node's 2 cores run only two containers), the host paths mounted into the
// pods at the same paths, their environment, and extra (added or
// overriding keys).
func startKubeFed(ctx context.Context, t *testing.T, c *kubenode.Cluster, bin, kubeconfig string, mounts []string, env map[string]string, extra map[string]any) *kubeFed {
	t.Helper()
	f := &kubeFed{t: t, c: c, bin: bin, pki: filepath.Join(t.TempDir(), "pki")}
	if out, err := exec.Command(bin, "certs", "--dir", f.pki, "ss1=replica", "router-1=router", kubermSubCluster+"=agent").CombinedOutput(); err != nil {
		t.Fatalf("yarnfed certs: %v\n%s", err, out)
	}
	f.store = startNodeProcess(t, c, "statestore", bin, append([]string{"statestore", "--node-id", "ss1",
		"--data-dir", filepath.Join(t.TempDir(), "store"), "--grpc-address", storeAddr, "--raft-address", raftAddr,
		"--http-address", "", "--bootstrap", "--log-level", "info"}, f.tlsFlags("", "ss1")...)...)
	waitDial(ctx, t, c, f.store, storeAddr)

	var hostPaths []map[string]string
	for _, p := range mounts {
		hostPaths = append(hostPaths, map[string]string{"path": p, "mount_path": p})
	}
	cfg := map[string]any{
		"launcher_image":    kubermImage,
		"host_paths":        hostPaths,
		"env":               env,
		"min_allocation_mb": 256,
	}
	for k, v := range extra {
		cfg[k] = v
	}
	f.rmArgs = append([]string{"kuberm", "--config", kubermConfig(t, kubeconfig, cfg), "--store", storeAddr}, f.tlsFlags("store-", kubermSubCluster)...)
	f.startKuberm(ctx, t)

	f.router = startNodeProcess(t, c, "router", bin, append([]string{"router", "--store", storeAddr,
		"--clientrm-address", routerAddr, "--web-address", "", "--admin-address", "", "--log-level", "info"}, f.tlsFlags("store-", "router-1")...)...)
	waitDial(ctx, t, c, f.router, routerAddr)
	return f
}

// tlsFlags are the flags giving party's certificate, key and CA from
// `yarnfed certs` (prefix "store-" for a client of the store).
func (f *kubeFed) tlsFlags(prefix, party string) []string {
	d := filepath.Join(f.pki, party)
	return []string{"--" + prefix + "tls-cert", filepath.Join(d, "cert.crt"), "--" + prefix + "tls-key", filepath.Join(d, "cert.key"), "--" + prefix + "tls-ca", filepath.Join(d, "ca.crt")}
}

// startKuberm starts `yarnfed kuberm` with the federation's arguments and
// waits until it serves and is registered in the state store.
func (f *kubeFed) startKuberm(ctx context.Context, t *testing.T) {
	t.Helper()
	f.starts++
	name := "kuberm"
	if f.starts > 1 {
		name = fmt.Sprintf("kuberm-%d", f.starts)
	}
	f.rm = startNodeProcess(f.t, f.c, name, f.bin, f.rmArgs...)
	f.rm.waitOutput(ctx, t, kubermStarted)
	f.rm.waitOutput(ctx, t, regexp.MustCompile(`sub-cluster registered`))
}

// restartKuberm sends kuberm sig, waits (up to 30 s) for it to exit and
// starts it again with the same arguments; it returns how long kuberm was
// away, the signal to serving again.
func (f *kubeFed) restartKuberm(ctx context.Context, t *testing.T, sig syscall.Signal) time.Duration {
	t.Helper()
	begin := time.Now()
	old := f.rm
	if err := old.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal kuberm: %v", err)
	}
	select {
	case <-old.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("kuberm did not exit within 30 s of %v:\n%s", sig, old.tail(4000))
	}
	t.Logf("kuberm after %v: %v (%v)", sig, old.err, time.Since(begin).Round(time.Millisecond))
	f.startKuberm(ctx, t)
	return time.Since(begin)
}

// routerClient is an ApplicationClientProtocol client of the router (its
// port forwarded out of the node's network namespace), as user dsuser.
func (f *kubeFed) routerClient(t *testing.T) *hadoopipc.Client {
	t.Helper()
	fw := forward(t, f.c.DialContext, func() (string, error) { return routerAddr, nil })
	yc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{fw.l.Addr().String()}, Protocol: hadoopipc.ProtocolApplicationClient, User: "dsuser"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { yc.Close() })
	return yc
}

// startDSFed is the federation of the scenarios that run Hadoop's own
// clients and AMs (distributed shell, unmanaged AM, failure paths): it
// writes HADOOP_CONF_DIR (writeHadoopConf), and the pods mount the system
// paths, the jars, HADOOP_CONF_DIR and the clients' home (their file://
// staging), with JAVA_HOME and HADOOP_CONF_DIR in their environment.
func startDSFed(ctx context.Context, t *testing.T, c *kubenode.Cluster, bin, kubeconfig string, rt javaRuntime, hd hostDirs) *kubeFed {
	t.Helper()
	writeHadoopConf(t, hd)
	return startKubeFed(ctx, t, c, bin, kubeconfig, hd.mountPaths(rt),
		map[string]string{"JAVA_HOME": rt.javaHome, "HADOOP_CONF_DIR": hd.conf}, nil)
}

// dsJar is the distributed shell's jar (client and AM) among the jars.
func (h hostDirs) dsJar(t *testing.T) string {
	t.Helper()
	for _, p := range h.jarPaths {
		if strings.Contains(filepath.Base(p), "distributedshell") {
			return p
		}
	}
	t.Fatal("no distributedshell jar on e2e's classpath")
	return ""
}

// clientResult is how a Hadoop client run in the background ended.
type clientResult struct {
	out  string
	err  error
	took time.Duration
}

// runInBackground runs fn (a client: it returns its output) in a goroutine.
func runInBackground(fn func() (string, error)) <-chan clientResult {
	done := make(chan clientResult, 1)
	go func() {
		begin := time.Now()
		out, err := fn()
		done <- clientResult{out: out, err: err, took: time.Since(begin)}
	}()
	return done
}

// killThroughRouter: launch (a client, in the background, whose
// application runs `sleep 600` in its container) submits an application;
// once a container pod of an application the watch had not seen before
// runs, the stock `yarn application -kill` through the router kills it,
// and every pod of it (its AM's too) and its launch Secrets must go. It
// returns the killed application and how its client ended.
func killThroughRouter(ctx context.Context, t *testing.T, c *kubenode.Cluster, kc kubernetes.Interface, rt javaRuntime, hd hostDirs, w *podWatch, launch func(context.Context) (string, error)) (string, clientResult) {
	t.Helper()
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	known := w.apps()
	done := runInBackground(func() (string, error) { return launch(kctx) })
	var victim string
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer rcancel()
	waitFor(rctx, t, "a running container pod of the second application", func() (bool, string) {
		for _, p := range w.pods() {
			a := p.Labels[kuberm.LabelApplication]
			if !known[a] && p.Labels[kuberm.LabelRole] == kuberm.RoleContainer && p.Status.Phase == corev1.PodRunning {
				victim = a
				return true, ""
			}
		}
		select {
		case r := <-done:
			t.Fatalf("the second client ended before any container ran: %v\n%s", r.err, tail(r.out, 6000))
		default:
		}
		return false, "none yet"
	})
	kout, err := runJava(ctx, c, rt, hd, 3*time.Minute, cliClass, "application", "-kill", victim)
	if err != nil {
		t.Fatalf("yarn application -kill %s through the router: %v\n%s", victim, err, tail(kout, 4000))
	}
	checkAppGone(ctx, t, kc, victim, true)
	return victim, <-done
}

// runClient runs cmd (a client: Hadoop's, Spark's) to its end or until ctx
// ends (then it is killed and the error says what ran out); it returns the
// client's output, stdout and stderr together.
func runClient(ctx context.Context, cmd *exec.Cmd, what string) (string, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-errc
		err = fmt.Errorf("%s: %w", what, ctx.Err())
	}
	return out.String(), err
}
