//go:build interop

package e2e

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// A spanning federation: two real sub-clusters (MiniYARNCluster JVMs with
// distinct cluster ids and epochs 1000 apart), the real Raft state store, a
// sub-cluster agent per RM, the router, and per sub-cluster the address its
// AMs dial as their scheduler (an AMRMProxy, or in the harness's own test a
// plain TCP relay to the cluster's RM). SC-1 is every application's home
// (router weights SC-1:1); AMRM weights split asks half and half.

const (
	spanHome      = "SC-1"
	spanSecondary = "SC-2"
	// A queue policy as `yarn routeradmin -policy -s` takes it: homes on
	// SC-1, asks split evenly by weight (headroomAlpha 0: weights only).
	// Stored for "default", the queue name the apps are submitted with
	// and the router matches. Hadoop's own AMRMProxy looks the policy up by
	// the register response's queue, which a 3.4 capacity scheduler gives
	// as "root.default" (TestUAMWithForeignAppIDOnRealRM logs it): it would
	// miss this policy. Ours must find the one the router used.
	spanPolicy  = "default;SC-1:1.0;SC-1:0.5,SC-2:0.5;0.0"
	spanManager = "WeightedLocality" // LocalityRouterPolicy + LocalityMulticastAMRMProxyPolicy
)

// spanEpochs are the RM epochs of SC-1 and SC-2: container ids carry them
// (container_e07_..., container_e1007_...), so the evidence of where a
// container ran is in its own id.
var spanEpochs = [2]int64{7, 1007}

type spanFed struct {
	t        *testing.T
	j        *javaEnv
	dir      string // process logs and data dirs
	yarnfed  string
	ctl      string
	store    string // gRPC address
	ids      [2]string
	clusters [2]*miniCluster
	amrm     [2]string // the scheduler address AMs on each cluster dial
	// amrmHeld keeps each amrm address bound from before the clusters
	// start (their JVMs take ephemeral ports too) until its proxy or
	// relay takes it over.
	amrmHeld [2]net.Listener
	agents   [2]*proc
	router   *proc
	clientRM string // the router's ApplicationClientProtocol address
	routerWS string // the router's REST address
	proxies  [2]*proc
	relays   [2]*tcpRelayFake
	// secondaryHold is the relay in front of SC-2's scheduler port
	// (spanOptions.secondaryAMRMHold), if any.
	secondaryHold *tcpRelayFake
	// proxyArgs are extra flags for every proxy (a test's own tuning).
	proxyArgs []string
}

// amSchedulerKind is what answers the AMs' scheduler address.
type amSchedulerKind int

const (
	withAMRMProxy amSchedulerKind = iota // `yarnfed amrmproxy`, one per cluster
	withRelay                            // tcpRelayFake to the cluster's own RM
)

// spanClusterSettings let MapReduce run on the sub-clusters (the NMs'
// shuffle service on an ephemeral port, as Hadoop's MiniMRYarnCluster sets
// it; room for a 512 MB MR AM beside a distributed-shell AM), and keep an
// NM's stop short: it waits for finished applications up to twice
// (sigkill delay + process-kill wait), 10.5 s by default.
var spanClusterSettings = []string{
	"yarn.nodemanager.aux-services=mapreduce_shuffle",
	"yarn.nodemanager.aux-services.mapreduce_shuffle.class=org.apache.hadoop.mapred.ShuffleHandler",
	"mapreduce.shuffle.port=0",
	"yarn.scheduler.capacity.maximum-am-resource-percent=0.5",
	"yarn.nodemanager.process-kill-wait.ms=500",
}

