package test

// The PromQL of deploy/monitoring is parsed with Prometheus' own parser
// (github.com/prometheus/prometheus/promql/parser) and the rules file with
// its own loader (model/rulefmt), so "parses" means what Prometheus and
// Grafana's Prometheus data source will accept, not what a home-made
// tokenizer guesses.

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	promql "github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// metricInfo is one metric the yarnfed binary defines.
type metricInfo struct {
	kind   string          // counter, gauge, histogram, summary
	labels map[string]bool // variable and constant label names
	where  string          // file:line of the definition
}

// exported is what scanning the source of cmd/yarnfed found.
type exported struct {
	metrics map[string]*metricInfo
	// suffixes of names built at run time (prefix + "_tls_reload_failing"):
	// a scraped family ending so is accounted for.
	suffixes map[string]string // suffix -> kind
	// unreadable are the definitions whose name is neither a literal nor
	// a constant (file:line).
	unreadable []string
}

// scrapeLabels are the target labels Prometheus adds (its example
// kubernetes-pods job: namespace and pod from the pod's metadata).
var scrapeLabels = map[string]bool{"namespace": true, "pod": true, "instance": true, "job": true}

var (
	exportedOnce sync.Once
	exportedSet  *exported
	exportedErr  error
)

// exportedMetrics scans every package of the main module that
// cmd/yarnfed links (`go list -deps`) for Prometheus metric definitions:
// prometheus.{Counter,Gauge,Histogram,Summary}Opts literals, their Name
// (with Namespace and Subsystem), the label names of the *Vec constructor
// they are passed to, and their ConstLabels. The drift test checks this
// scan against what the running binaries really expose
// (checkScrapedMetrics), so a metric defined some other way fails there.
func exportedMetrics(t testing.TB) *exported {
	t.Helper()
	exportedOnce.Do(func() { exportedSet, exportedErr = scanMetrics(repoRoot(t)) })
	if exportedErr != nil {
		t.Fatal(exportedErr)
	}
	return exportedSet
}

func scanMetrics(root string) (*exported, error) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{end}}{{end}}", "./cmd/yarnfed")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps ./cmd/yarnfed: %w", err)
	}
	ex := &exported{metrics: map[string]*metricInfo{}, suffixes: map[string]string{}}
	fset := token.NewFileSet()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		var files []*ast.File
		consts := map[string]string{} // the package's string constants
		for _, name := range fields[1:] {
			f, err := parser.ParseFile(fset, filepath.Join(fields[0], name), nil, 0)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, sp := range g.Specs {
					vs := sp.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if v, ok := stringLit(vs.Values[i]); ok {
								consts[n.Name] = v
							}
						}
					}
				}
			}
		}
		for _, f := range files {
			if err := scanFile(fset, f, consts, ex); err != nil {
				return nil, err
			}
		}
	}
	if len(ex.metrics) == 0 {
		return nil, fmt.Errorf("no metric definitions found under %s: the scan is broken", root)
	}
	for n, m := range libraryMetrics {
		ex.metrics[n] = m
	}
	return ex, nil
}

// libraryMetrics are metrics a library defines and yarnfed registers, so the
// source scan of the main module cannot see them: go-grpc-middleware's
// server metrics, named with the namespace and subsystem
// statestore/node/grpc.go gives them. The drift test requires every one to
// be exposed by a running replica (checkLibraryMetricsSeen), so this table
// cannot claim a metric that does not exist.
var libraryMetrics = func() map[string]*metricInfo {
	const where = "go-grpc-middleware providers/prometheus, registered in statestore/node/grpc.go"
	call := map[string]bool{"grpc_type": true, "grpc_service": true, "grpc_method": true}
	withCode := map[string]bool{"grpc_type": true, "grpc_service": true, "grpc_method": true, "grpc_code": true}
	return map[string]*metricInfo{
		"yarnfed_statestore_grpc_server_started_total":      {kind: "counter", labels: call, where: where},
		"yarnfed_statestore_grpc_server_handled_total":      {kind: "counter", labels: withCode, where: where},
		"yarnfed_statestore_grpc_server_msg_received_total": {kind: "counter", labels: call, where: where},
		"yarnfed_statestore_grpc_server_msg_sent_total":     {kind: "counter", labels: call, where: where},
		"yarnfed_statestore_grpc_server_handling_seconds":   {kind: "histogram", labels: call, where: where},
	}
}()

