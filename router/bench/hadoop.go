package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/procstat"
	"github.com/yarnfed/yarnfed/internal/simrm"
	ssbench "github.com/yarnfed/yarnfed/statestore/bench"
)

// hadoopVersion is the Router's release: the newest 3.4.x of
// hadoop-yarn-server-router on Maven Central (bench/hadooprouter/pom.xml).
const hadoopVersion = "3.4.2"

// hadoopPeer is Apache Hadoop's Router JVM over a ZooKeeper ensemble.
type hadoopPeer struct {
	ens       *ssbench.Ensemble
	router    *exec.Cmd
	addr      string
	coldStart time.Duration
	classpath string
}

// jvmOptions are the --add-opens Hadoop 3.4 needs on Java 17 (its Guice
// web app and reflection), one per line in the module's jvm.options. No
// GC or JIT tuning: the JVM's defaults, as a deployment starts with.
func jvmOptions(cfg Config) ([]string, error) {
	dir, err := moduleDir(cfg.HadoopDir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "jvm.options"))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

func (h *hadoopPeer) close() {
	if h.router != nil {
		stopProc(h.router)
	}
	if h.ens != nil {
		h.ens.Close()
	}
}

// moduleDir finds dir (relative to the repository root) from the working
// directory or any parent: tests run in their package's directory.
func moduleDir(dir string) (string, error) {
	if filepath.IsAbs(dir) {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, dir, "pom.xml")); err == nil {
			return filepath.Join(d, dir), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s/pom.xml not found from %s upwards", dir, wd)
		}
	}
}

// hadoopClasspath builds the Maven module when its classpath is missing or
// older than its sources (jars are cached under ~/.m2) and returns the
// helper jar plus the Router's runtime classpath.
func hadoopClasspath(ctx context.Context, cfg Config) (string, error) {
	dir, err := moduleDir(cfg.HadoopDir)
	if err != nil {
		return "", err
	}
	cpFile := filepath.Join(dir, "target", "classpath.txt")
	jar := filepath.Join(dir, "target", "yarnfed-bench-hadooprouter-0.1.0.jar")
	stale := func() bool {
		ci, err := os.Stat(cpFile)
		if err != nil {
			return true
		}
		if _, err := os.Stat(jar); err != nil {
			return true
		}
		newer := false
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && !strings.Contains(p, "/target/") && fi.ModTime().After(ci.ModTime()) {
				newer = true
			}
			return nil
		})
		return newer
	}
	if stale() {
		mvn, err := exec.LookPath("mvn")
		if err != nil {
			return "", fmt.Errorf("mvn not found (apt-get install maven): %w", err)
		}
		out, err := exec.CommandContext(ctx, mvn, "-q", "-B", "-f", filepath.Join(dir, "pom.xml"), "package").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("mvn package: %w\n%s", err, tail(string(out), 3000))
		}
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		return "", err
	}
	return jar + ":" + strings.TrimSpace(string(cp)), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// startHadoop starts the ensemble, registers the sub-clusters through
// Hadoop's ZookeeperFederationStateStore (our Java helper), then starts
// Hadoop's Router with the federation interceptor over that store.
func startHadoop(ctx context.Context, cfg Config, rms []simrm.Addrs, scID func(int) string) (*hadoopPeer, error) {
	cp, err := hadoopClasspath(ctx, cfg)
	if err != nil {
		return nil, err
	}
	h := &hadoopPeer{classpath: cp}
	zkDir := filepath.Join(cfg.Dir, "zookeeper")
	if h.ens, err = ssbench.StartZooKeeperEnsemble(cfg.Java, cfg.ZKClasspath, zkDir); err != nil {
		return h, err
	}
	zk := strings.Join(h.ens.ClientAddrs, ",")
	args := []string{"-cp", cp, "org.yarnfed.bench.HadoopPeer", "register", zk}
	for i, a := range rms {
		args = append(args, fmt.Sprintf("%s=%s,%s,%s,%s", scID(i), a.Client, a.Scheduler, a.Admin, a.Web))
	}
	// The ensemble needs a few seconds for a quorum; Curator retries inside.
	deadline := time.Now().Add(90 * time.Second)
	for {
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		out, err := exec.CommandContext(rctx, cfg.Java, args...).CombinedOutput()
		cancel()
		if err == nil && strings.Contains(string(out), "REGISTERED") {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return h, fmt.Errorf("registering sub-clusters in ZooKeeper: %v\n%s", err, tail(string(out), 3000))
		}
		time.Sleep(time.Second)
	}

	// The Router's configuration: federation on, the ZooKeeper store, the
	// federation interceptor; every listener on loopback.
	confDir := filepath.Join(cfg.Dir, "hadoop-conf")
	if err := os.MkdirAll(confDir, 0o700); err != nil {
		return h, err
	}
	var addrs []string
	for range 3 {
		a, err := ssbench.FreeAddr()
		if err != nil {
			return h, err
		}
		addrs = append(addrs, a)
	}
	h.addr = addrs[0]
	props := [][2]string{
		{"yarn.federation.enabled", "true"},
		{"yarn.federation.state-store.class", "org.apache.hadoop.yarn.server.federation.store.impl.ZookeeperFederationStateStore"},
		{"hadoop.zk.address", zk},
		{"yarn.router.clientrm.address", addrs[0]},
		{"yarn.router.webapp.address", addrs[1]},
		{"yarn.router.rmadmin.address", addrs[2]},
		{"yarn.router.clientrm.interceptor-class.pipeline", "org.apache.hadoop.yarn.server.router.clientrm.FederationClientInterceptor"},
		{"yarn.router.bind-host", "127.0.0.1"},
	}
	var b bytes.Buffer
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for _, p := range props {
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", p[0], p[1])
	}
	b.WriteString("</configuration>\n")
	if err := os.WriteFile(filepath.Join(confDir, "yarn-site.xml"), b.Bytes(), 0o600); err != nil {
		return h, err
	}
	logf, err := os.Create(filepath.Join(cfg.Dir, "hadoop-router.log"))
	if err != nil {
		return h, err
	}
	opts, err := jvmOptions(cfg)
	if err != nil {
		return h, err
	}
	h.router = exec.Command(cfg.Java, append(opts, "-Xmx"+cfg.HadoopHeap, "-cp", confDir+":"+cp, "org.apache.hadoop.yarn.server.router.Router")...)
	h.router.Stdout, h.router.Stderr = logf, logf
	h.router.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t0 := time.Now()
	if err := h.router.Start(); err != nil {
		return h, err
	}
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{h.addr}, Protocol: hadoopipc.ProtocolApplicationClient, User: "bench"})
	if err != nil {
		return h, err
	}
	defer c.Close()
	if h.coldStart, err = waitServing(ctx, c, t0, 300*time.Second); err != nil {
		lb, _ := os.ReadFile(logf.Name())
		return h, fmt.Errorf("the Hadoop Router: %w\n%s", err, tail(string(lb), 3000))
	}
	return h, nil
}

