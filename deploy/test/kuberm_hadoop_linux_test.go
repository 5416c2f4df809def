package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
	"github.com/yarnfed/yarnfed/internal/proctest"
	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// A standalone Hadoop sub-cluster beside kuberm on the node, as the
// spanning and bench scenarios run one: Hadoop 3.4's own ResourceManager
// and one NodeManager, each a JVM of its main class with its own conf dir
// and directories, run as processes of the node's network namespace bound
// on the node IP at ports of the scenario's own (kuberm has Hadoop's
// defaults there).

// hadoopAddrs are a standalone RM's and NodeManager's addresses.
type hadoopAddrs struct {
	rmClient, rmScheduler, rmTracker, rmAdmin, rmWeb string
	nmAddr, nmLocalizer, nmWeb                       string
}

// hadoopAddrsAt is the node IP with Hadoop's usual ports (8032, 8030, 8031,
// 8033, 8088; the NodeManager's 8041, 8040, 8042) plus offset.
func hadoopAddrsAt(offset int) hadoopAddrs {
	at := func(port int) string { return net.JoinHostPort(kubenode.NodeIP, strconv.Itoa(offset+port)) }
	return hadoopAddrs{rmClient: at(8032), rmScheduler: at(8030), rmTracker: at(8031), rmAdmin: at(8033), rmWeb: at(8088),
		nmAddr: at(8041), nmLocalizer: at(8040), nmWeb: at(8042)}
}

// standaloneHadoopOptions is what differs between the scenarios' Hadoops.
type standaloneHadoopOptions struct {
	// name prefixes the processes' names (<name>-rm, <name>-nm).
	name      string
	addrs     hadoopAddrs
	clusterID string
	// minAllocationMB is the scheduler's smallest container.
	minAllocationMB int
	// nmMemoryMB is the NodeManager's memory (it has 4 vcores).
	nmMemoryMB     int
	rmHeap, nmHeap string // -Xmx
	// epoch, when not 0, is the RM's epoch, with recovery on and a file
	// state store under the RM's directory: the epoch is in the container
	// ids only then.
	epoch int
	// amScheduler, when set, is the scheduler address in the NodeManager's
	// conf dir, its containers' HADOOP_CONF_DIR, final (a job's own
	// configuration cannot point its AM elsewhere): the AMs of this host
	// dial it (an AMRMProxy), retrying every second. Unset, it is the RM's.
	amScheduler string
	// javaContainers: the NodeManager's containers run JVMs (an AM) of the
	// node's network namespace, which must resolve names from the hosts
	// file as the daemons do: the NodeManager gets JAVA_TOOL_OPTIONS naming
	// it, and its env whitelist passes that on.
	javaContainers bool
	// hostsFile is the JVMs' jdk.net.hosts.file (javaHostsFile, or a file
	// of the scenario's own).
	hostsFile string
	// classpath follows the conf dir on each daemon's classpath.
	classpath []string
	// rmProps, nmProps and capacityProps add to (or replace) the RM's and
	// the NodeManager's yarn-site.xml and capacity-scheduler.xml.
	rmProps, nmProps, capacityProps map[string]string
}

// standaloneHadoopDirs are the conf dirs and the NodeManager's directories,
// all under the directory the confs were written to.
type standaloneHadoopDirs struct {
	rmConf, nmConf, nmLogs, nmLocal string
}

// hadoopDaemonLog4j: the daemons' (and, from the NodeManager's conf dir,
// their containers') log: INFO to stderr.
const hadoopDaemonLog4j = `log4j.rootLogger=INFO, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%d{ISO8601} %p [%t] %c{1}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.eclipse.jetty=WARN
log4j.logger.com.sun.jersey=WARN
`

