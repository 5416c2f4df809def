package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/security"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// TestFederationInOneNodeCluster applies deploy/'s overlay for real to the
// one-node cluster (kubelet, containerd, the image make image built) and
// runs the operator's scenarios against the pods. One cluster for all of
// them (a start costs ~30 s); each subtest leaves the federation healthy
// for the next, and every subtest that submits applications ends by
// checking the RMs against the router's records.
func TestFederationInOneNodeCluster(t *testing.T) {
	archive := makeFedImage(t)
	// Before Start: its cleanup (the PVs' and AMRMProxy's directories)
	// runs after the cluster's teardown.
	hostDir := t.TempDir()
	c := kubenode.Start(t, kubenode.Options{Images: []string{archive}})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	ts := time.Now().UnixMilli()
	a := installFederation(ctx, t, c, fedOptions{namespace: "fed-a", subClusters: []string{"SC-1", "SC-2"},
		amrmproxyOnNode: true, clusterTimestamp: ts, hostDir: hostDir})

	t.Run("StoreFormsRaftInPods", func(t *testing.T) {
		a.t = t
		leader := a.waitStoreHealthy(ctx, "")
		t.Logf("fed-a: store leader %s, three voters", leader)
	})
	t.Run("AgentsRegisterSimRMs", func(t *testing.T) {
		a.t = t
		a.waitSubClusters(ctx, a.opts.subClusters)
	})
	yc := a.yarnClient(ctx)
	t.Run("RouterServesOutsideClient", func(t *testing.T) {
		a.t = t
		ids := a.submitN(ctx, yc, 20)
		a.checkRMs(ctx)
		t.Logf("fed-a: 20 applications submitted from outside the cluster through Service yarnfed-router: %v", a.placement(ctx, ids))
	})
	t.Run("HadoopYarnClientThroughService", func(t *testing.T) {
		a.t = t
		a.hadoopClient(ctx)
	})
	t.Run("GPGReadsTheNode", func(t *testing.T) {
		a.t = t
		a.checkGPG(ctx)
	})
	t.Run("AMRMProxyDaemonSetReady", func(t *testing.T) {
		a.t = t
		a.checkAMRMProxy(ctx)
	})
	t.Run("StoreLeaderPodDeleted", func(t *testing.T) {
		a.t = t
		a.leaderPodDeleted(ctx, yc)
	})
	t.Run("StoreLeaderProcessKilled", func(t *testing.T) {
		a.t = t
		a.leaderProcessKilled(ctx, yc)
	})
	t.Run("RouterRolloutUnderSubmissions", func(t *testing.T) {
		a.t = t
		a.routerRollout(ctx, yc)
	})
	t.Run("EvictionHonoursStorePDB", func(t *testing.T) {
		a.t = t
		a.evictStore(ctx, yc)
	})
	t.Run("SecondFederation", func(t *testing.T) {
		a.t = t
		b := installFederation(ctx, t, c, fedOptions{namespace: "fed-b", subClusters: []string{"SC-1", "SC-3"},
			clusterTimestamp: ts + 100, hostDir: hostDir})
		twoFederations(ctx, t, a, b, yc)
	})
	a.t = t
}

// ---- the store ----

// storeClient is an admin client (README's `ops` certificate) of the
// replicas at addrs, dialled through the cluster's network namespace.
func (f *federation) storeClient(addrs ...string) *client.Client {
	return storeClientWith(f.t, f.c, f.pki, addrs...)
}

