//go:build interop

package e2e

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/proctest"
	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// The standalone federation (issue 19's proof): Hadoop 3.4.3's own
// ResourceManager and NodeManager main classes, each a JVM with its own
// conf dir, log and ports, as an operator runs them (not MiniYARNCluster:
// there all NMs share one JVM, one HADOOP_CONF_DIR and one host name, so
// "attempt 2 on another node, through another proxy" cannot happen).
//
// Layout: two RMs (SC-1 epoch 7, SC-2 epoch 1007; recovery on with
// FileSystemRMStateStore, so the epoch applies and a restarted RM recovers
// its applications), two NMs per RM, each NM on its own loopback IP
// (127.0.0.11/.12 for SC-1, .21/.22 for SC-2) so that NMs are distinct hosts
// (the RM's AM blacklisting and the proxies' node map work by host), one
// `yarnfed amrmproxy` per NM on that NM's IP, and the NM's conf dir — the
// HADOOP_CONF_DIR its containers get — names that proxy as the scheduler
// address (final). Plus the real Raft store, an agent per RM, the router
// and the GPG. See DESIGN.md ("The standalone federation").

// jvmProc is one daemon of the standalone federation (a Hadoop JVM, or one
// of our Go processes): internal/proctest's process (log file, own process
// group, SIGKILLed if the test binary dies, restartable with the same
// command line) with the verbs this harness uses.
type jvmProc struct{ proctest.Proc }

func newJVMProc(name, logPath string, argv, env []string) *jvmProc {
	return &jvmProc{proctest.Proc{Name: name, Bin: argv[0], Args: argv[1:], Env: env, LogPath: logPath}}
}

func (p *jvmProc) start() error { return p.Start() }

func (p *jvmProc) alive() bool {
	ended, _ := p.Exited()
	return !ended
}

// kill SIGKILLs the daemon (a crash: no shutdown hook runs) and waits for it.
func (p *jvmProc) kill() {
	if p.alive() {
		p.Kill()
	}
}

// stop sends SIGTERM (Hadoop's shutdown hook stops the service) and kills
// the daemon if it is not gone within timeout.
func (p *jvmProc) stop(timeout time.Duration) {
	if p.alive() && p.Terminate(timeout) != nil {
		p.kill()
	}
}

func (p *jvmProc) tail(n int) string { return p.Tail(n) }

// ---- configuration files ----