// checkLibraryMetricsSeen: every libraryMetrics entry was among the
// families the running roles exposed (seen: family names of all scrapes).
func checkLibraryMetricsSeen(t *testing.T, seen map[string]bool) {
	t.Helper()
	for _, n := range sortedKeys(libraryMetrics) {
		if !seen[n] {
			t.Errorf("libraryMetrics lists %s, which no running role exposed", n)
		}
	}
}

// promSel reports whether e is prometheus.<one of names>.
func promSel(e ast.Expr, names ...string) (string, bool) {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	if x, ok := s.X.(*ast.Ident); !ok || x.Name != "prometheus" {
		return "", false
	}
	for _, n := range names {
		if s.Sel.Name == n {
			return n, true
		}
	}
	return "", false
}

func stringLit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

func scanFile(fset *token.FileSet, f *ast.File, consts map[string]string, ex *exported) error {
	// Keys of every prometheus.Labels literal of the file: a ConstLabels
	// given as a variable is one of them (gpg/kube's {"kubernetes_cluster":
	// name}).
	fileLabels := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if cl, ok := n.(*ast.CompositeLit); ok {
			if _, ok := promSel(cl.Type, "Labels"); ok {
				for _, el := range cl.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if k, ok := stringLit(kv.Key); ok {
							fileLabels[k] = true
						}
					}
				}
			}
		}
		return true
	})
	// Label names of the *Vec constructors, by the opts literal they take.
	vecLabels := map[*ast.CompositeLit][]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) < 2 {
			return true
		}
		if _, ok := promSel(call.Fun, "NewCounterVec", "NewGaugeVec", "NewHistogramVec", "NewSummaryVec"); !ok {
			return true
		}
		opts, ok := call.Args[0].(*ast.CompositeLit)
		if !ok {
			return true
		}
		if list, ok := call.Args[1].(*ast.CompositeLit); ok {
			for _, el := range list.Elts {
				if s, ok := stringLit(el); ok {
					vecLabels[opts] = append(vecLabels[opts], s)
				}
			}
		}
		return true
	})
	var err error
	ast.Inspect(f, func(n ast.Node) bool {
		cl, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		kind, ok := promSel(cl.Type, "CounterOpts", "GaugeOpts", "HistogramOpts", "SummaryOpts")
		if !ok {
			return true
		}
		kind = strings.ToLower(strings.TrimSuffix(kind, "Opts"))
		var ns, sub, name, suffix string
		info := &metricInfo{kind: kind, labels: map[string]bool{}, where: fset.Position(cl.Pos()).String()}
		for _, l := range vecLabels[cl] {
			info.labels[l] = true
		}
		for _, el := range cl.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			key, _ := kv.Key.(*ast.Ident)
			if key == nil {
				continue
			}
			switch key.Name {
			case "Namespace":
				ns, _ = stringLit(kv.Value)
			case "Subsystem":
				sub, _ = stringLit(kv.Value)
			case "Name":
				if s, ok := stringLit(kv.Value); ok {
					name = s
				} else if id, ok := kv.Value.(*ast.Ident); ok && consts[id.Name] != "" {
					name = consts[id.Name]
				} else if b, ok := kv.Value.(*ast.BinaryExpr); ok && b.Op == token.ADD {
					suffix, _ = stringLit(b.Y)
				}
			case "ConstLabels":
				if lit, ok := kv.Value.(*ast.CompositeLit); ok {
					for _, e := range lit.Elts {
						if kv2, ok := e.(*ast.KeyValueExpr); ok {
							if k, ok := stringLit(kv2.Key); ok {
								info.labels[k] = true
							}
						}
					}
				} else {
					for k := range fileLabels {
						info.labels[k] = true
					}
				}
			}
		}
		switch {
		case name != "":
			full := name
			if sub != "" {
				full = sub + "_" + full
			}
			if ns != "" {
				full = ns + "_" + full
			}
			if prev, dup := ex.metrics[full]; dup && prev.kind != kind {
				err = fmt.Errorf("%s: metric %s defined as %s and %s (%s)", info.where, full, kind, prev.kind, prev.where)
			}
			ex.metrics[full] = info
		case suffix != "":
			ex.suffixes[suffix] = kind
		default:
			// A name passed in (simrm's collectors take it as a
			// parameter): unknown here. A running role exposing such a
			// metric fails checkScrapedMetrics, which names this place.
			ex.unreadable = append(ex.unreadable, info.where)
		}
		return true
	})
	return err
}