// writeConfs writes the RM's and the NodeManager's conf dirs under dir.
// Every directory either daemon writes is its own, under dir/rm or dir/nm
// (hadoop.tmp.dir, the RM state store, the node-attribute store, whose
// default is one machine-wide /tmp path: two RMs of one machine kill each
// other's start, e2e's TestStandaloneRMConfsShareNoDirectory);
// TestSpanHadoopConf checks it.
func (o standaloneHadoopOptions) writeConfs(t *testing.T, dir string) standaloneHadoopDirs {
	t.Helper()
	rmDir, nmDir := filepath.Join(dir, "rm"), filepath.Join(dir, "nm")
	d := standaloneHadoopDirs{rmConf: filepath.Join(rmDir, "conf"), nmConf: filepath.Join(nmDir, "conf"),
		nmLogs: filepath.Join(nmDir, "logs"), nmLocal: filepath.Join(nmDir, "local")}
	for _, p := range []string{d.rmConf, d.nmConf, d.nmLogs, d.nmLocal} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	common := map[string]string{
		"yarn.resourcemanager.hostname":                 kubenode.NodeIP,
		"yarn.resourcemanager.address":                  o.addrs.rmClient,
		"yarn.resourcemanager.scheduler.address":        o.addrs.rmScheduler,
		"yarn.resourcemanager.resource-tracker.address": o.addrs.rmTracker,
		"yarn.resourcemanager.admin.address":            o.addrs.rmAdmin,
		"yarn.resourcemanager.webapp.address":           o.addrs.rmWeb,
		"yarn.timeline-service.enabled":                 "false",
	}

	rm := maps.Clone(common)
	maps.Copy(rm, map[string]string{
		"yarn.resourcemanager.cluster-id":                       o.clusterID,
		"yarn.resourcemanager.system-metrics-publisher.enabled": "false",
		"yarn.scheduler.minimum-allocation-mb":                  strconv.Itoa(o.minAllocationMB),
		"hadoop.tmp.dir":                                        filepath.Join(rmDir, "tmp"),
		"yarn.node-attribute.fs-store.root-dir":                 filepath.Join(rmDir, "node-attribute"),
	})
	if o.epoch != 0 {
		maps.Copy(rm, map[string]string{
			"yarn.resourcemanager.recovery.enabled":   "true",
			"yarn.resourcemanager.store.class":        "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore",
			"yarn.resourcemanager.fs.state-store.uri": "file://" + filepath.Join(rmDir, "rmstore"),
			"yarn.resourcemanager.epoch":              strconv.Itoa(o.epoch),
		})
	}
	maps.Copy(rm, o.rmProps)
	writeHadoopXML(t, filepath.Join(d.rmConf, "yarn-site.xml"), rm, nil)
	capacity := map[string]string{
		"yarn.scheduler.capacity.root.queues":                   "default",
		"yarn.scheduler.capacity.root.default.capacity":         "100",
		"yarn.scheduler.capacity.root.default.maximum-capacity": "100",
	}
	maps.Copy(capacity, o.capacityProps)
	writeHadoopXML(t, filepath.Join(d.rmConf, "capacity-scheduler.xml"), capacity, nil)

	nm := maps.Clone(common)
	maps.Copy(nm, map[string]string{
		"yarn.nodemanager.address":                                                      o.addrs.nmAddr,
		"yarn.nodemanager.localizer.address":                                            o.addrs.nmLocalizer,
		"yarn.nodemanager.webapp.address":                                               o.addrs.nmWeb,
		"yarn.nodemanager.local-dirs":                                                   d.nmLocal,
		"yarn.nodemanager.log-dirs":                                                     d.nmLogs,
		"yarn.nodemanager.resource.memory-mb":                                           strconv.Itoa(o.nmMemoryMB),
		"yarn.nodemanager.resource.cpu-vcores":                                          "4",
		"yarn.nodemanager.pmem-check-enabled":                                           "false",
		"yarn.nodemanager.vmem-check-enabled":                                           "false",
		"yarn.nodemanager.container-executor.class":                                     "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor",
		"yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "99",
		"hadoop.tmp.dir":                                                                filepath.Join(nmDir, "tmp"),
	})
	if o.javaContainers {
		nm["yarn.nodemanager.env-whitelist"] = "JAVA_HOME,HADOOP_CONF_DIR,JAVA_TOOL_OPTIONS,PATH,LANG,TZ"
	}
	final := map[string]bool{}
	if o.amScheduler != "" {
		nm["yarn.resourcemanager.scheduler.address"] = o.amScheduler
		nm["yarn.resourcemanager.connect.retry-interval.ms"] = "1000"
		final["yarn.resourcemanager.scheduler.address"] = true
		final["yarn.resourcemanager.connect.retry-interval.ms"] = true
	}
	maps.Copy(nm, o.nmProps)
	writeHadoopXML(t, filepath.Join(d.nmConf, "yarn-site.xml"), nm, final)
	writeHadoopXML(t, filepath.Join(d.nmConf, "core-site.xml"), map[string]string{"fs.defaultFS": "file:///"}, nil)
	for _, c := range []string{d.rmConf, d.nmConf} {
		if err := os.WriteFile(filepath.Join(c, "log4j.properties"), []byte(hadoopDaemonLog4j), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// writeHadoopXML writes a Hadoop XML configuration file, keys sorted; keys
// in final are <final>true</final>.
func writeHadoopXML(t *testing.T, path string, props map[string]string, final map[string]bool) {
	t.Helper()
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for _, k := range keys {
		fin := ""
		if final[k] {
			fin = "<final>true</final>"
		}
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value>%s</property>\n", k, props[k], fin)
	}
	b.WriteString("</configuration>\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// standaloneHadoop is a running standalone RM + NodeManager.
type standaloneHadoop struct {
	o      standaloneHadoopOptions
	dirs   standaloneHadoopDirs
	rm, nm *nodeProcess
	web    *http.Client // through the node's network namespace
}

// startStandaloneHadoop writes the conf dirs under dir (writeConfs) and
// starts both JVMs in the node's network namespace, each with JAVA_HOME and
// HADOOP_CONF_DIR set (the NodeManager passes both to its containers). The
// NodeManager's containers run in sessions of their own: whatever is left
// when the test ends is killed (after the NodeManager's stop, which
// cleanups run first).
func startStandaloneHadoop(t *testing.T, c *kubenode.Cluster, javaHome, dir string, o standaloneHadoopOptions) *standaloneHadoop {
	t.Helper()
	if o.hostsFile == "" {
		t.Fatal("no hosts file for the JVMs in the node's network namespace")
	}
	h := &standaloneHadoop{o: o, dirs: o.writeConfs(t, dir),
		web: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: c.DialContext, DisableKeepAlives: true}}}
	var jvmOpts []string
	for _, opt := range javaOptions() {
		if !strings.HasPrefix(opt, "-Djdk.net.hosts.file=") {
			jvmOpts = append(jvmOpts, opt)
		}
	}
	jvmOpts = append(jvmOpts, "-Djdk.net.hosts.file="+o.hostsFile)
	daemon := func(role, conf, heap, class string, env ...string) *nodeProcess {
		argv := append([]string{"JAVA_HOME=" + javaHome, "HADOOP_CONF_DIR=" + conf}, env...)
		argv = append(append(argv, filepath.Join(javaHome, "bin", "java")), jvmOpts...)
		cp := strings.Join(append([]string{conf}, o.classpath...), string(os.PathListSeparator))
		argv = append(argv, "-Xmx"+heap, "-cp", cp, class)
		return startNodeProcess(t, c, o.name+"-"+role, "/usr/bin/env", argv...)
	}
	h.rm = daemon("rm", h.dirs.rmConf, o.rmHeap, "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager")
	var nmEnv []string
	if o.javaContainers {
		nmEnv = append(nmEnv, "JAVA_TOOL_OPTIONS=-Djdk.net.hosts.file="+o.hostsFile+" -Djava.net.preferIPv4Stack=true")
	}
	h.nm = daemon("nm", h.dirs.nmConf, o.nmHeap, "org.apache.hadoop.yarn.server.nodemanager.NodeManager", nmEnv...)
	t.Cleanup(func() {
		for id, pid := range proctest.NMContainerPids(h.dirs.nmLocal) {
			t.Logf("killing container %s left running (pid %d)", id, pid)
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	return h
}

// mustRun fails the test if the RM, the NodeManager or one of others exited.
func (h *standaloneHadoop) mustRun(t *testing.T, others ...*nodeProcess) {
	t.Helper()
	for _, p := range append([]*nodeProcess{h.rm, h.nm}, others...) {
		if p != nil && p.exited() {
			t.Fatalf("%s exited (%v):\n%s", p.name, p.err, p.tail(8000))
		}
	}
}

// get GETs path from a daemon's web address and decodes its JSON into v.
func (h *standaloneHadoop) get(ctx context.Context, addr, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := h.web.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s%s: %s %s", addr, path, resp.Status, tail(string(b), 300))
	}
	return json.Unmarshal(b, v)
}

// waitReady waits until the RM lists a NodeManager RUNNING: the one of
// nodeID, or any if nodeID is empty; it fails the test if the RM, the
// NodeManager or one of others exits first.
func (h *standaloneHadoop) waitReady(ctx context.Context, t *testing.T, nodeID string, others ...*nodeProcess) {
	t.Helper()
	begin := time.Now()
	waitFor(ctx, t, h.o.name+"'s RM with its NodeManager RUNNING", func() (bool, string) {
		h.mustRun(t, others...)
		var nodes rmrest.NodesResponse
		if err := h.get(ctx, h.o.addrs.rmWeb, "/ws/v1/cluster/nodes", &nodes); err != nil {
			return false, err.Error()
		}
		for _, n := range nodes.Nodes.Node {
			if n.State == "RUNNING" && (nodeID == "" || n.ID == nodeID) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("nodes %+v", nodes.Nodes.Node)
	})
	t.Logf("%s's RM + NodeManager ready after %v", h.o.name, time.Since(begin).Round(time.Millisecond))
}

// nmLeft lists what the NodeManager still runs: containers its REST API
// lists in a state that is not over, and live container processes
// (proctest.NMContainerPids).
func (h *standaloneHadoop) nmLeft(ctx context.Context) []string {
	var left []string
	var cs struct {
		Containers struct {
			Container []struct {
				ID    string `json:"id"`
				State string `json:"state"`
			} `json:"container"`
		} `json:"containers"`
	}
	if err := h.get(ctx, h.o.addrs.nmWeb, "/ws/v1/node/containers", &cs); err != nil {
		left = append(left, err.Error())
	}
	for _, c := range cs.Containers.Container {
		switch c.State {
		case "DONE", "EXITED_WITH_SUCCESS", "EXITED_WITH_FAILURE", "CONTAINER_CLEANEDUP_AFTER_KILL",
			"CONTAINER_RESOURCES_CLEANINGUP", "LOCALIZATION_FAILED", "COMPLETE":
		default:
			left = append(left, fmt.Sprintf("NodeManager container %s is %s", c.ID, c.State))
		}
	}
	if pids := proctest.NMContainerPids(h.dirs.nmLocal); len(pids) > 0 {
		left = append(left, fmt.Sprintf("container processes still running: %v", pids))
	}
	return left
}

// waitNothingLeft polls left every 500 ms until it lists nothing (true) or
// timeout passes or ctx ends: then the test fails with what and left's last
// list (false).
func waitNothingLeft(ctx context.Context, t *testing.T, timeout time.Duration, what string, left func() []string) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l := left()
		if len(l) == 0 {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Errorf("%s: %s", what, strings.Join(l, "; "))
			return false
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}