// writeHadoopConf writes a Hadoop XML configuration file; keys in final are
// marked <final>true</final> (a later resource, e.g. an MR job.xml, cannot
// override them).
func writeHadoopConf(path string, props map[string]string, final map[string]bool) error {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for _, k := range sortedKeys(props) {
		fin := ""
		if final[k] {
			fin = "<final>true</final>"
		}
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value>%s</property>\n", k, xmlEscape(props[k]), fin)
	}
	b.WriteString("</configuration>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// daemonLog4j: INFO to stderr (the daemon's log file). It sits in every conf
// dir, the first classpath entry of each daemon; distributed-shell AMs get
// it through -log_properties (see uamFed.runDS).
const daemonLog4j = `log4j.rootLogger=INFO, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%d{ISO8601} %p [%t] %c{1}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.eclipse.jetty=WARN
log4j.logger.com.sun.jersey=WARN
`

// freeAddrOn returns host:port free a moment ago on the given loopback IP.
func freeAddrOn(t testing.TB, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// ---- the RM ----

// saRM is a standalone ResourceManager and its NodeManagers.
type saRM struct {
	id                                 string // sub-cluster id (SC-1)
	epoch                              int64
	dir                                string
	confDir                            string
	rm, scheduler, tracker, admin, web string
	proc                               *jvmProc
	nms                                []*saNM
	// extra is more yarn-site.xml configuration (e.g. yarn.admin.acl).
	extra map[string]string
}

// saNM is a standalone NodeManager on its own loopback IP ("host"), with the
// AMRMProxy its containers dial.
type saNM struct {
	name                 string // e.g. SC-1-nm1
	sc                   *saRM
	ip                   string
	dir                  string
	confDir              string // its classpath's first entry and its containers' HADOOP_CONF_DIR
	addr, localizer, web string
	logDir               string
	localDir             string
	proc                 *jvmProc
	// The AMRMProxy on this NM's host.
	proxyAddr, proxyWeb string
	proxy               *jvmProc
}

// rmJVMFlags keep a daemon small and avoid DNS lookups of the 127.0.0.x
// "hosts" (no name resolves; the JDK then answers with the literal).
func daemonJVM(j *javaEnv, heap, confDir, class string) []string {
	argv := append([]string{j.java}, j.jvmArgs...)
	argv = append(argv, "-Xmx"+heap, "-Dsun.net.inetaddr.negative.ttl=3600",
		"-cp", confDir+string(os.PathListSeparator)+j.classpath, class)
	return argv
}

// nodeAttributeRootDir is YarnConfiguration.FS_NODE_ATTRIBUTE_STORE_ROOT_DIR.
const nodeAttributeRootDir = "yarn.node-attribute.fs-store.root-dir"

func (r *saRM) writeConf() error {
	if err := os.MkdirAll(r.confDir, 0o755); err != nil {
		return err
	}
	props := map[string]string{
		"yarn.resourcemanager.hostname":                 "127.0.0.1",
		"yarn.resourcemanager.address":                  r.rm,
		"yarn.resourcemanager.scheduler.address":        r.scheduler,
		"yarn.resourcemanager.resource-tracker.address": r.tracker,
		"yarn.resourcemanager.admin.address":            r.admin,
		"yarn.resourcemanager.webapp.address":           r.web,
		"yarn.resourcemanager.cluster-id":               "e2e-uam-" + strings.ToLower(r.id),
		// The epoch takes effect only with recovery on and a state store
		// (REFERENCE 9); a file store also lets a killed RM come back with
		// its applications (scenario d).
		"yarn.resourcemanager.recovery.enabled":   "true",
		"yarn.resourcemanager.store.class":        "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore",
		"yarn.resourcemanager.fs.state-store.uri": "file://" + filepath.Join(r.dir, "rmstore"),
		"yarn.resourcemanager.epoch":              fmt.Sprint(r.epoch),
		"yarn.resourcemanager.am.max-attempts":    "2",
		// A failed AM's node is avoided by its next attempt (by host: each
		// NM here is its own 127.0.0.x host).
		"yarn.resourcemanager.am-scheduling.node-blacklisting-enabled":           "true",
		"yarn.resourcemanager.am-scheduling.node-blacklisting-disable-threshold": "0.8",
		"yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms":       "0",
		"yarn.resourcemanager.nodemanagers.heartbeat-interval-ms":                "250",
		"yarn.scheduler.minimum-allocation-mb":                                   "128",
		"yarn.timeline-service.enabled":                                          "false",
		"yarn.resourcemanager.system-metrics-publisher.enabled":                  "false",
		"yarn.nm.liveness-monitor.expiry-interval-ms":                            "20000",
		"hadoop.tmp.dir": filepath.Join(r.dir, "tmp"),
		// The node-attribute store does not follow hadoop.tmp.dir: its
		// default is file:///tmp/hadoop-yarn-<user>/node-attribute, one
		// directory for every RM of the machine. Two RMs starting at once
		// (SC-1 and SC-2 here, or another test's) race on its mirror file
		// and one dies with FileNotFoundException
		// nodeattribute.mirror.writing (seen in CI-like runs).
		// MiniYARNCluster moves it for the same reason.
		nodeAttributeRootDir: filepath.Join(r.dir, "node-attribute"),
	}
	maps.Copy(props, r.extra)
	if err := writeHadoopConf(filepath.Join(r.confDir, "yarn-site.xml"), props, nil); err != nil {
		return err
	}
	cs := map[string]string{
		"yarn.scheduler.capacity.root.queues":                   "default",
		"yarn.scheduler.capacity.root.default.capacity":         "100",
		"yarn.scheduler.capacity.root.default.maximum-capacity": "100",
		// Room for a distributed-shell AM beside an MR AM.
		"yarn.scheduler.capacity.maximum-am-resource-percent": "0.5",
	}
	if err := writeHadoopConf(filepath.Join(r.confDir, "capacity-scheduler.xml"), cs, nil); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.confDir, "log4j.properties"), []byte(daemonLog4j), 0o644)
}

// writeConf writes the NM's conf dir: its own settings, and the AM-facing
// ones (final): the scheduler address is this host's proxy.
func (n *saNM) writeConf() error {
	if err := os.MkdirAll(n.confDir, 0o755); err != nil {
		return err
	}
	r := n.sc
	props := map[string]string{
		"yarn.resourcemanager.hostname":                 "127.0.0.1",
		"yarn.resourcemanager.address":                  r.rm,
		"yarn.resourcemanager.resource-tracker.address": r.tracker,
		"yarn.resourcemanager.admin.address":            r.admin,
		"yarn.resourcemanager.webapp.address":           r.web,
		"yarn.nodemanager.hostname":                     n.ip,
		"yarn.nodemanager.address":                      n.addr,
		"yarn.nodemanager.localizer.address":            n.localizer,
		"yarn.nodemanager.webapp.address":               n.web,
		"yarn.nodemanager.local-dirs":                   n.localDir,
		"yarn.nodemanager.log-dirs":                     n.logDir,
		"yarn.nodemanager.resource.memory-mb":           "4096",
		"yarn.nodemanager.resource.cpu-vcores":          "4",
		"yarn.nodemanager.pmem-check-enabled":           "false",
		"yarn.nodemanager.vmem-check-enabled":           "false",
		"yarn.nodemanager.container-executor.class":     "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor",
		// MapReduce's shuffle (scenario e), on an ephemeral port.
		"yarn.nodemanager.aux-services":                                                 "mapreduce_shuffle",
		"yarn.nodemanager.aux-services.mapreduce_shuffle.class":                         "org.apache.hadoop.mapred.ShuffleHandler",
		"yarn.nodemanager.process-kill-wait.ms":                                         "500",
		"yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "99",
		"yarn.timeline-service.enabled":                                                 "false",
		"hadoop.tmp.dir":                                                                filepath.Join(n.dir, "tmp"),
		// AM-facing (final): the AMs on this host dial its proxy.
		"yarn.resourcemanager.scheduler.address": n.proxyAddr,
		// Re-dial a dropped scheduler (or RM) connection after 1 s, not 30.
		"yarn.resourcemanager.connect.retry-interval.ms": "1000",
		// An ending AM stops its containers, also on a dead NM: give up after 5 s.
		"yarn.client.nodemanager-connect.max-wait-ms":       "5000",
		"yarn.client.nodemanager-connect.retry-interval-ms": "1000",
	}
	final := map[string]bool{
		"yarn.resourcemanager.scheduler.address":            true,
		"yarn.resourcemanager.connect.retry-interval.ms":    true,
		"yarn.client.nodemanager-connect.max-wait-ms":       true,
		"yarn.client.nodemanager-connect.retry-interval-ms": true,
	}
	if err := writeHadoopConf(filepath.Join(n.confDir, "yarn-site.xml"), props, final); err != nil {
		return err
	}
	// The shuffle handler reads its port through a JobConf, whose
	// mapred-default.xml (loaded after yarn-site.xml) would put back 13562:
	// two NMs on one machine then collide. Ephemeral, in mapred-site.xml.
	if err := writeHadoopConf(filepath.Join(n.confDir, "mapred-site.xml"), map[string]string{"mapreduce.shuffle.port": "0"}, nil); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.confDir, "log4j.properties"), []byte(daemonLog4j), 0o644)
}