func storeClientWith(t *testing.T, c *kubenode.Cluster, pki string, addrs ...string) *client.Client {
	t.Helper()
	tlsCfg, err := security.ClientFlags{TLS: security.TLSInfo{
		CertFile: filepath.Join(pki, "ops", "cert.crt"), KeyFile: filepath.Join(pki, "ops", "cert.key"), CAFile: filepath.Join(pki, "ops", "ca.crt"),
	}}.TLSConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(client.Config{
		Addrs: addrs,
		DialOptions: []grpc.DialOption{
			grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return c.DialContext(ctx, "tcp", addr) }),
		},
		DisableCache: true, DisableBatching: true,
		CallTimeout: 3 * time.Second, RetryTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

const storePodName = "yarnfed-statestore"

// storeView asks every running replica for its status. Healthy: three
// replicas answer, all name the same leader (one of them, and not
// notLeader), and each lists exactly the three pods as voters, one leader.
func (f *federation) storeView(ctx context.Context, notLeader string) (string, bool, string) {
	pods := f.pods(ctx, storePodName)
	if len(pods) != 3 {
		return "", false, fmt.Sprintf("%d store pods running", len(pods))
	}
	names := map[string]bool{}
	for _, p := range pods {
		names[p.Name] = true
	}
	leader := ""
	for _, p := range pods {
		cl := f.storeClient(net.JoinHostPort(p.Status.PodIP, "9090"))
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		st, err := cl.Status(cctx)
		cancel()
		cl.Close()
		if err != nil {
			return "", false, fmt.Sprintf("%s: status: %v", p.Name, err)
		}
		if st.GetLeaderId() == "" || st.GetLeaderId() == notLeader || !names[st.GetLeaderId()] {
			return "", false, fmt.Sprintf("%s names leader %q", p.Name, st.GetLeaderId())
		}
		if leader != "" && st.GetLeaderId() != leader {
			return "", false, fmt.Sprintf("replicas disagree on the leader: %s and %s", leader, st.GetLeaderId())
		}
		leader = st.GetLeaderId()
		voters, leaders := 0, 0
		for _, n := range st.GetNodes() {
			if n.GetVoter() && names[n.GetNodeId()] {
				voters++
			}
			if n.GetLeader() {
				leaders++
			}
		}
		if voters != 3 || len(st.GetNodes()) != 3 || leaders != 1 {
			return "", false, fmt.Sprintf("%s sees %d nodes, %d of them voters among the pods, %d leaders: %v", p.Name, len(st.GetNodes()), voters, leaders, st.GetNodes())
		}
	}
	return leader, true, ""
}

// waitStoreHealthy waits for a healthy Raft group (see storeView) and
// returns its leader.
func (f *federation) waitStoreHealthy(ctx context.Context, notLeader string) string {
	f.t.Helper()
	var leader string
	f.waitFor(ctx, "store: one leader, three voters", func(ctx context.Context) (bool, string) {
		l, ok, why := f.storeView(ctx, notLeader)
		leader = l
		return ok, why
	})
	return leader
}

// anyStore is an admin client of every running replica.
func (f *federation) anyStore(ctx context.Context) *client.Client {
	var addrs []string
	for _, p := range f.pods(ctx, storePodName) {
		addrs = append(addrs, net.JoinHostPort(p.Status.PodIP, "9090"))
	}
	if len(addrs) == 0 {
		f.t.Fatalf("%s: no store pod running", f.ns)
	}
	cl := f.storeClient(addrs...)
	f.t.Cleanup(func() { cl.Close() })
	return cl
}

func (f *federation) waitSubClusters(ctx context.Context, want []string) {
	f.t.Helper()
	cl := f.anyStore(ctx)
	f.waitFor(ctx, fmt.Sprintf("sub-clusters %v RUNNING", want), func(ctx context.Context) (bool, string) {
		scs, err := cl.ListSubClusters(ctx, false)
		if err != nil {
			return false, err.Error()
		}
		got := map[string]pb.SubClusterState{}
		for _, sc := range scs {
			got[sc.GetSubClusterId()] = sc.GetState()
		}
		for _, id := range want {
			if got[id] != pb.SubClusterState_SC_RUNNING {
				return false, fmt.Sprintf("sub-clusters %v", got)
			}
		}
		if len(got) != len(want) {
			return false, fmt.Sprintf("sub-clusters %v, want exactly %v", got, want)
		}
		return true, ""
	})
}

// ---- the YARN client ----

// yarnClient is our Go YARN client (hadoopipc's ApplicationClientProtocol)
// as a workstation outside the cluster runs it: to the router's Service,
// through a port-forward into the cluster's network.
type yarnClient struct {
	c       *hadoopipc.Client
	fw      *forwarder
	retries atomic.Int64
}

func (f *federation) yarnClient(ctx context.Context) *yarnClient {
	t := f.t
	// The Service's name, resolved by the cluster DNS; kube-proxy picks a
	// ready router pod for each connection.
	svc := fmt.Sprintf("yarnfed-router.%s.svc.%s:8050", f.ns, kubenode.ClusterDomain)
	fw := forward(t, f.c.DialContext, func() (string, error) { return svc, nil })
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{fw.l.Addr().String()}, Protocol: hadoopipc.ProtocolApplicationClient, User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &yarnClient{c: c, fw: fw}
}

// submit gets a new application id and submits it, retrying each call as
// YARN's client does (its RM proxy retries for up to 15 minutes): a
// resubmission of the same context is what the router deduplicates. It
// returns the id once the router acknowledged the submission.
func (y *yarnClient) submit(ctx context.Context, name string) (string, error) {
	var lastErr error
	retry := func() error {
		y.retries.Add(1)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr)
		case <-time.After(200 * time.Millisecond):
			return nil
		}
	}
	newApp := &yarnpb.GetNewApplicationResponseProto{}
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := y.c.Call(cctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, newApp)
		cancel()
		if err == nil {
			break
		}
		lastErr = fmt.Errorf("getNewApplication: %w", err)
		if err := retry(); err != nil {
			return "", err
		}
	}
	asc := &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId:   newApp.GetApplicationId(),
		ApplicationName: proto.String(name),
		Queue:           proto.String("default"),
		ApplicationType: proto.String("YARN"),
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{},
		Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
	}
	id := yarnid.AppIDString(newApp.GetApplicationId())
	for {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := y.c.Call(cctx, "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: asc}, &yarnpb.SubmitApplicationResponseProto{})
		cancel()
		if err == nil {
			return id, nil
		}
		lastErr = fmt.Errorf("submitApplication %s: %w", id, err)
		if err := retry(); err != nil {
			return "", err
		}
	}
}

