package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"

	"github.com/yarnfed/yarnfed/internal/testenv"
)

// hostileName is an application name built to break out of every HTML
// context a page might put it in.
const hostileName = `</td></tr></table><script>document.title="xss"</script><img id="pwned" src="x" onerror="alert(1)">'"&amp;`

// Browser tests of the router's web UI (router/webui): a router over two
// simulated RMs (with their sub-cluster agents) and a three-replica Raft
// state store, driven by headless Chromium through the DevTools protocol
// (chromedp). They live here, not in router/, because router's tests may
// not import the store's test cluster (internal/layout); the router's own
// page tests over fakes are router/webui/pages_test.go. Skipped when no
// Chromium is installed, unless YARNFED_BROWSER_REQUIRED=1 (CI).
// Screenshots of every page go to $YARNFED_ARTIFACTS/webui (kept) or a
// temporary directory (removed).

// browserPath finds Debian's chromium (or another Chromium-based browser).
func browserPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("YARNFED_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "YARNFED_BROWSER_REQUIRED", "no chromium on PATH (apt-get install chromium)")
	return ""
}

func artifactDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("YARNFED_ARTIFACTS")
	if base == "" {
		return t.TempDir()
	}
	dir := filepath.Join(base, "webui")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// uiFed is the federation the browser looks at.
type uiFed struct {
	store      *storetest.Cluster
	router     *router.Router
	base       string // http://127.0.0.1:port
	apps       []string
	hostileApp string // the id of the app named hostileName
}

func startUIFed(t *testing.T) *uiFed {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// Apps stay RUNNING while the browser looks.
	fed := startFederation(t, fedOptions{Replicas: 3, SubClusters: []fedSubCluster{{"SC-1", 2}, {"SC-2", 3}}, LongRunning: true})
	cl, sc := fed.Store, fed.SC
	// The GPG's Kubernetes batch capacity, for SC-2 only.
	if _, err := sc.PublishCapacity(ctx, []*storepb.PublishCapacityRequest_Item{
		{SubClusterId: "SC-2", MemoryMb: 12345, Vcores: 67, Nodes: 3, ObservedMs: time.Now().UnixMilli()},
	}, nil); err != nil {
		t.Fatal(err)
	}
	// Queue policies as `yarn routeradmin -policy -s` stores them; one
	// queue name is hostile.
	rs := router.NewClientStore(sc)
	reg := policies.NewDefaultRegistry()
	for _, s := range []string{
		"default;SC-1:0.6,SC-2:0.4;SC-1:0.6,SC-2:0.4;1.0",
		"root.evil<b>q</b>&<i>x</i>;SC-1:1.0;SC-1:1.0;0.5",
	} {
		q, err := policies.ParsePolicySaveString(s)
		if err != nil {
			t.Fatal(err)
		}
		pc, err := reg.QueuePolicyConfig(q, "WeightedLocality", policies.Env{})
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.SavePolicy(ctx, router.PolicyConfiguration{Queue: pc.Queue, Type: pc.Type, Params: pc.Params}); err != nil {
			t.Fatal(err)
		}
	}

	r := fed.startRouter(t, sc, func(cfg *router.Config) {
		cfg.Version = "v9.9.9-uitest"
		cfg.Logger = slog.New(slog.DiscardHandler)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg.WebListener = l
	})
	f := &uiFed{store: cl, router: r, base: "http://" + r.WebAddr().String()}

	c := appClient(t, r, "alice")
	for i := range 6 {
		nr := &yarnpb.GetNewApplicationResponseProto{}
		if err := c.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, nr); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("ui-test-%d", i)
		if i == 0 {
			name = hostileName
		}
		req := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
			ApplicationId: nr.GetApplicationId(), ApplicationName: proto.String(name), Queue: proto.String("default"),
		}}
		if err := c.Call(ctx, "submitApplication", req, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
			t.Fatal(err)
		}
		id := yarnid.AppIDString(nr.GetApplicationId())
		f.apps = append(f.apps, id)
		if i == 0 {
			f.hostileApp = id
		}
	}
	return f
}

func (f *uiFed) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get(f.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func newBrowser(t *testing.T) context.Context {
	t.Helper()
	exe := browserPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1600, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	tctx, cancelTimeout := context.WithTimeout(bctx, 4*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelBrowser(); cancelAlloc() })
	if err := chromedp.Do(tctx); err != nil { // starts the browser
		t.Fatalf("start %s: %v", exe, err)
	}
	return tctx
}