// ready reports whether the RM is active and answers REST.
func (r *saRM) ready() (bool, string) {
	b, ok := tryRESTAt(r.web, "/ws/v1/cluster/info")
	if !ok {
		return false, tail(string(b), 200)
	}
	var info rmrest.ClusterInfoResponse
	if err := json.Unmarshal(b, &info); err != nil {
		return false, err.Error()
	}
	return info.ClusterInfo.HAState == "ACTIVE", "haState " + info.ClusterInfo.HAState
}

// runningNodes lists the node ids the RM has RUNNING.
func (r *saRM) runningNodes() (map[string]bool, error) {
	b, ok := tryRESTAt(r.web, "/ws/v1/cluster/nodes")
	if !ok {
		return nil, fmt.Errorf("nodes of %s: %s", r.id, tail(string(b), 200))
	}
	var nr rmrest.NodesResponse
	if err := json.Unmarshal(b, &nr); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range nr.Nodes.Node {
		if n.State == "RUNNING" {
			out[n.ID] = true
		}
	}
	return out, nil
}

// nodeID is how the RM names this NM (host:port of its address).
func (n *saNM) nodeID() string { return n.addr }

// waitRMReady waits for the RM to be active with all its NMs RUNNING.
func (r *saRM) waitReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	waitUntilJVM(t, timeout, r.id+" RM active with its NodeManagers", r.proc, func() (bool, string) {
		if ok, d := r.ready(); !ok {
			return false, d
		}
		nodes, err := r.runningNodes()
		if err != nil {
			return false, err.Error()
		}
		for _, n := range r.nms {
			if !nodes[n.nodeID()] {
				return false, fmt.Sprintf("%s not RUNNING (running: %v)", n.nodeID(), sortedKeys(nodes))
			}
		}
		return true, ""
	})
}

// waitUntilJVM is waitUntil for a JVM daemon (which must stay alive).
func waitUntilJVM(t testing.TB, timeout time.Duration, what string, p *jvmProc, cond func() (bool, string)) {
	t.Helper()
	pollAlive(t, timeout, 200*time.Millisecond, what, func() string {
		if p != nil && !p.alive() {
			return fmt.Sprintf("%s exited:\n%s", p.Name, p.tail(40))
		}
		return ""
	}, cond)
}

// killRM SIGKILLs the RM only (its NMs keep running, as when an RM host
// dies); restartRM starts it again with the same conf and waits until it
// is active and its NMs are back.
func (r *saRM) killRM() { r.proc.kill() }

func (r *saRM) restartRM(t testing.TB) {
	t.Helper()
	if err := r.proc.start(); err != nil {
		t.Fatalf("restart %s RM: %v", r.id, err)
	}
	r.waitReady(t, 2*time.Minute)
}

