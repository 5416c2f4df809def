package kubenode

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// netns is a network namespace of its own for the whole cluster: every
// server binds where it likes without meeting another test's ports, the
// kubelet's node IP is a private address (it refuses 127.0.0.0/8), and the
// CNI bridge and pods' veths never touch the host's network.
//
// Go has no "start this child in that namespace" attribute, so a goroutine
// locks its OS thread, moves the thread in (setns is per thread), forks or
// opens a socket there, and moves back; a child and a socket keep the
// namespace they were created in. A thread that cannot move back is not
// unlocked, so the runtime retires it with its goroutine.
type netns struct {
	ns, host *os.File
}

// newNetns makes the namespace and bind-mounts it on path (as `ip netns add`
// does), so nsenter --net=path can enter it; unmounting path and closing the
// netns's files lets it go.
func newNetns(path string) (*netns, error) {
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		return nil, err
	}
	type result struct {
		n   *netns
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		host, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			host.Close()
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("unshare(CLONE_NEWNET): %w", err)}
			return
		}
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		ns, err := os.Open(self)
		if err == nil {
			if err = unix.Mount(self, path, "", unix.MS_BIND, ""); err != nil {
				ns.Close()
				err = fmt.Errorf("bind-mount the network namespace on %s: %w", path, err)
			}
		}
		if serr := unix.Setns(int(host.Fd()), unix.CLONE_NEWNET); serr == nil {
			runtime.UnlockOSThread()
		}
		if err != nil {
			host.Close()
			ch <- result{err: err}
			return
		}
		ch <- result{n: &netns{ns: ns, host: host}}
	}()
	r := <-ch
	return r.n, r.err
}

// do runs fn on a thread inside the namespace.
func (n *netns) do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(n.ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns into the cluster's network namespace: %w", err)
			return
		}
		err := fn()
		if serr := unix.Setns(int(n.host.Fd()), unix.CLONE_NEWNET); serr == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// start starts cmd inside the namespace. cmd's Stdout and Stderr must be
// files (or nil): os/exec copies anything else on goroutines of its own.
func (n *netns) start(cmd *exec.Cmd) error {
	return n.do(cmd.Start)
}

// run runs a short command inside the namespace.
func (n *netns) run(name string, args ...string) error {
	path, err := lookPath(name)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = childEnv()
	out, err := os.CreateTemp("", "kubenode-cmd")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := n.start(cmd); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		b, _ := os.ReadFile(out.Name())
		return fmt.Errorf("%s %v: %w: %s", name, args, err, b)
	}
	return nil
}

// dial opens a TCP connection from inside the namespace (the test's clients
// reach the API server this way).
func (n *netns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.do(func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// link is what /proc/PID/ns/net reads for a process in the namespace
// ("net:[inode]"), or "" when unknown.
func (n *netns) link() string {
	if n == nil {
		return ""
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(n.ns.Fd()), &st); err != nil {
		return ""
	}
	return fmt.Sprintf("net:[%d]", st.Ino)
}

// NetNSLink is what /proc/PID/ns/net reads for a process inside the cluster's
// network namespace, and /proc/PID/fd/N for a file holding it open
// ("net:[inode]"); it stays valid after cleanup, for leftover checks.
func (c *Cluster) NetNSLink() string { return c.nsLink }

func (n *netns) close() {
	n.ns.Close()
	n.host.Close()
}
