package kubenode

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// sbinDirs hold runc and ip on Debian; a non-login root shell's or CI's
// PATH may lack them.
var sbinDirs = []string{"/usr/local/sbin", "/usr/sbin", "/sbin"}

// childPath is PATH with the sbin directories appended where missing.
func childPath() string {
	path := os.Getenv("PATH")
	have := map[string]bool{}
	for _, d := range filepath.SplitList(path) {
		have[d] = true
	}
	for _, d := range sbinDirs {
		if !have[d] {
			path += string(filepath.ListSeparator) + d
		}
	}
	return path
}

// childEnv is every child's environment: the test's, with childPath (so
// containerd's shims find runc, and the kubelet mount and friends).
func childEnv() []string {
	env := []string{"PATH=" + childPath()}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// lookPath finds name on childPath.
func lookPath(name string) (string, error) {
	for _, d := range filepath.SplitList(childPath()) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// process is a started child with its log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (c *Cluster) start(name, path string, args ...string) *process {
	logPath := c.path("logs", name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = c.Dir
	// Its own process group; the parent's death kills it (a test binary
	// killed by a timeout must not leave a kubelet behind).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.ns.start(cmd); err != nil {
		logf.Close()
		c.t.Fatalf("kubenode: start %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	c.procs[name] = p
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

func (p *process) stop() {
	if p == nil || p.exited() {
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

// waitHTTP polls url (inside the namespace) until it answers 200.
func (c *Cluster) waitHTTP(p *process, url, bearer string) {
	tr := &http.Transport{DialContext: c.ns.dial}
	if c.CAData != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(c.CAData)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		last = err
		if p.exited() || time.Now().After(deadline) {
			c.t.Fatalf("kubenode: %s never answered %s (last: %v)\n%s", p.name, url, last, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
