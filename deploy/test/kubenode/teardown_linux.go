package kubenode

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// teardown stops everything Start started and removes every trace of it:
// the kubelet first (it would restart what we remove), containers through
// containerd (which unmounts their root filesystems), leftover shims and
// container processes by their cgroups and sockets, the servers, then
// mounts, cgroups, kernel settings and files.
//
// It runs once: from the test's Cleanup, or from the signal handler or the
// deadline timer of interrupt.go, whichever comes first (the other waits for
// it).
func (c *Cluster) teardown() {
	c.once.Do(func() { c.teardownOnce(false) })
}

// teardownOnce is teardown's body. interrupted: called outside the test
// (signal, deadline), so it reports on stderr rather than through t, and
// Start's goroutine, if still running, is kept from changing what it
// tears down (lockState).
func (c *Cluster) teardownOnce(interrupted bool) {
	c.mu.Lock()
	c.interrupted = interrupted
	defer c.mu.Unlock()
	if c.stopWatch != nil {
		defer c.stopWatch()
	}
	if interrupted || c.t.Failed() {
		c.keepLogs()
	}
	// The controller-manager first: a StatefulSet, Deployment or DaemonSet
	// would put back every pod drain deletes.
	c.procs["kube-controller-manager"].stop()
	c.drain()
	c.procs["kubelet"].stop()
	c.procs["kube-scheduler"].stop()
	c.procs["kube-proxy"].stop()
	c.procs["coredns"].stop()
	if p := c.procs["containerd"]; p != nil && !p.exited() {
		c.removeContainers()
	}
	c.procs["containerd"].stop()
	c.killLeftovers()
	c.procs["kube-apiserver"].stop()
	c.procs["etcd"].stop()
	c.unmountAll()
	c.removeCgroups()
	for s, v := range c.sysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil && strings.TrimSpace(string(b)) != v {
			if err := os.WriteFile("/proc/sys/"+s, []byte(v), 0o644); err != nil {
				c.errorf("kubenode: restore %s=%s: %v", s, v, err)
			}
		}
	}
	c.removeHostFiles()
	for _, d := range c.createdHostDirs {
		_ = os.Remove(d) // only when empty: something else may have come to use it
	}
	if c.ns != nil {
		c.ns.close()
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		c.errorf("kubenode: remove %s: %v", c.Dir, err)
	}
}