// killNM SIGKILLs the NodeManager and the containers it started (a lost
// host); startNM starts it again (fresh: no NM recovery) and waits until
// its RM lists it RUNNING.
func (n *saNM) killNM(t testing.TB) int {
	t.Helper()
	n.proc.kill()
	return killContainersUnder(t, n.localDir)
}

func (n *saNM) startNM(t testing.TB) {
	t.Helper()
	// The RM may still list the killed NM RUNNING (liveness expiry 20 s):
	// wait for this run's own registration line, then for RUNNING.
	before := n.registrations()
	if err := n.proc.start(); err != nil {
		t.Fatalf("start %s: %v", n.name, err)
	}
	waitUntilJVM(t, 2*time.Minute, n.name+" registered and RUNNING on "+n.sc.id, n.proc, func() (bool, string) {
		if got := n.registrations(); got <= before {
			return false, "not registered with its RM yet"
		}
		nodes, err := n.sc.runningNodes()
		if err != nil {
			return false, err.Error()
		}
		return nodes[n.nodeID()], fmt.Sprintf("running: %v", sortedKeys(nodes))
	})
}

// registrations counts the NM log's "Registered with ResourceManager"
// lines (one per successful registration, every run of the process).
func (n *saNM) registrations() int {
	b, _ := os.ReadFile(n.proc.LogPath)
	return strings.Count(string(b), "Registered with ResourceManager as")
}

// killContainersUnder SIGKILLs the process group of every container whose
// pid file (nmPrivate/<app>/<container>/<container>.pid) is under dir and
// whose process still names that container in its environment.
func killContainersUnder(t testing.TB, dir string) int {
	n := 0
	for container, pid := range proctest.NMContainerPids(dir) {
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
			t.Logf("kill process group of %s (%d): %v", container, pid, err)
			continue
		}
		n++
	}
	return n
}

// ---- the federation ----

// uamFed is the standalone federation: two RMs with two NMs each, a proxy
// per NM, the Raft store, agents, router and GPG. One is shared by the
// scenarios of a test binary (needUAMFed; distinct applications); TestMain
// stops it.
type uamFed struct {
	j         *javaEnv
	dir       string
	yarnfed   string
	ctl       string
	store     string
	rms       [2]*saRM
	store1    *jvmProc
	agents    [2]*jvmProc
	router    *jvmProc
	gpg       *jvmProc
	gpgWeb    string
	clientRM  string // the router's ApplicationClientProtocol address
	routerWS  string
	startTook time.Duration
	failed    bool // a test on it failed: keep its files
}

// gpgReaperFlags turn on the GPG's UAM reaper with a short round.
var gpgReaperFlags = []string{"--uam-reaper", "--uam-reaper-interval", "5s"}

// gpgReaperRound is the reaper's round period the flags above ask for.
const gpgReaperRound = 5 * time.Second

// proxyFlags: SC-2 counts as lost 10 s after it went silent (default 60 s),
// so scenario d's app finishes without waiting a minute.
var uamProxyFlags = []string{"--subcluster-timeout", "10s"}

var (
	uamFedMu  sync.Mutex
	sharedUAM *uamFed
	uamFedErr error
)

// needUAMFed returns the shared standalone federation, starting it on first
// use. A test using it gets, at cleanup, the shared leak check (scoped to
// applications started during the test) and, if it failed, the logs' tails.
func needUAMFed(t *testing.T) *uamFed {
	t.Helper()
	needAMRMProxy(t)
	f, err := func() (*uamFed, error) {
		uamFedMu.Lock()
		defer uamFedMu.Unlock()
		if sharedUAM == nil && uamFedErr == nil {
			// startUAMFed fails the test with t.Fatal (Goexit) on a timeout:
			// later tests then get this error instead of a second try.
			uamFedErr = fmt.Errorf("it failed to start in %s", t.Name())
			sharedUAM, uamFedErr = startUAMFed(t)
		}
		return sharedUAM, uamFedErr
	}()
	if err != nil {
		t.Fatalf("interop: standalone federation: %v", err)
	}
	for _, r := range f.rms {
		if !r.proc.alive() {
			t.Fatalf("interop: %s's RM is down (an earlier test left it so)", r.id)
		}
	}
	since := time.Now()
	t.Cleanup(func() {
		timeout := leakCheckTimeout
		if t.Failed() {
			timeout = 5 * time.Second
		}
		checkNoLeaks(t, f.leakTargets(), since, timeout)
		if t.Failed() {
			f.failed = true
			f.dumpLogs(t)
		}
		// After the check: whatever the test left live (a failed test's
		// app, a leaked UAM) is killed through the RMs' REST API, so the
		// next test on the shared federation starts clean.
		f.tidy(t, since)
	})
	return f
}