// acked records every application the router acknowledged, per federation.
var ackedMu sync.Mutex

func (f *federation) ack(id string) {
	ackedMu.Lock()
	defer ackedMu.Unlock()
	if f.acked == nil {
		f.acked = map[string]bool{}
	}
	if f.acked[id] {
		f.t.Errorf("%s: application id %s acknowledged twice for two submissions", f.ns, id)
	}
	f.acked[id] = true
}

func (f *federation) ackedIDs() []string {
	ackedMu.Lock()
	defer ackedMu.Unlock()
	var out []string
	for id := range f.acked {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// submitN submits n applications one after the other; each must be
// acknowledged within a minute.
func (f *federation) submitN(ctx context.Context, y *yarnClient, n int) []string {
	f.t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		id, err := y.submit(sctx, fmt.Sprintf("%s-%d", f.ns, i))
		cancel()
		if err != nil {
			f.t.Fatalf("%s: submission %d: %v\n%s", f.ns, i, err, f.diagnose())
		}
		f.ack(id)
		ids = append(ids, id)
	}
	return ids
}

// placement counts where ids live according to the store.
func (f *federation) placement(ctx context.Context, ids []string) map[string]int {
	cl := f.anyStore(ctx)
	out := map[string]int{}
	for _, id := range ids {
		h, err := cl.GetApplicationHome(ctx, id, false)
		if err != nil {
			f.t.Errorf("%s: home of %s: %v", f.ns, id, err)
			continue
		}
		out[h.GetHomeSubClusterId()]++
	}
	return out
}

// hadoopClient: Hadoop 3.4's own YarnClient (the e2e module's
// YarnClientDriver, on the Maven classpath `make test-interop` builds) run
// inside the cluster's network with yarn.resourcemanager.address the
// router Service's ClusterIP, as a client pod or a node would use it: the
// cluster metrics are the sub-clusters' sum, and its submissions land on
// the simrms like ours. Without java or the classpath it skips with the
// reason, and fails where a cluster is required (CI).
func (f *federation) hadoopClient(ctx context.Context) {
	t := f.t
	e2e := filepath.Join(repoRoot(t), "e2e")
	cp, cpErr := os.ReadFile(filepath.Join(e2e, "target", "classpath.txt"))
	java, javaErr := exec.LookPath("java")
	if cpErr != nil || javaErr != nil {
		msg := fmt.Sprintf("the Hadoop client needs java on PATH (%v) and e2e/target/classpath.txt from `make test-interop` or `mvn -f e2e/pom.xml package` (%v)", javaErr, cpErr)
		// CI builds the classpath (maven-package) before make test and
		// sets both: there it must run.
		if os.Getenv("YARNFED_INTEROP_REQUIRED") != "" || os.Getenv(kubenode.EnvRequired) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	jvm, err := os.ReadFile(filepath.Join(e2e, "jvm.options"))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := f.kc.CoreV1().Services(f.ns).Get(ctx, "yarnfed-router", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "yarn-site.xml")
	site := fmt.Sprintf("<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>yarn.resourcemanager.address</name><value>%s:8050</value></property>\n</configuration>\n", svc.Spec.ClusterIP)
	if err := os.WriteFile(conf, []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(strings.Fields(string(jvm)), "-cp", filepath.Join(e2e, "target", "classes")+":"+strings.TrimSpace(string(cp)),
		"org.yarnfed.e2e.YarnClientDriver", "--conf", conf, "--user", "alice", "metrics", "submit:hadoop-1", "submit:hadoop-2", "report")
	cmd := f.c.Command(java, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() })
	err = cmd.Wait()
	timer.Stop()
	t.Logf("%s: java YarnClientDriver inside the cluster's network: %v in %v", f.ns, err, time.Since(begin).Round(time.Millisecond))
	type line struct {
		Op        string          `json:"op"`
		OK        bool            `json:"ok"`
		Result    json.RawMessage `json:"result"`
		Exception string          `json:"exception"`
	}
	var lines []line
	for _, l := range strings.Split(stdout.String(), "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var v line
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("driver printed %q: %v", l, err)
		}
		lines = append(lines, v)
	}
	if len(lines) != 4 {
		t.Fatalf("driver: %d result lines, want 4 (%v)\nstdout:\n%s\nstderr:\n%s", len(lines), err, stdout.String(), tail(stderr.String(), 4000))
	}
	for _, l := range lines {
		if !l.OK {
			t.Errorf("driver %s failed: %s", l.Op, l.Exception)
		}
	}
	var metrics struct {
		NumNodeManagers int `json:"numNodeManagers"`
	}
	if err := json.Unmarshal(lines[0].Result, &metrics); err != nil || metrics.NumNodeManagers != 4*len(f.opts.subClusters) {
		t.Errorf("Hadoop's getClusterMetrics through the router: %s (%v), want %d NodeManagers (4 per simrm)", lines[0].Result, err, 4*len(f.opts.subClusters))
	}
	for _, l := range lines[1:3] {
		var r struct {
			ApplicationID string `json:"applicationId"`
		}
		if err := json.Unmarshal(l.Result, &r); err != nil || r.ApplicationID == "" {
			t.Fatalf("driver %s: %s (%v)", l.Op, l.Result, err)
		}
		f.ack(r.ApplicationID)
	}
	t.Logf("%s: Hadoop YarnClient: %s; report %s", f.ns, lines[0].Result, lines[3].Result)
	f.checkRMs(ctx)
}

// ---- the end-of-test rule: RMs against the router's records ----

// rmApps lists the applications each simrm holds (its REST API).
func (f *federation) rmApps(ctx context.Context) map[string][]string {
	f.t.Helper()
	out := map[string][]string{}
	for _, sc := range f.opts.subClusters {
		pods := f.pods(ctx, simrmName(sc))
		if len(pods) != 1 {
			f.t.Fatalf("%s: %d %s pods running", f.ns, len(pods), simrmName(sc))
		}
		code, body, err := f.get(ctx, fmt.Sprintf("http://%s:%d/ws/v1/cluster/apps", pods[0].Status.PodIP, rmWebPort))
		if err != nil || code != 200 {
			f.t.Fatalf("%s: %s apps: %d %v %s", f.ns, sc, code, err, body)
		}
		var doc struct {
			Apps struct {
				App []struct {
					ID string `json:"id"`
				} `json:"app"`
			} `json:"apps"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			f.t.Fatalf("%s: %s apps: %v: %s", f.ns, sc, err, body)
		}
		out[sc] = []string{}
		for _, a := range doc.Apps.App {
			out[sc] = append(out[sc], a.ID)
		}
	}
	return out
}

// checkRMs: no RM holds an application it should not. Every application
// an RM holds has its home there in the store; none is on two RMs; every
// home row names an RM that holds the app; every acknowledged application
// has exactly one row, and the store holds no row that was never
// acknowledged (no submission was left half-done).
func (f *federation) checkRMs(ctx context.Context) {
	t := f.t
	t.Helper()
	cl := f.anyStore(ctx)
	homes := map[string]string{}
	var token []byte
	for {
		page, next, err := cl.ListApplicationHomes(ctx, client.ListQuery{PageToken: token})
		if err != nil {
			t.Fatalf("%s: list application homes: %v", f.ns, err)
		}
		for _, h := range page {
			if _, dup := homes[h.GetApplicationId()]; dup {
				t.Errorf("%s: application %s listed twice by the store", f.ns, h.GetApplicationId())
			}
			homes[h.GetApplicationId()] = h.GetHomeSubClusterId()
		}
		if len(next) == 0 {
			break
		}
		token = next
	}
	onRM := map[string]string{}
	for sc, ids := range f.rmApps(ctx) {
		for _, id := range ids {
			if other, ok := onRM[id]; ok {
				t.Errorf("%s: application %s is on two RMs: %s and %s", f.ns, id, other, sc)
			}
			onRM[id] = sc
			if homes[id] != sc {
				t.Errorf("%s: RM %s holds %s, whose home in the store is %q", f.ns, sc, id, homes[id])
			}
		}
	}
	acked := f.ackedIDs()
	isAcked := map[string]bool{}
	for _, id := range acked {
		isAcked[id] = true
		if _, ok := homes[id]; !ok {
			t.Errorf("%s: acknowledged application %s has no home in the store", f.ns, id)
		}
	}
	for id, sc := range homes {
		if onRM[id] != sc {
			t.Errorf("%s: the store homes %s on %s, which does not hold it (RM: %q)", f.ns, id, sc, onRM[id])
		}
		if !isAcked[id] {
			t.Errorf("%s: the store holds %s, which no client was told was submitted", f.ns, id)
		}
	}
	t.Logf("%s: %d acknowledged applications, %d homes, each on its home RM and nowhere else", f.ns, len(acked), len(homes))
}

// ---- GPG and AMRMProxy ----

// checkGPG: every GPG pod's Kubernetes source synced with its
// ServiceAccount's token (in-cluster config, through the kubernetes
// Service) and counts the one real Node.
func (f *federation) checkGPG(ctx context.Context) {
	pods := f.pods(ctx, "yarnfed-gpg")
	if len(pods) == 0 {
		f.t.Fatalf("%s: no GPG pod", f.ns)
	}
	for _, p := range pods {
		url := fmt.Sprintf("http://%s:8069/prom", p.Status.PodIP)
		f.waitFor(ctx, p.Name+" synced with the node", func(ctx context.Context) (bool, string) {
			code, body, err := f.get(ctx, url)
			if err != nil || code != 200 {
				return false, fmt.Sprintf("%s: %d %v", url, code, err)
			}
			synced, _ := metric(body, "yarnfed_gpg_kube_synced", `kubernetes_cluster="local"`)
			nodes, _ := metric(body, "yarnfed_gpg_kube_nodes", `kubernetes_cluster="local"`)
			if synced != 1 || nodes != 1 {
				return false, fmt.Sprintf("yarnfed_gpg_kube_synced %v, yarnfed_gpg_kube_nodes (all statuses) %v", synced, nodes)
			}
			return true, ""
		})
	}
	f.t.Logf("%s: %d GPG pods synced with the API server, each counting the one Node", f.ns, len(pods))
}

// checkAMRMProxy: the DaemonSet's pod runs on the node's network and
// answers its readiness endpoint at the node's address.
func (f *federation) checkAMRMProxy(ctx context.Context) {
	pods := f.pods(ctx, "yarnfed-amrmproxy")
	if len(pods) != 1 || pods[0].Status.PodIP != kubenode.NodeIP {
		f.t.Fatalf("%s: AMRMProxy pods %v, want one on the node's network (%s)", f.ns, podNames(pods), kubenode.NodeIP)
	}
	f.waitFor(ctx, "AMRMProxy /readyz at the node's address", func(ctx context.Context) (bool, string) {
		code, body, err := f.get(ctx, "http://"+kubenode.NodeIP+":8070/readyz")
		return err == nil && code == 200, fmt.Sprintf("%d %v %s", code, err, body)
	})
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// ---- failures ----

// leaderPodDeleted: `kubectl delete pod` of the store leader. A new leader
// among the other two, the StatefulSet brings the pod back with its
// volume, it rejoins as a voter, and every acknowledged application is
// still in the store and on its RM.
func (f *federation) leaderPodDeleted(ctx context.Context, y *yarnClient) {
	t := f.t
	old := f.waitStoreHealthy(ctx, "")
	f.submitN(ctx, y, 5)
	begin := time.Now()
	if err := f.kc.CoreV1().Pods(f.ns).Delete(ctx, old, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The other two name a new leader (handed over on SIGTERM).
	elected := f.waitNewLeader(ctx, old, begin)
	f.waitRollouts(ctx, "after deleting "+old)
	newLeader := f.waitStoreHealthy(ctx, "")
	rejoined := time.Since(begin)
	t.Logf("%s: leader pod %s deleted: the others named a new leader after %v; three voters again (leader %s) after %v",
		f.ns, old, elected.Round(time.Millisecond), newLeader, rejoined.Round(time.Millisecond))
	f.submitN(ctx, y, 5)
	f.checkRMs(ctx)
}

// stream submits applications one after the other until stopped, each
// with the client's retries (90 s at most).
type stream struct {
	f        *federation
	y        *yarnClient
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	failures []error
	total    atomic.Int64
	slowest  time.Duration
	retries0 int64
	conns0   int64
}

func (f *federation) startStream(ctx context.Context, y *yarnClient, name string) *stream {
	s := &stream{f: f, y: y, stop: make(chan struct{}), done: make(chan struct{}), retries0: y.retries.Load(), conns0: y.fw.accepted.Load()}
	go func() {
		defer close(s.done)
		for i := 0; ; i++ {
			select {
			case <-s.stop:
				return
			default:
			}
			sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			begin := time.Now()
			id, err := y.submit(sctx, fmt.Sprintf("%s-%s-%d", f.ns, name, i))
			cancel()
			s.mu.Lock()
			if err != nil {
				s.failures = append(s.failures, err)
			} else {
				f.ack(id)
				s.slowest = max(s.slowest, time.Since(begin))
			}
			s.mu.Unlock()
			s.total.Add(1)
		}
	}()
	return s
}

// waitCount waits until n more submissions completed.
func (s *stream) waitCount(ctx context.Context, n int64) {
	want := s.total.Load() + n
	for s.total.Load() < want && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
}

// end stops the stream and fails the test for every failed submission;
// it returns how many ran, the client-level retries, the connections the
// client opened meanwhile, and the slowest submission.
func (s *stream) end(what string) (total, retries, conns int64, slowest time.Duration) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, err := range s.failures {
		s.f.t.Errorf("%s: a submission failed during %s: %v", s.f.ns, what, err)
	}
	return s.total.Load(), s.y.retries.Load() - s.retries0, s.y.fw.accepted.Load() - s.conns0, s.slowest
}

// routerRollout: `kubectl rollout restart deployment/yarnfed-router` while
// a client submits without pause. Every submission is acknowledged (with
// the client's retries), and each exactly once in the store and on one RM.
func (f *federation) routerRollout(ctx context.Context, y *yarnClient) {
	t := f.t
	s := f.startStream(ctx, y, "rollout")
	s.waitCount(ctx, 3)
	d, err := f.kc.AppsV1().Deployments(f.ns).Get(ctx, "yarnfed-router", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldPods := podNames(f.pods(ctx, "yarnfed-router"))
	before := s.total.Load()
	begin := time.Now()
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, begin.Format(time.RFC3339))
	if _, err := f.kc.AppsV1().Deployments(f.ns).Patch(ctx, "yarnfed-router", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor(ctx, "the router rollout", func(ctx context.Context) (bool, string) {
		cur, err := f.kc.AppsV1().Deployments(f.ns).Get(ctx, "yarnfed-router", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if cur.Generation <= d.Generation {
			return false, "generation not bumped"
		}
		if ok, why := f.rolloutState(ctx); !ok {
			return false, why
		}
		// Terminating pods are gone too.
		all, err := f.kc.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=yarnfed-router"})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range all.Items {
			for _, o := range oldPods {
				if p.Name == o {
					return false, "old pod " + o + " still there"
				}
			}
		}
		return true, ""
	})
	rollout := time.Since(begin)
	during := s.total.Load() - before
	s.waitCount(ctx, 3)
	total, retries, conns, slowest := s.end("the router rollout")
	if during < 3 {
		t.Errorf("%s: only %d submissions ran during the rollout; the test proves little", f.ns, during)
	}
	if conns < 1 {
		t.Errorf("%s: the client never opened a new connection during the rollout: its first one outlived both old router pods?", f.ns)
	}
	t.Logf("%s: router rollout (%v -> %v) took %v; %d submissions, %d during it, %d client-level retries, %d new connections, slowest %v",
		f.ns, oldPods, podNames(f.pods(ctx, "yarnfed-router")), rollout.Round(time.Millisecond), total, during, retries, conns, slowest.Round(time.Millisecond))
	f.checkRMs(ctx)
}

// leaderProcessKilled: the store leader's process dies at once (SIGKILL
// from the node, as an OOM kill or a crash would), while a client submits.
// No hand-over: the other two elect a leader after the election timeout,
// the kubelet restarts the container, it rejoins from its volume, and no
// submission fails or is lost.
func (f *federation) leaderProcessKilled(ctx context.Context, y *yarnClient) {
	t := f.t
	old := f.waitStoreHealthy(ctx, "")
	pid := f.containerPID(old, "statestore")
	s := f.startStream(ctx, y, "kill")
	s.waitCount(ctx, 3)
	before := s.total.Load()
	begin := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s (pid %d): %v", old, pid, err)
	}
	elected := f.waitNewLeader(ctx, old, begin)
	f.waitRollouts(ctx, "after killing "+old)
	l := f.waitStoreHealthy(ctx, "")
	whole := time.Since(begin)
	during := s.total.Load() - before
	s.waitCount(ctx, 3)
	total, retries, conns, slowest := s.end("the leader's crash")
	p, err := f.kc.CoreV1().Pods(f.ns).Get(ctx, old, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount < 1 {
		t.Errorf("%s: the kubelet did not restart the killed container: %+v", old, p.Status.ContainerStatuses)
	}
	t.Logf("%s: leader %s killed: the others named a new leader after %v, three voters again (leader %s) after %v; %d submissions (%d meanwhile), %d client-level retries, %d new connections, slowest %v",
		f.ns, old, elected.Round(time.Millisecond), l, whole.Round(time.Millisecond), total, during, retries, conns, slowest.Round(time.Millisecond))
	f.checkRMs(ctx)
}

// waitNewLeader waits until every running replica but old names a leader
// other than old, and returns the time since begin.
func (f *federation) waitNewLeader(ctx context.Context, old string, begin time.Time) time.Duration {
	var elected time.Duration
	f.waitFor(ctx, "a new leader instead of "+old, func(ctx context.Context) (bool, string) {
		others := 0
		for _, p := range f.pods(ctx, storePodName) {
			if p.Name == old {
				continue
			}
			others++
			cl := f.storeClient(net.JoinHostPort(p.Status.PodIP, "9090"))
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			st, err := cl.Status(cctx)
			cancel()
			cl.Close()
			if err != nil {
				return false, err.Error()
			}
			if st.GetLeaderId() == "" || st.GetLeaderId() == old {
				return false, fmt.Sprintf("%s names leader %q", p.Name, st.GetLeaderId())
			}
		}
		if others < 2 {
			return false, fmt.Sprintf("%d other replicas running", others)
		}
		elected = time.Since(begin)
		return true, ""
	})
	return elected
}

// containerPID finds, from the node (this process shares its PID
// namespace with the containers'), the PID of pod's yarnfed process: its
// command line names the pod (--node-id=<pod>) and its environment the
// federation's namespace.
func (f *federation) containerPID(pod, role string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) < 2 || args[0] != "/yarnfed" || args[1] != role || !slices.Contains(args, "--node-id="+pod) {
			continue
		}
		env, err := os.ReadFile(filepath.Join(filepath.Dir(p), "environ"))
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), "POD_NAMESPACE="+f.ns) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err == nil {
			return pid
		}
	}
	f.t.Fatalf("%s: no process of pod %s found under /proc", f.ns, pod)
	return 0
}

// evictStore: evictions through the eviction API, as `kubectl drain` sends
// them. With three ready replicas and minAvailable 2, the first is allowed;
// a second one right after would leave one replica (no quorum) and is
// refused with 429. The group recovers and has lost nothing.
func (f *federation) evictStore(ctx context.Context, y *yarnClient) {
	t := f.t
	leader := f.waitStoreHealthy(ctx, "")
	// The PDB controller has seen the three healthy replicas (after the
	// earlier scenarios' restarts). How many disruptions it allows is what
	// the evictions below judge.
	f.waitFor(ctx, "the store PDB counts three healthy replicas", func(ctx context.Context) (bool, string) {
		pdb, err := f.kc.PolicyV1().PodDisruptionBudgets(f.ns).Get(ctx, "yarnfed-statestore", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pdb.Status.CurrentHealthy == 3 && pdb.Status.DisruptionsAllowed >= 1 && pdb.Status.ObservedGeneration >= pdb.Generation,
			fmt.Sprintf("disruptionsAllowed %d, currentHealthy %d", pdb.Status.DisruptionsAllowed, pdb.Status.CurrentHealthy)
	})
	var first, second string
	for _, p := range f.pods(ctx, storePodName) {
		switch {
		case p.Name == leader:
		case first == "":
			first = p.Name
		default:
			second = p.Name
		}
	}
	evict := func(name string) error {
		return f.kc.PolicyV1().Evictions(f.ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}})
	}
	if err := evict(first); err != nil {
		t.Fatalf("%s: evicting %s with three ready replicas: %v", f.ns, first, err)
	}
	err := evict(second)
	var status apierrors.APIStatus
	switch {
	case err == nil:
		t.Errorf("%s: evicting %s right after %s was allowed: one replica of three left, no quorum", f.ns, second, first)
	case !apierrors.IsTooManyRequests(err):
		t.Errorf("%s: evicting %s after %s: %v, want 429 TooManyRequests from the PDB", f.ns, second, first, err)
	case errors.As(err, &status):
		t.Logf("%s: second eviction refused: %d %s", f.ns, status.Status().Code, status.Status().Message)
	}
	begin := time.Now()
	f.waitRollouts(ctx, "after evicting "+first)
	l := f.waitStoreHealthy(ctx, "")
	t.Logf("%s: %s evicted; the group was whole again (leader %s) after %v", f.ns, first, l, time.Since(begin).Round(time.Millisecond))
	f.submitN(ctx, y, 3)
	f.checkRMs(ctx)
}

// twoFederations: fed-b beside fed-a in the same cluster. Both are
// healthy; each one's store lists only its own sub-clusters and
// applications, each one's RMs hold only its own applications, and one
// federation's admin certificate is refused by the other's store.
func twoFederations(ctx context.Context, t *testing.T, a, b *federation, ya *yarnClient) {
	a.t, b.t = t, t
	b.waitStoreHealthy(ctx, "")
	b.waitSubClusters(ctx, b.opts.subClusters)
	a.waitStoreHealthy(ctx, "")
	a.waitSubClusters(ctx, a.opts.subClusters)
	yb := b.yarnClient(ctx)
	idsB := b.submitN(ctx, yb, 10)
	idsA := a.submitN(ctx, ya, 10)
	for _, pair := range []struct {
		f     *federation
		other []string
	}{{a, idsB}, {b, idsA}} {
		cl := pair.f.anyStore(ctx)
		for _, id := range pair.other {
			if h, err := cl.GetApplicationHome(ctx, id, false); err == nil {
				t.Errorf("%s's store has the other federation's application %s (home %s)", pair.f.ns, id, h.GetHomeSubClusterId())
			}
		}
	}
	a.checkRMs(ctx)
	b.checkRMs(ctx)
	// One CA per federation: fed-a's admin certificate opens nothing in
	// fed-b's store.
	pods := b.pods(ctx, storePodName)
	cross := storeClientWith(t, a.c, a.pki, net.JoinHostPort(pods[0].Status.PodIP, "9090"))
	defer cross.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := cross.Status(cctx)
	cancel()
	if err == nil {
		t.Errorf("fed-a's admin certificate was accepted by fed-b's store")
	}
	// fed-b's install touched nothing of fed-a's: still whole.
	a.waitRollouts(ctx, "beside fed-b")
	a.checkGPG(ctx)
	b.checkGPG(ctx)
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