// drain deletes every pod and waits (briefly) until the kubelet has stopped
// their sandboxes, so the CRI tears their networks down through CNI as it
// would on a real node; removeContainers is the fallback.
func (c *Cluster) drain() {
	kubelet, api, ctrd := c.procs["kubelet"], c.procs["kube-apiserver"], c.procs["containerd"]
	if kubelet == nil || api == nil || ctrd == nil || kubelet.exited() || api.exited() || ctrd.exited() {
		return
	}
	kc, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	nss, err := kc.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		c.logf("kubenode: drain: %v", err)
		return
	}
	zero := int64(0)
	for _, ns := range nss.Items {
		if err := kc.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
			c.logf("kubenode: drain %s: %v", ns.Name, err)
		}
	}
	for {
		out, err := c.ctrOut("tasks", "ls", "-q")
		if err == nil && strings.TrimSpace(out) == "" {
			return
		}
		select {
		case <-ctx.Done():
			c.logf("kubenode: drain: tasks still running after 45 s: %s", out)
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// removeContainers kills and deletes every task and container of the CRI's
// namespace.
func (c *Cluster) removeContainers() {
	out, err := c.ctrOut("tasks", "ls", "-q")
	if err != nil {
		c.logf("kubenode: ctr tasks ls: %v: %s", err, out)
	}
	for _, id := range strings.Fields(out) {
		if o, err := c.ctrOut("tasks", "delete", "--force", id); err != nil {
			c.logf("kubenode: ctr tasks delete %s: %v: %s", id, err, o)
		}
	}
	out, _ = c.ctrOut("containers", "ls", "-q")
	for _, id := range strings.Fields(out) {
		c.containerIDs = append(c.containerIDs, id)
		if o, err := c.ctrOut("containers", "delete", id); err != nil {
			c.logf("kubenode: ctr containers delete %s: %v: %s", id, err, o)
		}
	}
}

// killLeftovers kills what outlived containerd: processes in the test's
// cgroups (containers), shims serving its containerd (found by the socket
// address on their command line, which names the test's directory), and
// anything else still in the cluster's network namespace (Command's
// children the test left running; the servers stopped after this are
// spared).
func (c *Cluster) killLeftovers() {
	pids := map[int]bool{}
	spared := map[int]bool{}
	for _, p := range c.procs {
		if !p.exited() {
			spared[p.Cmd.Process.Pid] = true
		}
	}
	nsLink := c.nsLink
	for _, d := range c.cgroupDirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids[pid] = true
				}
			}
			return nil
		})
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte("containerd-shim")) && bytes.Contains(b, []byte(c.sock)) {
			pids[pid] = true
		}
		if l, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "net")); err == nil && nsLink != "" && l == nsLink && !spared[pid] {
			pids[pid] = true
		}
	}
	for pid := range pids {
		if pid != os.Getpid() {
			c.logf("kubenode: killing leftover process %d", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// unmountAll detaches every mount under the cluster's directory, deepest
// first (container root filesystems, pod volumes, sandbox namespaces).
func (c *Cluster) unmountAll() {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		c.errorf("kubenode: %v", err)
		return
	}
	var mounts []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == c.Dir || strings.HasPrefix(f[4], c.Dir+"/")) {
			mounts = append(mounts, f[4])
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	for _, m := range mounts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			c.errorf("kubenode: unmount %s: %v", m, err)
		}
	}
}

// removeCgroups removes the test's cgroup trees, leaves first, waiting
// briefly for killed processes to leave them.
func (c *Cluster) removeCgroups() {
	for _, root := range c.cgroupDirs {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			var err error
			for i := 0; i < 50; i++ {
				if err = unix.Rmdir(d); err == nil || errors.Is(err, unix.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				c.errorf("kubenode: remove cgroup %s: %v", d, err)
			}
		}
	}
}

// removeHostFiles removes what the kubelet and the CNI library put outside
// the cluster's directory: the kubelet's /var/log/containers links into it,
// and libcni's cached results for its network.
func (c *Cluster) removeHostFiles() {
	links, _ := filepath.Glob("/var/log/containers/*.log")
	for _, l := range links {
		if dst, err := os.Readlink(l); err == nil && strings.HasPrefix(dst, c.Dir+"/") {
			_ = os.Remove(l)
		}
	}
	for _, d := range c.createdHostDirs {
		if d == "/var/lib/kubelet/device-plugins" {
			_ = os.Remove(filepath.Join(d, "kubelet.sock"))
		}
	}
	// libcni names a cached result <network>-<sandbox id>-<interface>; the
	// loopback network's name is not ours, its sandbox ids are.
	results, _ := filepath.Glob("/var/lib/cni/results/" + c.cniNetwork + "-*")
	for _, id := range c.containerIDs {
		more, _ := filepath.Glob("/var/lib/cni/results/*-" + id + "-*")
		results = append(results, more...)
	}
	for _, r := range results {
		_ = os.Remove(r)
	}
}

// keepLogs copies the components' logs to $YARNFED_ARTIFACTS/kubenode/ when
// set (CI keeps that directory), and prints where.
func (c *Cluster) keepLogs() {
	art := os.Getenv("YARNFED_ARTIFACTS")
	if art == "" {
		return
	}
	dst := filepath.Join(art, "kubenode", filepath.Base(c.Dir))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return
	}
	logs, _ := filepath.Glob(c.path("logs", "*.log"))
	for _, l := range logs {
		if b, err := os.ReadFile(l); err == nil {
			_ = os.WriteFile(filepath.Join(dst, filepath.Base(l)), b, 0o644)
		}
	}
	c.logf("kubenode: logs kept in %s", dst)
}