// runJavaClient drives each target with Hadoop's YarnClient from one JVM
// (our helper's `client` mode) and prints a second table. Direct clients
// are spread over the RMs, as the Go client's are.
func runJavaClient(ctx context.Context, cfg Config, w io.Writer, targets []*target, hp *hadoopPeer) error {
	cp := ""
	if hp != nil {
		cp = hp.classpath
	} else {
		var err error
		if cp, err = hadoopClasspath(ctx, cfg); err != nil {
			return fmt.Errorf("java client: %w", err)
		}
	}
	opts, err := jvmOptions(cfg)
	if err != nil {
		return err
	}
	for _, c := range cfg.Concurrency {
		fmt.Fprintf(w, "\n%d clients, %v per target (Hadoop %s YarnClient, one per thread, one JVM)\n", c, cfg.Duration, hadoopVersion)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "target\tops/s\tp50\tp99\terrors\trouter CPU/op\t")
		rates := map[string]float64{}
		for _, t := range targets {
			cmd := exec.CommandContext(ctx, cfg.Java, append(opts, "-Xmx1g", "-cp", cp, "org.yarnfed.bench.HadoopPeer", "client",
				t.addr, fmt.Sprint(c), fmt.Sprint(cfg.Duration.Milliseconds()))...)
			var stderr, stdout bytes.Buffer
			cmd.Stderr = &stderr
			pipe, err := cmd.StdoutPipe()
			if err != nil {
				return err
			}
			if err := cmd.Start(); err != nil {
				return err
			}
			// The helper prints START after its warm-up and the JSON result
			// line after the measured window: the router's CPU between the
			// two is what the measured ops cost.
			var r struct{ Ops, Errors, ElapsedNs, P50Ns, P99Ns int64 }
			var cpu0, cpu1 time.Duration
			sc := bufio.NewScanner(pipe)
			var parseErr error
			for sc.Scan() {
				line := sc.Text()
				stdout.WriteString(line + "\n")
				switch {
				case line == "START" && t.pid > 0:
					cpu0 = procstat.CPU(t.pid)
				case strings.HasPrefix(line, "{"):
					if t.pid > 0 {
						cpu1 = procstat.CPU(t.pid)
					}
					var raw map[string]int64
					if err := json.Unmarshal([]byte(line), &raw); err != nil {
						parseErr = fmt.Errorf("java client output %q: %w", line, err)
					}
					r.Ops, r.Errors, r.ElapsedNs, r.P50Ns, r.P99Ns = raw["ops"], raw["errors"], raw["elapsed_ns"], raw["p50_ns"], raw["p99_ns"]
				}
			}
			if err := cmd.Wait(); err != nil {
				return fmt.Errorf("java client against %s: %w\n%s", t.name, err, tail(stderr.String(), 3000))
			}
			if parseErr != nil {
				return parseErr
			}
			if r.ElapsedNs == 0 {
				return fmt.Errorf("java client against %s printed no result:\n%s", t.name, tail(stdout.String()+stderr.String(), 3000))
			}
			cpu := "-"
			if t.pid > 0 && r.Ops > 0 && cpu1 > 0 {
				cpu = fmt.Sprintf("%.0fus", float64(cpu1-cpu0)/float64(r.Ops)/1e3)
			}
			rate := float64(r.Ops) / (float64(r.ElapsedNs) / 1e9)
			rates[t.name] = rate
			fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%d\t%s\t\n", t.name, rate, ms(time.Duration(r.P50Ns)), ms(time.Duration(r.P99Ns)), r.Errors, cpu)
		}
		tw.Flush()
		line := fmt.Sprintf("ratio ops/s (Java client): yarnfed/direct %.2fx", rates["yarnfed"]/rates["direct"])
		if h := rates["hadoop"]; h > 0 {
			line += fmt.Sprintf(", hadoop/direct %.2fx, yarnfed/hadoop %.2fx", h/rates["direct"], rates["yarnfed"]/h)
		}
		fmt.Fprintln(w, line)
	}
	return nil
}