// tidy kills, on every live RM, each application started at or after
// since that is still NEW..RUNNING (RM REST: PUT .../state KILLED as the
// app's user), and logs what it killed.
func (f *uamFed) tidy(t testing.TB, since time.Time) {
	sinceMs := since.Add(-time.Second).UnixMilli()
	for _, r := range f.rms {
		if !r.proc.alive() {
			continue
		}
		apps, err := appsAt(r.web)
		if err != nil {
			t.Logf("tidy: %s: %v", r.id, err)
			continue
		}
		for _, a := range apps {
			if a.StartedTime < sinceMs || !liveAppState(a.State) {
				continue
			}
			url := fmt.Sprintf("http://%s/ws/v1/cluster/apps/%s/state?user.name=%s", r.web, a.ID, a.User)
			req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(`{"state":"KILLED"}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := shortHTTP.Do(req)
			if err != nil {
				t.Logf("tidy: killing %s on %s: %v", a.ID, r.id, err)
				continue
			}
			resp.Body.Close()
			t.Logf("tidy: killed %s (%s, %s) left on %s: HTTP %d", a.ID, a.Name, a.State, r.id, resp.StatusCode)
		}
	}
}

// stopUAMFed stops the shared federation (TestMain), keeping its files when
// a test on it failed.
func stopUAMFed(failed bool) {
	uamFedMu.Lock()
	defer uamFedMu.Unlock()
	if sharedUAM == nil {
		return
	}
	f := sharedUAM
	f.stopAll()
	if failed || f.failed {
		fmt.Fprintf(os.Stderr, "interop: standalone federation files kept in %s\n", f.dir)
		return
	}
	_ = os.RemoveAll(f.dir)
}

func (f *uamFed) stopAll() {
	var wg sync.WaitGroup
	for _, r := range f.rms {
		if r == nil {
			continue
		}
		for _, n := range r.nms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n.proc.stop(15 * time.Second)
				// Containers it started run in their own sessions.
				for _, pid := range proctest.NMContainerPids(n.localDir) {
					_ = syscall.Kill(-pid, syscall.SIGKILL)
				}
				if n.proxy != nil {
					n.proxy.kill()
				}
			}()
		}
		wg.Add(1)
		go func() { defer wg.Done(); r.proc.stop(15 * time.Second) }()
	}
	wg.Wait()
	for _, p := range []*jvmProc{f.gpg, f.router, f.agents[0], f.agents[1], f.store1} {
		if p != nil {
			p.kill()
		}
	}
}

// startGoProc starts a yarnfed process not bound to a test's lifetime.
func startGoProc(dir, name, bin string, args ...string) (*jvmProc, error) {
	p := newJVMProc(name, filepath.Join(dir, name+".log"), append([]string{bin}, args...), nil)
	if err := p.start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

// startUAMFed starts everything, in parallel where it can: the JVMs at once
// (they retry their RM until it is up), the Go processes as soon as the
// store is.
func startUAMFed(t *testing.T) (f *uamFed, err error) {
	t.Helper()
	j := needJava(t)
	f = &uamFed{j: j}
	f.yarnfed, f.ctl = yarnfedBinaries(t)
	start := time.Now()
	f.dir, err = os.MkdirTemp("", "yarnfed-e2e-uam-")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		// Also on t.Fatal (Goexit): nothing may outlive a failed start.
		if err != nil || !ok {
			f.failed = true
			f.stopAll()
			fmt.Fprintf(os.Stderr, "interop: standalone federation files kept in %s\n", f.dir)
		}
		if err != nil {
			err = fmt.Errorf("%w (files in %s)", err, f.dir)
		}
	}()

	// Addresses and conf dirs. Each NM is a "host": its own 127.0.0.x.
	for i := range f.rms {
		id := fmt.Sprintf("SC-%d", i+1)
		r := &saRM{id: id, epoch: spanEpochs[i], dir: filepath.Join(f.dir, id)}
		r.confDir = filepath.Join(r.dir, "conf")
		r.rm, r.scheduler, r.tracker, r.admin, r.web = freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
		if err := r.writeConf(); err != nil {
			return nil, err
		}
		r.proc = newJVMProc(id+"-rm", filepath.Join(r.dir, "rm.log"),
			daemonJVM(j, "768m", r.confDir, "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"),
			[]string{"JAVA_HOME=" + j.javaHome(), "HADOOP_CONF_DIR=" + r.confDir})
		for k := 0; k < 2; k++ {
			ip := fmt.Sprintf("127.0.0.%d%d", i+1, k+1)
			n := &saNM{name: fmt.Sprintf("%s-nm%d", id, k+1), sc: r, ip: ip}
			n.dir = filepath.Join(r.dir, fmt.Sprintf("nm%d", k+1))
			n.confDir = filepath.Join(n.dir, "conf")
			n.logDir, n.localDir = filepath.Join(n.dir, "logs"), filepath.Join(n.dir, "local")
			n.addr, n.localizer, n.web = freeAddrOn(t, ip), freeAddrOn(t, ip), freeAddrOn(t, ip)
			n.proxyAddr, n.proxyWeb = freeAddrOn(t, ip), freeAddrOn(t, ip)
			if err := n.writeConf(); err != nil {
				return nil, err
			}
			// JAVA_HOME and HADOOP_CONF_DIR are on the NM's env whitelist:
			// its containers find java and this host's configuration.
			n.proc = newJVMProc(n.name, filepath.Join(n.dir, "nm.log"),
				daemonJVM(j, "512m", n.confDir, "org.apache.hadoop.yarn.server.nodemanager.NodeManager"),
				[]string{"JAVA_HOME=" + j.javaHome(), "HADOOP_CONF_DIR=" + n.confDir})
			r.nms = append(r.nms, n)
		}
		f.rms[i] = r
	}
	for _, r := range f.rms {
		if err := r.proc.start(); err != nil {
			return nil, err
		}
		for _, n := range r.nms {
			if err := n.proc.start(); err != nil {
				return nil, err
			}
		}
	}

	grpcAddr, raftAddr, httpAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	f.store = grpcAddr
	if f.store1, err = startGoProc(f.dir, "statestore", f.yarnfed, "statestore", "--node-id", "ss1",
		"--data-dir", filepath.Join(f.dir, "statestore"), "--grpc-address", grpcAddr,
		"--raft-address", raftAddr, "--http-address", httpAddr,
		"--bootstrap", "--peers", "ss1="+raftAddr,
		"--heartbeat-timeout", "500ms", "--election-timeout", "500ms",
		"--insecure"); err != nil {
		return nil, err
	}
	waitUntilJVM(t, 30*time.Second, "the state store's leader", f.store1, func() (bool, string) {
		return httpOK("http://" + httpAddr + "/readyz")
	})
	for i, r := range f.rms {
		if f.agents[i], err = startGoProc(f.dir, "agent-"+r.id, f.yarnfed, "subcluster-agent",
			"--subcluster-id", r.id, "--store", f.store, "--store-insecure",
			"--rm", fmt.Sprintf("clientrm=%s,amrm=%s,admin=%s,web=%s", r.rm, r.scheduler, r.admin, r.web),
			"--probe-interval", "500ms", "--probe-timeout", "2s", "--heartbeat-interval", "2s"); err != nil {
			return nil, err
		}
	}
	runCtl(t, f.ctl, "--store", f.store, "policy", "save", "--manager", spanManager, "-s", spanPolicy)
	// The GPG runs here (its UAM reaper): its generator must not rewrite
	// the weights the scenarios rely on (home SC-1, asks split evenly).
	runCtl(t, f.ctl, "--store", f.store, "policy", "pin", "default")
	f.clientRM, f.routerWS = freeAddr(t), freeAddr(t)
	if f.router, err = startGoProc(f.dir, "router", f.yarnfed, "router", "--store", f.store, "--store-insecure",
		"--clientrm-address", f.clientRM, "--web-address", f.routerWS, "--admin-address", "",
		"--membership-refresh", "200ms", "--call-timeout", "20s"); err != nil {
		return nil, err
	}
	for _, r := range f.rms {
		for _, n := range r.nms {
			args := append([]string{"amrmproxy",
				"--store", f.store, "--store-insecure", "--subcluster-id", r.id,
				"--amrm-address", n.proxyAddr, "--web-address", n.proxyWeb,
				"--data-dir", filepath.Join(n.dir, "amrmproxy")}, uamProxyFlags...)
			if n.proxy, err = startGoProc(n.dir, "amrmproxy", f.yarnfed, args...); err != nil {
				return nil, err
			}
		}
	}
	f.gpgWeb = freeAddr(t)
	gpgArgs := []string{"gpg", "--store", f.store, "--store-insecure", "--web-address", f.gpgWeb,
		"--interval", "5s", "--id", "e2e-gpg"}
	gpgArgs = append(gpgArgs, gpgReaperFlags...)
	if f.gpg, err = startGoProc(f.dir, "gpg", f.yarnfed, gpgArgs...); err != nil {
		return nil, err
	}

	// Ready: every RM active with its NMs, every proxy, the router seeing
	// all four nodes, the GPG's web port.
	for _, r := range f.rms {
		r.waitReady(t, 4*time.Minute)
	}
	for _, r := range f.rms {
		for _, n := range r.nms {
			waitUntilJVM(t, 30*time.Second, n.name+"'s amrmproxy ready", n.proxy, func() (bool, string) {
				return httpOK("http://" + n.proxyWeb + "/readyz")
			})
		}
	}
	waitUntilJVM(t, time.Minute, "the router to see all four NodeManagers", f.router, func() (bool, string) {
		m, err := clusterMetricsAt(f.routerWS)
		if err != nil {
			return false, err.Error()
		}
		return m.TotalNodes == 4, fmt.Sprintf("%d of 4 nodes", m.TotalNodes)
	})
	waitUntilJVM(t, 30*time.Second, "the GPG's web port", f.gpg, func() (bool, string) {
		return httpOK("http://" + f.gpgWeb + "/healthz")
	})
	f.startTook = time.Since(start)
	ok = true
	t.Logf("standalone federation up in %s (2 RMs, 4 NMs, 4 proxies, store, 2 agents, router, GPG; files in %s)",
		f.startTook.Round(time.Millisecond), f.dir)
	return f, nil
}

// leakTargets: both RMs and all their NMs (a killed RM is skipped).
func (f *uamFed) leakTargets() []leakTarget {
	var out []leakTarget
	for _, r := range f.rms {
		lt := leakTarget{name: r.id, rmWeb: r.web, alive: r.proc.alive}
		for _, n := range r.nms {
			if n.proc.alive() {
				lt.nmWebs = append(lt.nmWebs, n.web)
			}
		}
		out = append(out, lt)
	}
	return out
}

// dumpLogs logs where every log is and the tails of the federation's own
// processes (a failed test).
func (f *uamFed) dumpLogs(t testing.TB) {
	for _, p := range []*jvmProc{f.router, f.gpg} {
		t.Logf("---- %s (%s) ----\n%s", p.Name, p.LogPath, p.tail(30))
	}
	for _, r := range f.rms {
		t.Logf("%s RM log: %s", r.id, r.proc.LogPath)
		for _, n := range r.nms {
			t.Logf("---- %s amrmproxy (%s) ----\n%s", n.name, n.proxy.LogPath, n.proxy.tail(25))
			t.Logf("%s NM log: %s; container logs under %s", n.name, n.proc.LogPath, n.logDir)
		}
	}
}

// allNMs lists every NM of the federation.
func (f *uamFed) allNMs() []*saNM {
	var out []*saNM
	for _, r := range f.rms {
		out = append(out, r.nms...)
	}
	return out
}

// nmOf returns the NM the RM calls nodeID (host:port).
func (f *uamFed) nmOf(nodeID string) *saNM {
	for _, n := range f.allNMs() {
		if n.nodeID() == nodeID || strings.HasSuffix(nodeID, ":"+portOf(n.addr)) && strings.HasPrefix(nodeID, n.ip) {
			return n
		}
	}
	return nil
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// ---- distributed shell and evidence ----

// runDS runs distributed shell through the router; extra are client flags.
// The AM gets an INFO log4j.properties (-log_properties; its own
// classpath would find the harness's WARN one first): its "received N
// previous attempts' running containers" line is evidence.
func (f *uamFed) runDS(d dsRun, containers, sleep int, extra ...string) (cliRun, error) {
	l4j := filepath.Join(f.dir, "am-log4j.properties")
	if err := os.WriteFile(l4j, []byte(daemonLog4j), 0o644); err != nil {
		return cliRun{}, err
	}
	return runDSClient(f.j, f.dir, f.clientRM, d, containers, sleep, append([]string{"-log_properties", l4j}, extra...)...)
}

// startDS runs distributed shell in the background.
func (f *uamFed) startDS(d dsRun, containers, sleep int, extra ...string) <-chan dsResult {
	done := make(chan dsResult, 1)
	go func() {
		out, err := f.runDS(d, containers, sleep, extra...)
		done <- dsResult{out, err}
	}()
	return done
}

// ctrEvidence is what one container printed (timed dsRun).
type ctrEvidence struct {
	nm       *saNM
	started  time.Time // zero: no start line
	ended    time.Time // zero: not stopped by a signal
	finished bool      // slept to the end and printed the marker
}

// evidence collects, per container id, what the shell containers of d
// printed, from every NM's log dir (the NM that ran it holds its stdout).
func (f *uamFed) evidence(d dsRun) map[string]*ctrEvidence {
	out := map[string]*ctrEvidence{}
	get := func(c string, n *saNM) *ctrEvidence {
		e := out[c]
		if e == nil {
			e = &ctrEvidence{nm: n}
			out[c] = e
		}
		return e
	}
	for _, n := range f.allNMs() {
		_ = filepath.WalkDir(n.logDir, func(p string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() || de.Name() != "stdout" {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			lines := strings.Split(string(b), "\n")
			for i, line := range lines {
				fs := strings.Fields(line)
				if len(fs) != 2 {
					continue
				}
				var ts time.Time
				if i+1 < len(lines) {
					if ns, err := strconv.ParseInt(strings.TrimSpace(lines[i+1]), 10, 64); err == nil {
						ts = time.Unix(0, ns)
					}
				}
				switch fs[0] {
				case d.startedMarker():
					get(fs[1], n).started = ts
				case d.endedMarker():
					get(fs[1], n).ended = ts
				case d.marker:
					get(fs[1], n).finished = true
				}
			}
			return nil
		})
	}
	return out
}

// appAttempt is one entry of the RM's /apps/{id}/appattempts.
type appAttempt struct {
	ID           int    `json:"id"`
	StartTime    int64  `json:"startTime"`
	ContainerID  string `json:"containerId"`
	NodeID       string `json:"nodeId"`
	AppAttemptID string `json:"appAttemptId"`
	State        string `json:"appAttemptState"`
}

func attemptsAt(rmWeb, app string) ([]appAttempt, error) {
	b, ok := tryRESTAt(rmWeb, "/ws/v1/cluster/apps/"+app+"/appattempts")
	if !ok {
		return nil, fmt.Errorf("attempts of %s: %s", app, tail(string(b), 300))
	}
	var r struct {
		AppAttempts struct {
			AppAttempt []appAttempt `json:"appAttempt"`
		} `json:"appAttempts"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return r.AppAttempts.AppAttempt, nil
}

// appAt returns an RM's record of application id.
func appAt(rmWeb, id string) (rmrest.App, bool, error) {
	apps, err := appsAt(rmWeb)
	return appWhere(apps, err, func(a rmrest.App) bool { return a.ID == id })
}

// appNamed returns the home RM's record of the app named name.
func (f *uamFed) appNamed(name string) (rmrest.App, bool, error) {
	apps, err := appsAt(f.rms[0].web)
	return appWhere(apps, err, func(a rmrest.App) bool { return a.Name == name })
}

// killAM SIGKILLs the process group of the application's current AM
// container (found by the pid file its NM wrote) and returns that attempt.
func (f *uamFed) killAM(t testing.TB, app string) (appAttempt, *saNM) {
	t.Helper()
	atts, err := attemptsAt(f.rms[0].web, app)
	if err != nil || len(atts) == 0 {
		t.Fatalf("attempts of %s: %v %v", app, atts, err)
	}
	cur := atts[len(atts)-1]
	n := f.nmOf(cur.NodeID)
	if n == nil {
		t.Fatalf("attempt %s runs on %s, which is none of the harness's NMs", cur.AppAttemptID, cur.NodeID)
	}
	pid, ok := proctest.NMContainerPids(n.localDir)[cur.ContainerID]
	if !ok {
		t.Fatalf("no live pid for AM container %s under %s", cur.ContainerID, n.localDir)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill AM %s (pid %d): %v", cur.ContainerID, pid, err)
	}
	t.Logf("killed AM %s of %s (pid %d) on %s (%s)", cur.ContainerID, cur.AppAttemptID, pid, n.name, cur.NodeID)
	return cur, n
}

// amLog returns the AM container's stderr (AppMaster.stderr for
// distributed shell, syslog-free) as its NM kept it.
func (n *saNM) amLog(app, container, file string) string {
	b, err := os.ReadFile(filepath.Join(n.logDir, app, container, file))
	if err != nil {
		return ""
	}
	return string(b)
}

// TestStandaloneRMConfsShareNoDirectory: each standalone RM keeps its local
// state under its own directory. Hadoop defaults some of these locations to
// one machine-wide path (the node-attribute store to
// /tmp/hadoop-yarn-<user>), and two RMs starting together on one such path
// kill each other's start (FileNotFoundException on the store's mirror).
func TestStandaloneRMConfsShareNoDirectory(t *testing.T) {
	base := t.TempDir()
	// The locations an RM writes at start with this configuration.
	keys := []string{"hadoop.tmp.dir", nodeAttributeRootDir, "yarn.resourcemanager.fs.state-store.uri"}
	seen := map[string]string{}
	for _, id := range []string{"SC-1", "SC-2"} {
		r := &saRM{id: id, dir: filepath.Join(base, id)}
		r.confDir = filepath.Join(r.dir, "conf")
		if err := r.writeConf(); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(r.confDir, "yarn-site.xml"))
		if err != nil {
			t.Fatal(err)
		}
		var conf struct {
			Props []struct {
				Name  string `xml:"name"`
				Value string `xml:"value"`
			} `xml:"property"`
		}
		if err := xml.Unmarshal(raw, &conf); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, p := range conf.Props {
			got[p.Name] = p.Value
		}
		for _, k := range keys {
			v := strings.TrimPrefix(got[k], "file://")
			if v == "" || !strings.HasPrefix(v, r.dir+string(os.PathSeparator)) {
				t.Errorf("%s: %s = %q, want a path under %s", id, k, got[k], r.dir)
			}
			if other, dup := seen[v]; dup && v != "" {
				t.Errorf("%s: %s = %q, as %s's", id, k, v, other)
			}
			seen[v] = id
		}
	}
}
