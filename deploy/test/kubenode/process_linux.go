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

	"github.com/yarnfed/yarnfed/internal/kubetest"
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

// process is a started server of the cluster, by name.
type process struct {
	name string
	*kubetest.Process
}

func (c *Cluster) start(name, path string, args ...string) *process {
	cmd := exec.Command(path, args...)
	cmd.Env = childEnv()
	cmd.Dir = c.Dir
	// Its own process group; the parent's death kills it (a test binary
	// killed by a timeout must not leave a kubelet behind).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Started inside the namespace; os/exec copies output that is not a
	// file on goroutines of its own, so the log must be one (it is).
	var p *process
	var err error
	c.track(func() {
		var kp *kubetest.Process
		if kp, err = kubetest.StartProcess(cmd, c.path("logs", name+".log"), c.ns.start); err == nil {
			p = &process{name: name, Process: kp}
			c.procs[name] = p
		}
	})
	if err != nil {
		c.t.Fatalf("kubenode: start %s: %v", name, err)
	}
	return p
}

func (p *process) exited() bool { return p.Exited() }

func (p *process) tail() string { return p.Tail(6000) }

// stop stops p if it was started (nil: a component Start never reached).
func (p *process) stop() {
	if p != nil {
		p.Stop(15 * time.Second)
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