// stepTimeout bounds one browser step (a missing element fails the test
// instead of hanging it).
const browserStepTimeout = 30 * time.Second

func browserDo(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserStepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval runs JavaScript in the page (DevTools evaluation: the page's CSP,
// which forbids scripts, does not apply to it).
func browserEval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserStepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func browserText(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserStepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func browserInt(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	s := browserText(t, ctx, sel)
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s: %q is not a number", sel, s)
	}
	return n
}

func browserLocation(t *testing.T, ctx context.Context) string {
	t.Helper()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// waitLocation waits for a navigation (a clicked link) to reach want.
func browserWaitLocation(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		loc := browserLocation(t, ctx)
		if loc == want && browserEval[string](t, ctx, `document.readyState`) == "complete" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("at %s, want %s", loc, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func browserShot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
}

// TestBrowserUI: each page loads in Chromium and shows REST's numbers,
// the navigation and per-app links lead where they say, and an
// application name and a queue built to inject markup are shown as text.
func TestBrowserUI(t *testing.T) {
	ctx := newBrowser(t) // first: skips before the federation starts when there is no browser
	f := startUIFed(t)
	shots := artifactDir(t)

	t.Run("about", func(t *testing.T) {
		browserDo(t, ctx, "open /", chromedp.Navigate(f.base+"/"), chromedp.WaitVisible(chromedp.CSS("#store")))
		if loc := browserLocation(t, ctx); loc != f.base+"/cluster" {
			t.Errorf("/ led to %s, want /cluster", loc)
		}
		if got := browserText(t, ctx, "#version"); got != "v9.9.9-uitest" {
			t.Errorf("version %q", got)
		}
		// The page names the leader the router's replica knows when it is
		// drawn; between two leaders (an election under load) that is
		// none, so a mismatch is read again from a reloaded page, and the
		// leader is re-read each time, before failing.
		var got, leader string
		for try := 0; ; try++ {
			leader = f.store.Nodes[f.store.WaitLeader()].ID
			got = browserText(t, ctx, "#store-leader")
			if strings.HasPrefix(got, leader+" ") || try == 50 {
				break
			}
			time.Sleep(200 * time.Millisecond)
			browserDo(t, ctx, "reload "+f.base+"/cluster", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#store")))
		}
		if !strings.HasPrefix(got, leader+" ") {
			t.Errorf("store leader %q, want %s", got, leader)
		}
		if got := browserInt(t, ctx, "#sc-count"); got != 2 {
			t.Errorf("sub-clusters %d, want 2", got)
		}
		var m rmrest.ClusterMetricsResponse
		f.getJSON(t, "/ws/v1/cluster/metrics", &m)
		for sel, want := range map[string]int{
			"#m-appsSubmitted": int(m.ClusterMetrics.AppsSubmitted), "#m-activeNodes": int(m.ClusterMetrics.ActiveNodes),
			"#m-totalMB": int(m.ClusterMetrics.TotalMB), "#m-totalVirtualCores": int(m.ClusterMetrics.TotalVirtualCores),
		} {
			if got := browserInt(t, ctx, sel); got != want {
				t.Errorf("%s = %d, REST says %d", sel, got, want)
			}
		}
		if m.ClusterMetrics.AppsSubmitted != int32(len(f.apps)) || m.ClusterMetrics.ActiveNodes != 5 {
			t.Errorf("REST metrics: %d apps submitted, %d active nodes; want %d and 5", m.ClusterMetrics.AppsSubmitted, m.ClusterMetrics.ActiveNodes, len(f.apps))
		}
		browserShot(t, ctx, shots, "about")
	})

	t.Run("federation", func(t *testing.T) {
		browserDo(t, ctx, "nav", chromedp.Click(chromedp.CSS("#nav-federation")), chromedp.WaitVisible(chromedp.CSS("#subclusters")))
		stored, err := f.store.Client().ListSubClusters(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		if got := browserInt(t, ctx, "#sc-count"); got != len(stored) {
			t.Errorf("page shows %d sub-clusters, the store has %d", got, len(stored))
		}
		if got := browserText(t, ctx, "#sc-SC-2 .pub-memoryMB"); got != "12345" {
			t.Errorf("SC-2 published memory %q, want the GPG's 12345", got)
		}
		if got := browserText(t, ctx, "#sc-SC-1 .published"); !strings.Contains(got, "not published") {
			t.Errorf("SC-1 published cell %q", got)
		}
		// Capability is what the agent heartbeated: SC-1 has 2 nodes, SC-2 3.
		for sc, nodes := range map[string]string{"SC-1": "2", "SC-2": "3"} {
			if got := browserText(t, ctx, "#sc-"+sc+" .cap-activeNodes"); got != nodes {
				t.Errorf("%s capability shows %s active nodes, want %s", sc, got, nodes)
			}
		}
		weights := browserEval[[]string](t, ctx, `[...document.querySelectorAll('#weights tr.queue[data-queue="default"] td.weight')].map(e => e.textContent)`)
		if !slices.Equal(weights, []string{"0.6 / 0.6", "0.4 / 0.4"}) {
			t.Errorf("default queue weights %q", weights)
		}
		browserShot(t, ctx, shots, "federation")
	})

	t.Run("nodes", func(t *testing.T) {
		browserDo(t, ctx, "nav", chromedp.Click(chromedp.CSS("#nav-nodes")), chromedp.WaitVisible(chromedp.CSS("#nodes")))
		var rest rmrest.NodesResponse
		f.getJSON(t, "/ws/v1/cluster/nodes", &rest)
		if got := browserInt(t, ctx, "#node-count"); got != len(rest.Nodes.Node) || got != 5 {
			t.Errorf("page shows %d nodes, REST %d, want 5", got, len(rest.Nodes.Node))
		}
		rows := browserEval[int](t, ctx, `document.querySelectorAll('#nodes tr.node').length`)
		if rows != len(rest.Nodes.Node) {
			t.Errorf("%d node rows, REST has %d nodes", rows, len(rest.Nodes.Node))
		}
		browserShot(t, ctx, shots, "nodes")
	})

	t.Run("policies", func(t *testing.T) {
		browserDo(t, ctx, "nav", chromedp.Click(chromedp.CSS("#nav-policies")), chromedp.WaitVisible(chromedp.CSS("#policies")))
		stored, err := f.store.Client().ListPolicies(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := browserInt(t, ctx, "#policy-count"); got != len(stored) || got != 2 {
			t.Errorf("page shows %d policies, the store has %d, want 2", got, len(stored))
		}
		queues := browserEval[[]string](t, ctx, `[...document.querySelectorAll('#policies td.queue-name')].map(e => e.textContent)`)
		if !slices.Equal(queues, []string{"default", "root.evil<b>q</b>&<i>x</i>"}) {
			t.Errorf("queues shown as %q", queues)
		}
		injected := browserEval[int](t, ctx, `document.querySelectorAll('main b, main i').length`)
		if injected != 0 {
			t.Errorf("the hostile queue name became %d elements", injected)
		}
		browserShot(t, ctx, shots, "policies")
	})

	t.Run("apps", func(t *testing.T) {
		browserDo(t, ctx, "nav", chromedp.Click(chromedp.CSS("#nav-apps")), chromedp.WaitVisible(chromedp.CSS("#apps")))
		var rest rmrest.AppsResponse
		f.getJSON(t, "/ws/v1/cluster/apps", &rest)
		if got := browserInt(t, ctx, "#app-count"); got != len(rest.Apps.App) || got != len(f.apps) {
			t.Errorf("page shows %d apps, REST %d, submitted %d", got, len(rest.Apps.App), len(f.apps))
		}
		ids := browserEval[[]string](t, ctx, `[...document.querySelectorAll('#apps tr.app')].map(e => e.dataset.app)`)
		slices.Sort(ids)
		want := slices.Clone(f.apps)
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Errorf("app rows %v, want %v", ids, want)
		}
		// The hostile name is text: the same string back, no element, no
		// script run, the table intact.
		row := `#apps tr.app[data-app="` + f.hostileApp + `"]`
		name := browserEval[string](t, ctx, `document.querySelector('`+row+` td.name').textContent`)
		injected := browserEval[int](t, ctx, `document.querySelectorAll('#pwned, main script, main img').length`)
		cells := browserEval[int](t, ctx, `document.querySelectorAll('`+row+` > td').length`)
		title := browserEval[string](t, ctx, `document.title`)
		if name != hostileName {
			t.Errorf("hostile name shown as %q, want %q", name, hostileName)
		}
		if injected != 0 || strings.Contains(title, "xss") {
			t.Errorf("hostile name injected markup (%d elements, title %q)", injected, title)
		}
		if cells != 15 {
			t.Errorf("hostile row has %d cells, want 15: it broke the table", cells)
		}
		// Every app's home is the home the store recorded.
		for _, id := range f.apps {
			home := browserEval[string](t, ctx, `document.querySelector('#apps tr.app[data-app="`+id+`"] a.home-link').textContent`)
			stored, err := f.store.Client().GetApplicationHome(context.Background(), id, false)
			if err != nil {
				t.Fatal(err)
			}
			if home != stored.GetHomeSubClusterId() {
				t.Errorf("%s: page says home %s, store %s", id, home, stored.GetHomeSubClusterId())
			}
		}
		browserShot(t, ctx, shots, "apps")

		// Links: the app's page, its REST document, its home's row, its RM's page.
		browserDo(t, ctx, "app link", chromedp.Click(chromedp.CSS(row+` a.app-link`)), chromedp.WaitVisible(chromedp.CSS("#app-detail")))
		if loc := browserLocation(t, ctx); loc != f.base+"/cluster/app/"+f.hostileApp {
			t.Errorf("app link led to %s", loc)
		}
		if got := browserText(t, ctx, "#app-detail td.name"); got != hostileName {
			t.Errorf("app page shows the hostile name as %q", got)
		}
		if n := browserEval[int](t, ctx, `document.querySelectorAll('#pwned, main script, main img').length`); n != 0 {
			t.Errorf("app page: the hostile name became %d elements", n)
		}
		stored, err := f.store.Client().GetApplicationHome(context.Background(), f.hostileApp, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := browserText(t, ctx, "#app-detail a.home-link"); got != stored.GetHomeSubClusterId() {
			t.Errorf("app page says home %s, store %s", got, stored.GetHomeSubClusterId())
		}
		if n := browserEval[int](t, ctx, `document.querySelectorAll('#attempts tr.attempt').length`); n != 1 {
			t.Errorf("app page lists %d attempts, want 1", n)
		}
		browserShot(t, ctx, shots, "app")
		browserDo(t, ctx, "reopen apps", chromedp.Navigate(f.base+"/cluster/apps"), chromedp.WaitVisible(chromedp.CSS("#apps")))
		browserDo(t, ctx, "REST link", chromedp.Click(chromedp.CSS(row+` a.app-rest`)))
		browserWaitLocation(t, ctx, f.base+"/ws/v1/cluster/apps/"+f.hostileApp)
		// A browser asks for XML first (Accept: ...application/xml...), and
		// gets the RM's XML document, as from an RM.
		gotID := browserEval[string](t, ctx, `document.querySelector('app > id').textContent`)
		gotName := browserEval[string](t, ctx, `document.querySelector('app > name').textContent`)
		if gotID != f.hostileApp || gotName != hostileName {
			t.Errorf("REST link led to app %s named %q", gotID, gotName)
		}
		browserDo(t, ctx, "reopen apps", chromedp.Navigate(f.base+"/cluster/apps"), chromedp.WaitVisible(chromedp.CSS("#apps")))
		home := browserText(t, ctx, row+" a.home-link")
		rmHref := browserEval[string](t, ctx, `document.querySelector('`+row+` a.rm-link').href`)
		browserDo(t, ctx, "home link", chromedp.Click(chromedp.CSS(row+" a.home-link")), chromedp.WaitVisible(chromedp.CSS("#sc-"+home)))
		if loc := browserLocation(t, ctx); loc != f.base+"/cluster/federation#sc-"+home {
			t.Errorf("home link led to %s", loc)
		}
		// The RM link points at the home RM's own web UI; it must answer.
		scs, err := f.store.Client().ListSubClusters(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		web := ""
		for _, sc := range scs {
			if sc.GetSubClusterId() == home {
				web = sc.GetRmWebServiceAddress()
			}
		}
		if web == "" || !strings.HasPrefix(rmHref, "http://"+web+"/cluster/app/"+f.hostileApp) {
			t.Errorf("RM link %q, home RM web %q", rmHref, web)
		}
		if resp, err := http.Get(strings.Replace(rmHref, "/cluster/app/", "/ws/v1/cluster/apps/", 1)); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("the home RM does not know the linked app: %v %v", err, resp)
		} else {
			resp.Body.Close()
		}
	})
}