// lookup finds the metric a series name belongs to: the name itself, or a
// histogram's (summary's) _bucket, _sum, _count series.
func (ex *exported) lookup(series string) (string, *metricInfo, bool) {
	if m, ok := ex.metrics[series]; ok {
		return series, m, true
	}
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(series, s)
		if !ok {
			continue
		}
		if m, ok := ex.metrics[base]; ok && (m.kind == "histogram" || (m.kind == "summary" && s != "_bucket")) {
			return base, m, true
		}
	}
	return "", nil, false
}

// checkExpr parses one PromQL expression and checks that every series it
// selects is one the binary exports, and every label it matches or groups
// by is one those series carry (or Prometheus adds when scraping). It
// returns the series names used.
func checkExpr(t *testing.T, ex *exported, what, expr string) []string {
	t.Helper()
	e, err := promql.NewParser(promql.Options{}).ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %v\n%s", what, err, expr)
		return nil
	}
	// labelsOf: every label the series under n can carry.
	labelsOf := func(n promql.Node) map[string]bool {
		out := map[string]bool{}
		for k := range scrapeLabels {
			out[k] = true
		}
		promql.Inspect(n, func(c promql.Node, _ []promql.Node) error {
			if vs, ok := c.(*promql.VectorSelector); ok {
				if _, m, ok := ex.lookup(vs.Name); ok {
					for k := range m.labels {
						out[k] = true
					}
					if strings.HasSuffix(vs.Name, "_bucket") {
						out["le"] = true
					}
				}
			}
			return nil
		})
		return out
	}
	var used []string
	promql.Inspect(e, func(n promql.Node, _ []promql.Node) error {
		switch v := n.(type) {
		case *promql.VectorSelector:
			if v.Name == "" {
				t.Errorf("%s: a selector without a metric name: %s", what, v)
				return nil
			}
			used = append(used, v.Name)
			if !strings.HasPrefix(v.Name, "yarnfed_") {
				t.Errorf("%s: %s is not a yarnfed metric", what, v.Name)
				return nil
			}
			if _, _, ok := ex.lookup(v.Name); !ok {
				t.Errorf("%s: metric %s is exported by no package of cmd/yarnfed", what, v.Name)
				return nil
			}
			have := labelsOf(v)
			for _, m := range v.LabelMatchers {
				if m.Name != model.MetricNameLabel && !have[m.Name] {
					t.Errorf("%s: %s has no label %q (it has %v)", what, v.Name, m.Name, sortedKeys(have))
				}
			}
		case *promql.AggregateExpr:
			if v.Without {
				return nil
			}
			have := labelsOf(v.Expr)
			for _, g := range v.Grouping {
				if !have[g] {
					t.Errorf("%s: %s by %q, a label none of its series has (%v)", what, v.Op, g, sortedKeys(have))
				}
			}
		}
		return nil
	})
	return used
}

// mustCover are the subjects the monitoring must cover (issue 23): store
// leader changes, commit latency, router errors per sub-cluster, breaker
// open, the GPG lease, AMRMProxy aborted containers.
var mustCover = []string{
	"yarnfed_statestore_leader",
	"yarnfed_statestore_raft_commit_seconds_bucket",
	"yarnfed_router_subcluster_calls_total",
	"yarnfed_router_breaker_state",
	"yarnfed_gpg_leader",
	"yarnfed_amrmproxy_containers_aborted_total",
}

func monitoringFile(t *testing.T, name string) string {
	return filepath.Join(repoRoot(t), "deploy", "monitoring", name)
}

// TestMonitoringRules: deploy/monitoring/rules.yaml loads as a Prometheus
// rule file (rulefmt, as `promtool check rules` does); every expression
// names only metrics and labels cmd/yarnfed exports; the rules cover
// mustCover; prometheusrule.yaml carries exactly the same groups.
func TestMonitoringRules(t *testing.T) {
	ex := exportedMetrics(t)
	p := promql.NewParser(promql.Options{})
	groups, errs := rulefmt.ParseFile(monitoringFile(t, "rules.yaml"), false, model.UTF8Validation, p, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, err := range errs {
		t.Errorf("rules.yaml: %v", err)
	}
	if groups == nil || len(groups.Groups) == 0 {
		t.Fatal("rules.yaml: no rule groups")
	}
	covered := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a rule that is not an alert (%q)", g.Name, r.Record)
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: needs a severity label and summary and description annotations", r.Alert)
			}
			for _, m := range checkExpr(t, ex, "alert "+r.Alert, r.Expr) {
				covered[m] = true
			}
		}
	}
	for _, m := range mustCover {
		if !covered[m] {
			t.Errorf("no alert uses %s", m)
		}
	}

	read := func(name string) map[string]any {
		b, err := os.ReadFile(monitoringFile(t, name))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return m
	}
	plain, cr := read("rules.yaml"), read("prometheusrule.yaml")
	if cr["kind"] != "PrometheusRule" || cr["apiVersion"] != "monitoring.coreos.com/v1" {
		t.Errorf("prometheusrule.yaml: %v %v, want monitoring.coreos.com/v1 PrometheusRule", cr["apiVersion"], cr["kind"])
	}
	spec, _ := cr["spec"].(map[string]any)
	if !reflect.DeepEqual(plain["groups"], spec["groups"]) {
		t.Errorf("prometheusrule.yaml's spec.groups differ from rules.yaml's groups: copy them over")
	}
}