// spanOptions are one test's settings of the spanning federation.
type spanOptions struct {
	// homeNMMemoryMB is SC-1's NodeManager memory (0: the launcher's
	// 4096 MB). A spanning test gives the home room for its AM and fewer
	// containers than it asks (homeRoom): SC-1's RM allocates on every
	// NM heartbeat (100 ms) from the AM's first ask, while SC-2 allocates
	// only once the proxy has launched and registered its UAM, seconds
	// later (5.5 s in a cold CI run at load 15). A roomy home can hand out
	// every container first; the distributed shell AM then releases SC-2's,
	// and nothing runs on SC-2 ("roomy home", deploy/DESIGN.md; the split
	// is in TestAMRMProxySpansSubClusters' notes).
	homeNMMemoryMB int
	// secondaryAMRMHold puts SC-2's scheduler port behind a relay that
	// holds every connection until this long after its first one, so
	// SC-2's UAM (the only client of that port) registers that much later:
	// a slow secondary on demand (0: the agent registers the RM's own port).
	secondaryAMRMHold time.Duration
	// proxyArgs are added to each `yarnfed amrmproxy` command line.
	proxyArgs []string
}

// Sizes as the RMs allocate them. The scheduler rounds every ask up to a
// multiple of yarn.scheduler.minimum-allocation-mb (128 in
// MiniCluster.java); each size below already is one, so it is both what the
// tests ask and what the NM gives.
const (
	minAllocMB    = 128
	dsAMMB        = 256 // runDSClient's -master_memory
	dsContainerMB = 128 // runDSClient's -container_memory
	// spanMaxAMShare is spanClusterSettings' maximum-am-resource-percent:
	// an AM is admitted while it fits in that share of the cluster (the
	// home's one NM); a lone AM beyond it runs only by the capacity
	// scheduler's first-AM exception, which the home size must not rely on.
	spanMaxAMShare = 0.5
)

// homeRoom is the home NodeManager memory for one AM of amMB and n
// containers of containerMB beside it, both rounded up to the minimum
// allocation as the scheduler does. It fails the test if the AM would
// need the first-AM exception (amMB above spanMaxAMShare of the node).
func homeRoom(t *testing.T, amMB, n, containerMB int) int {
	t.Helper()
	round := func(mb int) int { return (mb + minAllocMB - 1) / minAllocMB * minAllocMB }
	mb := round(amMB) + n*round(containerMB)
	if float64(round(amMB)) > spanMaxAMShare*float64(mb) {
		t.Fatalf("home NM of %d MB admits AMs up to %.0f MB, not the %d MB AM", mb, spanMaxAMShare*float64(mb), round(amMB))
	}
	return mb
}

