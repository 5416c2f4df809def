package kubetest

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a started child whose stdout and stderr go to a log file. The
// API server here and deploy/test/kubenode's one-node cluster both run their
// servers as Processes.
type Process struct {
	// Cmd is the started command.
	Cmd *exec.Cmd
	// Log is the log file's path.
	Log  string
	done chan struct{}
}

// StartProcess points cmd's output at a new file logPath and starts it with
// start (cmd.Start, or a caller's wrapper that starts it elsewhere, such as
// inside a network namespace). A goroutine waits for it and closes the log.
func StartProcess(cmd *exec.Cmd, logPath string, start func(*exec.Cmd) error) (*Process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := start(cmd); err != nil {
		logf.Close()
		return nil, err
	}
	p := &Process{Cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended (and been waited for).
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Tail is the last n bytes of the log, for failure messages.
func (p *Process) Tail(n int) string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// Stop sends SIGTERM, and SIGKILL if it has not ended within grace; it
// returns once the process has been waited for.
func (p *Process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}