// grafanaVars are the dashboard's variables, replaced by sample values
// before parsing (as Grafana interpolates them before querying).
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$namespace", "yarnfed")

// TestMonitoringDashboard: deploy/monitoring/dashboard.json is a Grafana
// dashboard whose every query (panel targets, and the label_values
// variable) parses as PromQL once its variables are filled in, names only
// metrics and labels cmd/yarnfed exports, and covers mustCover.
func TestMonitoringDashboard(t *testing.T) {
	ex := exportedMetrics(t)
	b, err := os.ReadFile(monitoringFile(t, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource *struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	if dash.UID == "" || dash.Title == "" {
		t.Error("dashboard.json: no uid or title")
	}
	vars := map[string]bool{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		q := ""
		switch x := v.Query.(type) {
		case string:
			q = x
		case map[string]any:
			q, _ = x["query"].(string)
		}
		m := regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`).FindStringSubmatch(q)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(<selector>, <label>)", v.Name, q)
			continue
		}
		checkExpr(t, ex, "variable "+v.Name, fmt.Sprintf("count by (%s) (%s)", m[2], m[1]))
	}
	for _, want := range []string{"datasource", "namespace"} {
		if !vars[want] {
			t.Errorf("dashboard.json: no variable %s", want)
		}
	}
	covered := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource is not the ${datasource} variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no queries", p.Title)
		}
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, `namespace="$namespace"`) {
				t.Errorf("panel %q query %s: not narrowed to the chosen federation (namespace=\"$namespace\")", p.Title, tg.RefID)
			}
			expr := grafanaVars.Replace(tg.Expr)
			if strings.Contains(expr, "$") {
				t.Errorf("panel %q query %s: a variable this test does not know: %s", p.Title, tg.RefID, tg.Expr)
				continue
			}
			for _, m := range checkExpr(t, ex, fmt.Sprintf("panel %q query %s", p.Title, tg.RefID), expr) {
				covered[m] = true
			}
		}
	}
	for _, m := range mustCover {
		if !covered[m] {
			t.Errorf("no dashboard panel shows %s", m)
		}
	}
}

// checkScrapedMetrics checks the source scan against a running role's
// metrics endpoint (the drift test calls it for every pod): every yarnfed_
// family the role exposes is one the scan found, of the same type, with no
// label the scan did not see. So the scan cannot miss a metric defined in a
// way it does not read, and the rules' and dashboard's checks rest on what
// the binaries really export.
func checkScrapedMetrics(t *testing.T, who string, body []byte, seen map[string]bool) {
	t.Helper()
	ex := exportedMetrics(t)
	tp := expfmt.NewTextParser(model.UTF8Validation)
	families, err := tp.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("%s: metrics do not parse: %v", who, err)
	}
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	count := 0
	for _, n := range names {
		if !strings.HasPrefix(n, "yarnfed_") {
			continue
		}
		count++
		seen[n] = true
		f := families[n]
		kind := strings.ToLower(f.GetType().String())
		m, ok := ex.metrics[n]
		if !ok {
			matched := false
			for suf, k := range ex.suffixes {
				matched = matched || (strings.HasSuffix(n, suf) && k == kind)
			}
			if !matched {
				t.Errorf("%s exposes %s (%s), which the source scan of cmd/yarnfed did not find (definitions it cannot read: %v)", who, n, kind, ex.unreadable)
			}
			continue
		}
		if m.kind != kind {
			t.Errorf("%s: %s is a %s, the scan says %s (%s)", who, n, kind, m.kind, m.where)
		}
		for _, s := range f.GetMetric() {
			for _, lp := range s.GetLabel() {
				if !m.labels[lp.GetName()] {
					t.Errorf("%s: %s has label %q, which the scan did not find (%s)", who, n, lp.GetName(), m.where)
				}
			}
		}
	}
	if count == 0 {
		t.Errorf("%s exposes no yarnfed_ metric", who)
	}
}