// startSpan starts the spanning federation and waits until the router sees
// both sub-clusters; everything stops at cleanup.
func startSpan(t *testing.T, kind amSchedulerKind, o spanOptions) *spanFed {
	t.Helper()
	j := needJava(t)
	f := &spanFed{t: t, j: j, ids: [2]string{spanHome, spanSecondary}, proxyArgs: o.proxyArgs}
	start := time.Now()
	f.yarnfed, f.ctl = yarnfedBinaries(t)
	t.Logf("yarnfed binaries ready in %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	defer func() { t.Logf("span federation up in %s", time.Since(start).Round(time.Millisecond)) }()
	dir, err := os.MkdirTemp("", "yarnfed-e2e-span-")
	if err != nil {
		t.Fatal(err)
	}
	f.dir = dir
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("span federation files kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})

	// The AMs' scheduler addresses are fixed before the clusters start:
	// they are in the clusters' AM-facing yarn-site.xml.
	for i := range f.amrm {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		f.amrm[i], f.amrmHeld[i] = ln.Addr().String(), ln
	}
	var opts []clusterOptions
	for i := range f.clusters {
		opts = append(opts, clusterOptions{
			clusterID: fmt.Sprintf("e2e-span-sc%d", i+1), epoch: spanEpochs[i], nms: 1,
			set: spanClusterSettings,
			amSet: []string{
				"yarn.resourcemanager.scheduler.address=" + f.amrm[i],
				// An AM whose scheduler connection drops (a proxy restart)
				// re-dials after this; Hadoop's 30 s default would only make
				// the restart scenarios slower.
				"yarn.resourcemanager.connect.retry-interval.ms=2000",
				// An AM that ends stops every container it started, also
				// those on a NodeManager that died (TestAMRMProxySecondaryRMDies
				// kills SC-2's): Hadoop's client retries each for 3 min by
				// default before unregistering, longer than the test waits.
				// Same in a single cluster that lost a node.
				"yarn.client.nodemanager-connect.max-wait-ms=5000",
				"yarn.client.nodemanager-connect.retry-interval-ms=1000",
			},
		})
	}
	opts[0].nmMemoryMB = o.homeNMMemoryMB
	copy(f.clusters[:], newClusters(t, opts...))

	grpcAddr, raftAddr, httpAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	f.store = grpcAddr
	st := startProc(t, dir, "statestore", f.yarnfed, "statestore", "--node-id", "ss1",
		"--data-dir", filepath.Join(dir, "statestore"), "--grpc-address", grpcAddr,
		"--raft-address", raftAddr, "--http-address", httpAddr,
		"--bootstrap", "--peers", "ss1="+raftAddr,
		"--heartbeat-timeout", "500ms", "--election-timeout", "500ms",
		"--insecure") // loopback test federation: plaintext, asked for
	waitUntil(t, 30*time.Second, "the state store's leader", st, func() (bool, string) {
		return httpOK("http://" + httpAddr + "/readyz")
	})

	for i, mc := range f.clusters {
		amrm := loopback(mc.info.Scheduler)
		if i == 1 && o.secondaryAMRMHold > 0 {
			f.secondaryHold = startHeldRelay(t, amrm, o.secondaryAMRMHold)
			amrm = f.secondaryHold.ln.Addr().String()
		}
		f.agents[i] = startProc(t, dir, "agent-"+f.ids[i], f.yarnfed, "subcluster-agent",
			"--subcluster-id", f.ids[i], "--store", f.store, "--store-insecure",
			"--rm", fmt.Sprintf("clientrm=%s,amrm=%s,admin=%s,web=%s",
				loopback(mc.info.RM), amrm, loopback(mc.info.Admin), loopback(mc.info.Web)),
			"--probe-interval", "500ms", "--probe-timeout", "2s", "--heartbeat-interval", "2s")
	}
	runCtl(t, f.ctl, "--store", f.store, "policy", "save", "--manager", spanManager, "-s", spanPolicy)

	f.clientRM, f.routerWS = freeAddr(t), freeAddr(t)
	f.router = startProc(t, dir, "router", f.yarnfed, "router", "--store", f.store, "--store-insecure",
		"--clientrm-address", f.clientRM, "--web-address", f.routerWS, "--admin-address", "",
		"--membership-refresh", "200ms", "--call-timeout", "20s")
	wantNodes := f.clusters[0].info.NMs + f.clusters[1].info.NMs
	waitUntil(t, 60*time.Second, "the router to see both sub-clusters", f.router, func() (bool, string) {
		m, err := clusterMetricsAt(f.routerWS)
		if err != nil {
			return false, err.Error()
		}
		return int(m.TotalNodes) == wantNodes, fmt.Sprintf("%d of %d nodes", m.TotalNodes, wantNodes)
	})
	if o.homeNMMemoryMB > 0 {
		// The home's size is what the test is about: check the RM counts
		// exactly that (MiniYARNCluster has an NM memory key of its own,
		// which once made --nm-memory-mb a silent no-op).
		m, err := clusterMetricsAt(loopback(f.clusters[0].info.Web))
		if err != nil {
			t.Fatal(err)
		}
		if m.TotalMB != int64(o.homeNMMemoryMB) {
			t.Fatalf("%s's RM has %d MB of NodeManager memory, want the %d MB asked", spanHome, m.TotalMB, o.homeNMMemoryMB)
		}
	}

	for i, mc := range f.clusters {
		switch kind {
		case withRelay:
			f.relays[i] = startRelayOn(t, f.amrmHeld[i], loopback(mc.info.Scheduler))
		case withAMRMProxy:
			f.proxies[i] = f.startProxy(i)
		}
	}
	// Every test on this federation ends with the shared leak check (issue
	// 19), before the clusters stop (cleanups run last-registered first). A
	// test that already failed gets a short look: the list is the point.
	t.Cleanup(func() {
		timeout := leakCheckTimeout
		if t.Failed() {
			timeout = 5 * time.Second
		}
		checkNoLeaks(t, f.leakTargets(), time.Time{}, timeout)
	})
	return f
}

// startProxy starts the AMRMProxy of cluster i on the address its AMs dial
// and waits for /readyz. The flags are the role's CLI contract.
func (f *spanFed) startProxy(i int) *proc {
	f.t.Helper()
	web := freeAddr(f.t)
	_ = f.amrmHeld[i].Close() // the proxy binds it next
	args := append([]string{"amrmproxy",
		"--store", f.store, "--store-insecure", "--subcluster-id", f.ids[i],
		"--amrm-address", f.amrm[i], "--web-address", web,
		"--data-dir", filepath.Join(f.dir, "amrmproxy-"+f.ids[i])}, f.proxyArgs...)
	p := startProc(f.t, f.dir, "amrmproxy-"+f.ids[i], f.yarnfed, args...)
	f.waitProxyReady(p, web)
	return p
}

func (f *spanFed) waitProxyReady(p *proc, web string) {
	f.t.Helper()
	waitUntil(f.t, 30*time.Second, p.Name+" ready", p, func() (bool, string) {
		return httpOK("http://" + web + "/readyz")
	})
}

// proxyWeb is the --web-address a proxy was started with.
func proxyWeb(p *proc) string {
	for i, a := range p.Args {
		if a == "--web-address" && i+1 < len(p.Args) {
			return p.Args[i+1]
		}
	}
	return ""
}

// needAMRMProxy skips the test (with the reason) while the yarnfed binary
// has no amrmproxy role; under YARNFED_INTEROP_REQUIRED=1 that is a
// failure, so CI cannot pass by not running the spanning scenarios.
func needAMRMProxy(t *testing.T) {
	t.Helper()
	needJava(t)
	yarnfed, _ := yarnfedBinaries(t)
	out, err := exec.Command(yarnfed, "amrmproxy", "--help").CombinedOutput()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("interop: `yarnfed amrmproxy --help` fails (%v: %s): the AMRMProxy role is not in this build",
		err, strings.TrimSpace(tail(string(out), 300)))
	if os.Getenv(requiredEnv) != "" {
		t.Fatalf("%s (and %s is set)", msg, requiredEnv)
	}
	t.Skip(msg)
}

// ---- distributed shell ----

// dsRun is one distributed-shell application submitted through the router.
type dsRun struct {
	name   string // -appname, unique per run
	marker string // printed by every shell container
	// startMarker: each container also prints startedMarker() and its id
	// before sleeping, so a container is known to run before it ends.
	startMarker bool
	// timed: each container prints "<marker>-started <id>" and then the
	// time (date +%s%N, its own line: evaluated when it runs), sleeps in
	// the background, and on SIGTERM (the NM stopping it: a kill, a release)
	// prints "<marker>-ended <id>" and the time before exiting 143; a
	// container that sleeps to the end prints "<marker> <id>" as usual.
	timed bool
}

// command is each shell container's script. The evidence it leaves is the
// marker, then the container id the NodeManager gave it (its epoch names
// the sub-cluster), printed when the container ends successfully.
func (d dsRun) command(sleep int) string {
	if d.timed {
		return fmt.Sprintf("{ echo %s $CONTAINER_ID; date +%%s%%N; trap 'echo %s $CONTAINER_ID; date +%%s%%N; exit 143' TERM; sleep %d & wait; echo %s $CONTAINER_ID; }",
			d.startedMarker(), d.endedMarker(), sleep, d.marker)
	}
	cmd := "echo " + d.marker + " $CONTAINER_ID"
	if sleep > 0 {
		cmd = fmt.Sprintf("sleep %d; %s", sleep, cmd)
	}
	if d.startMarker {
		// Grouped: distributed shell appends the stdout redirection to the
		// command line, which would otherwise bind to the last command only.
		cmd = "{ echo " + d.startedMarker() + " $CONTAINER_ID; " + cmd + "; }"
	}
	return cmd
}

// startedMarker is printed by a container when it starts (startMarker).
func (d dsRun) startedMarker() string { return d.marker + "-started" }

// endedMarker is printed by a timed container stopped by a signal.
func (d dsRun) endedMarker() string { return d.marker + "-ended" }

// runDS runs Hadoop's distributed shell client through the router (its AM
// classpath: the NM's $HADOOP_CONF_DIR, i.e. the AM-facing yarn-site.xml,
// then the Maven jars) and returns when the client exits. Safe to call
// from any goroutine.
func (f *spanFed) runDS(d dsRun, containers, sleep int) (cliRun, error) {
	return runDSClient(f.j, f.dir, f.clientRM, d, containers, sleep)
}

// runDSClient runs the distributed shell client against the ApplicationClientProtocol
// address clientRM (a router), its conf dir under dir; extra are more client
// flags (e.g. -keep_containers_across_application_attempts).
func runDSClient(j *javaEnv, dir, clientRM string, d dsRun, containers, sleep int, extra ...string) (cliRun, error) {
	entries := strings.Split(j.classpath, string(os.PathListSeparator))
	var dsJar string
	for _, e := range entries {
		if strings.Contains(filepath.Base(e), "distributedshell") {
			dsJar = e
		}
	}
	if dsJar == "" {
		return cliRun{}, fmt.Errorf("no distributedshell jar on the classpath")
	}
	confDir, err := writeConfDir(dir, "ds-"+d.name, map[string]map[string]string{"yarn-site.xml": {
		"yarn.resourcemanager.address": clientRM,
		"yarn.application.classpath":   "$HADOOP_CONF_DIR," + strings.Join(entries, ","),
	}})
	if err != nil {
		return cliRun{}, err
	}
	args := append([]string{"-jar", dsJar, "-appname", d.name, "-queue", "default", "-shell_command", d.command(sleep),
		"-num_containers", fmt.Sprint(containers), "-container_memory", "128", "-master_memory", "256",
		"-timeout", "240000"}, extra...)
	return j.execCLI(cliOptions{jvmFlags: []string{"-Dyarnfed.e2e.log=INFO"}, timeout: 5 * time.Minute}, confDir,
		"org.apache.hadoop.yarn.applications.distributedshell.Client", args...)
}

// containerEvidence maps each container that printed marker to the
// sub-cluster whose NodeManager ran it (whose directory holds its stdout).
func (f *spanFed) containerEvidence(marker string) map[string]string {
	out := map[string]string{}
	for i, mc := range f.clusters {
		for _, id := range printedUnder(mc.dir, marker) {
			out[id] = f.ids[i]
		}
	}
	return out
}

// startedContainer is a timed container's start (dsRun.timed).
type startedContainer struct {
	id string
	sc string // the sub-cluster whose NodeManager ran it
	at time.Time
}

// startTimes lists the containers that printed startedMarker (a timed
// run's "<marker>-started <id>" line, then the time in ns), by start time.
func (f *spanFed) startTimes(startedMarker string) []startedContainer {
	var out []startedContainer
	for i, mc := range f.clusters {
		_ = filepath.WalkDir(mc.dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "stdout" {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			lines := strings.Split(string(b), "\n")
			for j, line := range lines {
				if fs := strings.Fields(line); len(fs) == 2 && fs[0] == startedMarker && j+1 < len(lines) {
					if ns, err := strconv.ParseInt(strings.TrimSpace(lines[j+1]), 10, 64); err == nil {
						out = append(out, startedContainer{id: fs[1], sc: f.ids[i], at: time.Unix(0, ns)})
					}
				}
			}
			return nil
		})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].at.Before(out[b].at) })
	return out
}

