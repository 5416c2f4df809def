package kubenode

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// A test binary interrupted by SIGINT (Ctrl-C: the terminal sends it to
// go test and the test binary alike) or SIGTERM dies without running
// t.Cleanup, and a timeout (-timeout) panics without it: the cluster's
// children die with it (Pdeathsig), but its mounts, cgroups, network
// namespace, directory and the kernel settings the kubelet changed
// (kernel.panic_on_oops=1 among them) would stay on the machine. Start
// therefore watches for both:
//
//   - SIGINT, SIGTERM: the teardown runs (the same one, once: if the test's
//     Cleanup is already running it, the handler waits for it), then the
//     process exits with 128+signal. A second signal meanwhile gets the
//     default action (exit at once, teardown unfinished).
//   - the test binary's deadline (-test.timeout, which go test sets to 10
//     minutes by default): deadlineMargin before it, the goroutines' stacks
//     are printed (what the timeout's panic would have shown), the teardown
//     runs and the process exits with 2, as the panic would have. The test
//     fails a minute early instead of leaving the cluster behind.
//
// Not covered: SIGKILL, the OOM killer, a panic on a goroutine other than
// the test's (the process dies at once), and os.Exit called elsewhere;
// there only Pdeathsig acts (the components die; their mounts, cgroups and
// the kernel settings stay).

// deadlineMargin is how long before the test binary's deadline the
// cluster is torn down: a teardown takes 5-15 s here, up to ~2 minutes
// when every component needs its full stop grace.
const deadlineMargin = time.Minute

// watchInterrupts installs the signal handler and the deadline timer;
// teardown removes both.
func (c *Cluster) watchInterrupts() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	var timer *time.Timer
	if d, ok := c.t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := d.Deadline(); ok {
			left := time.Until(deadline)
			at := left - deadlineMargin
			if at < left/2 {
				at = left / 2
			}
			timer = time.AfterFunc(at, func() { c.onDeadline(deadline) })
		}
	}
	c.stopWatch = func() {
		signal.Stop(sigs)
		if timer != nil {
			timer.Stop()
		}
		close(done)
	}
	go func() {
		select {
		case <-done:
			return
		case sig := <-sigs:
			// From here a second signal takes its default action.
			signal.Stop(sigs)
			fmt.Fprintf(os.Stderr, "kubenode: %v: tearing down the cluster in %s before exiting (signal again to exit at once)\n", sig, c.Dir)
			c.interrupt()
			code := 1
			if s, ok := sig.(syscall.Signal); ok {
				code = 128 + int(s)
			}
			fmt.Fprintf(os.Stderr, "kubenode: cluster in %s torn down; exiting with %d\n", c.Dir, code)
			os.Exit(code)
		}
	}()
}

// onDeadline runs deadlineMargin before the test binary's deadline.
func (c *Cluster) onDeadline(deadline time.Time) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	fmt.Fprintf(os.Stderr, "kubenode: the test binary's deadline (-timeout) is at %s, %v away: tearing down the cluster in %s before its panic would leave it behind; goroutines:\n%s\n",
		deadline.Format(time.RFC3339), time.Until(deadline).Round(time.Second), c.Dir, buf)
	c.interrupt()
	fmt.Fprintf(os.Stderr, "kubenode: cluster in %s torn down; exiting with 2 (the test ran into its -timeout)\n", c.Dir)
	os.Exit(2)
}

// interrupt runs the teardown outside the test (or waits for the one
// running).
func (c *Cluster) interrupt() {
	c.once.Do(func() { c.teardownOnce(true) })
}

// lockState is taken by Start's goroutine around each change teardown must
// see whole (processes, the network namespace, cgroups, saved kernel
// settings). After an interrupted teardown it never returns: the process
// is exiting, and Start must not create what was just removed.
func (c *Cluster) lockState() {
	c.mu.Lock()
	if c.interrupted {
		c.mu.Unlock()
		select {}
	}
}

// logf and errorf report teardown's progress: through the test, or on
// stderr once interrupted (the test's own output may never be printed).
func (c *Cluster) logf(format string, args ...any) {
	if c.interrupted {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		return
	}
	c.t.Logf(format, args...)
}

func (c *Cluster) errorf(format string, args ...any) {
	if c.interrupted {
		fmt.Fprintf(os.Stderr, "ERROR: "+format+"\n", args...)
		return
	}
	c.t.Errorf(format, args...)
}