// printedUnder lists what follows marker on the lines "<marker> <word>"
// that containers printed to a stdout file anywhere under dir (a
// NodeManager's log directory): the distributed shell's evidence of which
// containers ran, and where.
func printedUnder(dir, marker string) []string {
	var words []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "stdout" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, line := range strings.Split(string(b), "\n") {
			if fs := strings.Fields(line); len(fs) == 2 && fs[0] == marker {
				words = append(words, fs[1])
			}
		}
		return nil
	})
	return words
}

var containerEpochRE = regexp.MustCompile(`^container_e(\d+)_`)

// checkEvidence checks that n containers printed the marker, that each ran
// on the sub-cluster its id's epoch names, and returns the count per
// sub-cluster.
func (f *spanFed) checkEvidence(t *testing.T, marker string, n int) map[string]int {
	t.Helper()
	ev := f.containerEvidence(marker)
	per := map[string]int{}
	for c, sc := range ev {
		per[sc]++
		m := containerEpochRE.FindStringSubmatch(c)
		want := spanEpochs[0]
		if sc == spanSecondary {
			want = spanEpochs[1]
		}
		if m == nil || m[1] != fmt.Sprintf("%02d", want) {
			t.Errorf("container %s ran on %s, whose RM epoch is %d", c, sc, want)
		}
	}
	if len(ev) != n {
		t.Errorf("%d containers printed %s (%v), want %d", len(ev), marker, sortedKeys(ev), n)
	}
	return per
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// ---- RM state through REST ----

// tryRESTAt GETs path as JSON from addr, reporting whether it answered 200.
func tryRESTAt(addr, path string) ([]byte, bool) {
	resp, err := shortHTTP.Get("http://" + addr + path)
	if err != nil {
		return []byte(err.Error()), false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return b, err == nil && resp.StatusCode == 200
}

// rmApps lists the applications an RM knows (all states).
func rmApps(mc *miniCluster) ([]rmrest.App, error) {
	return appsAt(loopback(mc.info.Web))
}

// rmApp returns the RM's record of the application named name, if any.
func rmApp(mc *miniCluster, name string) (rmrest.App, bool, error) {
	apps, err := rmApps(mc)
	return appWhere(apps, err, func(a rmrest.App) bool { return a.Name == name })
}

// rmAppByID returns the RM's record of application id, if any.
func rmAppByID(mc *miniCluster, id string) (rmrest.App, bool, error) {
	apps, err := rmApps(mc)
	return appWhere(apps, err, func(a rmrest.App) bool { return a.ID == id })
}

// waitQuiet waits until no RM of the federation has a live container or a
// live (NEW..RUNNING) application: nothing the test started leaked, UAMs
// included.
func (f *spanFed) waitQuiet(t *testing.T, clusters ...*miniCluster) {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("RMs quiet after %s", time.Since(start).Round(time.Millisecond)) }()
	waitUntil(t, 60*time.Second, "no live containers or applications on any RM", nil, func() (bool, string) {
		for _, mc := range clusters {
			m, err := clusterMetricsAt(loopback(mc.info.Web))
			if err != nil {
				return false, err.Error()
			}
			if m.ContainersAllocated != 0 {
				return false, fmt.Sprintf("%s: %d containers allocated", mc.info.ClusterID, m.ContainersAllocated)
			}
			apps, err := rmApps(mc)
			if err != nil {
				return false, err.Error()
			}
			for _, a := range apps {
				switch a.State {
				case "FINISHED", "FAILED", "KILLED":
				default:
					return false, fmt.Sprintf("%s: %s (%s) is %s", mc.info.ClusterID, a.ID, a.Name, a.State)
				}
			}
		}
		return true, ""
	})
}

// ---- MapReduce ----

// runPi runs hadoop-mapreduce-examples' `pi` (QuasiMonteCarlo, maps x
// samples) on file:/// through the router. The job's own configuration
// names a scheduler address nobody serves: the AM must take the AM-facing
// one of the NodeManager it runs on (final there), not the client's.
func (f *spanFed) runPi(name string, maps, samples int) (cliRun, error) {
	return runPiClient(f.j, f.dir, f.clientRM, name, maps, samples, nil)
}

// runPiClient runs `pi` against the ApplicationClientProtocol address
// clientRM (a router), its files under dir; mapred are extra
// mapred-site.xml settings.
func runPiClient(j *javaEnv, dir, clientRM, name string, maps, samples int, mapred map[string]string) (cliRun, error) {
	entries := strings.Split(j.classpath, string(os.PathListSeparator))
	cp := strings.Join(entries, ",")
	work := filepath.Join(dir, "mr-"+name)
	if err := os.MkdirAll(work, 0o755); err != nil {
		return cliRun{}, err
	}
	// Java 17 needs the same --add-opens in the MR AM and tasks as here.
	opts := strings.Join(j.jvmArgs, " ")
	mapredSite := map[string]string{
		"mapreduce.framework.name":          "yarn",
		"mapreduce.job.queuename":           "default",
		"mapreduce.application.classpath":   cp,
		"yarn.app.mapreduce.am.staging-dir": filepath.Join(work, "staging"),
		// No job history server: the client takes the final state from
		// the RM's report instead of retrying a dead address.
		"mapreduce.jobhistory.address":                 "",
		"yarn.app.mapreduce.am.resource.mb":            "512",
		"yarn.app.mapreduce.am.command-opts":           "-Xmx384m " + opts,
		"mapreduce.map.memory.mb":                      "256",
		"mapreduce.reduce.memory.mb":                   "256",
		"mapreduce.map.java.opts":                      "-Xmx192m " + opts,
		"mapreduce.reduce.java.opts":                   "-Xmx192m " + opts,
		"mapreduce.job.ubertask.enable":                "false",
		"mapreduce.job.reduce.slowstart.completedmaps": "1.0",
	}
	for k, v := range mapred {
		mapredSite[k] = v
	}
	confDir, err := writeConfDir(dir, "mr-conf-"+name, map[string]map[string]string{
		"yarn-site.xml": {
			"yarn.resourcemanager.address": clientRM,
			// Not served by anyone: proves the AM ignores the client's value.
			"yarn.resourcemanager.scheduler.address": "127.0.0.1:1",
			"yarn.application.classpath":             "$HADOOP_CONF_DIR," + cp,
		},
		"mapred-site.xml": mapredSite,
		"core-site.xml":   {"fs.defaultFS": "file:///"},
	})
	if err != nil {
		return cliRun{}, err
	}
	// INFO logging: the client logs the application id it submitted.
	return j.execCLI(cliOptions{jvmFlags: []string{"-Dyarnfed.e2e.log=INFO"}, dir: work, timeout: 5 * time.Minute}, confDir,
		"org.apache.hadoop.examples.QuasiMonteCarlo", fmt.Sprint(maps), fmt.Sprint(samples))
}

// writeConfDir writes Hadoop configuration files into a new directory under
// parent and returns it (the first classpath entry of a CLI).
func writeConfDir(parent, name string, files map[string]map[string]string) (string, error) {
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for file, props := range files {
		var b strings.Builder
		b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
		for _, k := range sortedKeys(props) {
			fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", k, xmlEscape(props[k]))
		}
		b.WriteString("</configuration>\n")
		if err := os.WriteFile(filepath.Join(dir, file), []byte(b.String()), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// ---- tcpRelayFake ----

// tcpRelayFake stands where an AMRMProxy would (the AMs' scheduler address)
// and copies bytes both ways to one RM's real scheduler port. It proves the
// harness's plumbing (the AMs dial the AM-facing address; their SASL
// DIGEST-MD5 exchange survives a relay) without any proxy logic: a fake,
// for tests only.
type tcpRelayFake struct {
	ln     net.Listener
	target string
	conns  atomic.Int64
	up     atomic.Int64 // bytes AM -> RM
	down   atomic.Int64 // bytes RM -> AM
	wg     sync.WaitGroup
	mu     sync.Mutex
	open   map[net.Conn]struct{}
	// hold, when set, delays every connection until hold after the first
	// one was accepted (startHeldRelay); heldUntil is that time.
	hold      time.Duration
	heldUntil time.Time // guarded by mu
	done      chan struct{}
	closeOnce sync.Once
}

func startRelay(t testing.TB, addr, target string) *tcpRelayFake {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("relay on %s: %v", addr, err)
	}
	return startRelayOn(t, ln, target)
}

// startRelayOn relays connections accepted on ln to target.
func startRelayOn(t testing.TB, ln net.Listener, target string) *tcpRelayFake {
	t.Helper()
	return startRelayHolding(t, ln, target, 0)
}

// startHeldRelay relays a new loopback port to target, holding every
// connection (accepted, nothing read or sent) until hold after the first
// one: a peer that answers late, e.g. a secondary RM whose scheduler port
// is slow to take a UAM's register.
func startHeldRelay(t testing.TB, target string, hold time.Duration) *tcpRelayFake {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startRelayHolding(t, ln, target, hold)
}

func startRelayHolding(t testing.TB, ln net.Listener, target string, hold time.Duration) *tcpRelayFake {
	t.Helper()
	r := &tcpRelayFake{ln: ln, target: target, open: map[net.Conn]struct{}{}, hold: hold, done: make(chan struct{})}
	r.wg.Add(1)
	go r.serve()
	t.Cleanup(r.close)
	return r
}

// heldSince is when the relay accepted its first connection (zero: none
// yet, or no hold).
func (r *tcpRelayFake) heldSince() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.heldUntil.IsZero() {
		return time.Time{}
	}
	return r.heldUntil.Add(-r.hold)
}

// waitHold blocks until the relay's hold has passed (or it closes).
func (r *tcpRelayFake) waitHold() bool {
	if r.hold <= 0 {
		return true
	}
	r.mu.Lock()
	if r.heldUntil.IsZero() {
		r.heldUntil = time.Now().Add(r.hold)
	}
	until := r.heldUntil
	r.mu.Unlock()
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.done:
		return false
	}
}

func (r *tcpRelayFake) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.conns.Add(1)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer c.Close()
			r.track(c)
			defer r.untrack(c)
			if !r.waitHold() {
				return
			}
			up, err := net.DialTimeout("tcp", r.target, 5*time.Second)
			if err != nil {
				return
			}
			defer up.Close()
			r.track(c, up)
			var copies sync.WaitGroup
			copies.Add(2)
			pipe := func(dst, src net.Conn, n *atomic.Int64) {
				defer copies.Done()
				_, _ = io.Copy(countingWriter{dst, n}, src)
				// Either side closing ends the relayed connection.
				_ = dst.Close()
				_ = src.Close()
			}
			go pipe(up, c, &r.up)
			go pipe(c, up, &r.down)
			copies.Wait()
			r.untrack(c, up)
		}()
	}
}

// countingWriter counts the bytes relayed so far (read while connections
// are still open).
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (r *tcpRelayFake) track(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		r.open[c] = struct{}{}
	}
}

func (r *tcpRelayFake) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		delete(r.open, c)
	}
}

func (r *tcpRelayFake) close() {
	r.closeOnce.Do(func() { close(r.done) })
	_ = r.ln.Close()
	r.mu.Lock()
	for c := range r.open {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *tcpRelayFake) String() string {
	return fmt.Sprintf("%d connections, %d bytes up, %d down", r.conns.Load(), r.up.Load(), r.down.Load())
}
