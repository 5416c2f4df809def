package policies

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// QueueWeight is a stored policy in the string form of Hadoop's
// FederationQueueWeight record, as `routeradmin -policy -l` lists it.
type QueueWeight struct {
	Queue                  string
	RouterWeight           string // "SC-2:0.3,SC-1:0.7" in Hadoop's map order
	AmrmWeight             string
	HeadRoomAlpha          string // String.valueOf(float)
	PolicyManagerClassName string
}

// QueueWeightOf renders a stored weighted policy for listing, exactly as
// Hadoop's router admin does.
func QueueWeightOf(cfg PolicyConfig) (QueueWeight, error) {
	info, err := ParseWeightedPolicyInfo(cfg.Params)
	if err != nil {
		return QueueWeight{}, fmt.Errorf("queue %q: %w", cfg.Queue, err)
	}
	return QueueWeight{
		Queue:                  cfg.Queue,
		RouterWeight:           FormatWeightString(HadoopOrder(info.RouterWeights)),
		AmrmWeight:             FormatWeightString(HadoopOrder(info.AMRMWeights)),
		HeadRoomAlpha:          JavaFloatString(info.HeadroomAlpha),
		PolicyManagerClassName: cfg.Type,
	}, nil
}

// QueuePolicyConfig turns weights saved through the router admin (-s or
// -bs) into the configuration to store: managerType must be one of the
// weighted managers (Hadoop: WeightedLocality, PriorityBroadcast,
// WeightedHome), is stored under its Java class name, and the result must
// build, so nothing unusable reaches the store.
func (r *Registry) QueuePolicyConfig(q QueuePolicy, managerType string, env Env) (PolicyConfig, error) {
	class, err := r.ManagerClass(managerType)
	if err != nil {
		return PolicyConfig{}, err
	}
	if !r.SupportsWeights(class) {
		return PolicyConfig{}, fmt.Errorf("%w: policy manager %s does not support queue weights", ErrInvalidConfig, class)
	}
	cfg := q.Config(class)
	if _, err := r.NewManager(cfg, env); err != nil {
		return PolicyConfig{}, err
	}
	return cfg, nil
}

// QueuePolicy is one queue's weights as the router admin CLI carries them
// (Hadoop FederationQueueWeight): what `routeradmin -policy -s` and the
// batch XML file hold.
type QueuePolicy struct {
	Queue string
	Info  WeightedPolicyInfo
}

// Config turns the queue policy into the stored configuration for manager
// type managerType, with params in Hadoop's WeightedPolicyInfo JSON.
func (q QueuePolicy) Config(managerType string) PolicyConfig {
	return PolicyConfig{Queue: q.Queue, Type: managerType, Params: q.Info.MarshalHadoopJSON()}
}

// weightSumTolerance is Hadoop's tolerance when it checks that the ratios
// of a weight list add up to 1 (FederationQueueWeight).
const weightSumTolerance = 1e-6

// javaSplit splits like Java's String.split with a literal separator and
// limit 0: trailing empty strings are dropped, but "" yields [""].
func javaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	n := len(parts)
	for n > 0 && parts[n-1] == "" {
		n--
	}
	if n == 0 {
		if s == "" {
			return []string{""}
		}
		return nil
	}
	return parts[:n]
}

// ParsePolicySaveString parses the argument of `yarn routeradmin -policy -s`:
// "queue;routerWeights;amrmWeights;headroomAlpha", each weight list
// "SC-1:0.7,SC-2:0.3" summing to 1 (within 1e-6), headroomAlpha in [0, 1].
func ParsePolicySaveString(s string) (QueuePolicy, error) {
	items := javaSplit(s, ";")
	if len(items) != 4 {
		return QueuePolicy{}, fmt.Errorf("%w: policy: want 4 ';'-separated fields "+
			"(queue;router weights;amrm weights;headroomAlpha, e.g. root.a;SC-1:0.7,SC-2:0.3;SC-1:0.6,SC-2:0.4;1.0), got %d",
			ErrInvalidConfig, len(items))
	}
	queue := strings.TrimSpace(items[0])
	if queue == "" {
		return QueuePolicy{}, fmt.Errorf("%w: queue: empty", ErrInvalidConfig)
	}
	router, err := ParseWeightString("routerPolicyWeights", items[1])
	if err != nil {
		return QueuePolicy{}, err
	}
	amrm, err := ParseWeightString("amrmPolicyWeights", items[2])
	if err != nil {
		return QueuePolicy{}, err
	}
	alpha, err := parseHeadroomAlpha(items[3])
	if err != nil {
		return QueuePolicy{}, err
	}
	q := QueuePolicy{Queue: queue, Info: WeightedPolicyInfo{RouterWeights: router, AMRMWeights: amrm, HeadroomAlpha: alpha}}
	if err := q.Info.Validate(); err != nil {
		return QueuePolicy{}, err
	}
	return q, nil
}

func parseHeadroomAlpha(s string) (float32, error) {
	if strings.TrimSpace(s) == "" {
		return 0, fmt.Errorf("%w: headroomAlpha: empty", ErrInvalidConfig)
	}
	v, err := parseJavaFloat(s)
	if err != nil {
		return 0, fmt.Errorf("%w: headroomAlpha: %v", ErrInvalidConfig, err)
	}
	if f := float64(v); math.IsNaN(f) || f < 0 || f > 1 {
		return 0, fmt.Errorf("%w: headroomAlpha: %s is not between 0 and 1", ErrInvalidConfig, strings.TrimSpace(s))
	}
	return v, nil
}

// ParseWeightString parses a "SC-1:0.7,SC-2:0.3" weight list as Hadoop's
// router admin does, including its rule that the weights sum to 1. field
// names the list in errors.
func ParseWeightString(field, s string) ([]Weight, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: %s: empty", ErrInvalidConfig, field)
	}
	var out []Weight
	sum := 0.0
	for _, item := range javaSplit(s, ",") {
		kv := javaSplit(item, ":")
		if len(kv) != 2 {
			return nil, fmt.Errorf("%w: %s: %q is not of the form SubClusterId:weight", ErrInvalidConfig, field, truncate(item, 64))
		}
		id := SubClusterID(strings.TrimSpace(kv[0]))
		if id == "" {
			return nil, fmt.Errorf("%w: %s: empty sub-cluster id in %q", ErrInvalidConfig, field, truncate(item, 64))
		}
		// Hadoop sums the ratios as doubles before storing floats.
		d, err := strconv.ParseFloat(stripJavaSuffix(kv[1]), 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %s[%s]: %q is not a number", ErrInvalidConfig, field, id, truncate(kv[1], 32))
		}
		if math.IsNaN(d) || math.IsInf(d, 0) || d < 0 {
			return nil, fmt.Errorf("%w: %s[%s]: weight %s must be a finite number >= 0", ErrInvalidConfig, field, id, strings.TrimSpace(kv[1]))
		}
		for _, w := range out {
			if w.ID == id {
				return nil, fmt.Errorf("%w: %s: duplicate sub-cluster id %q", ErrInvalidConfig, field, id)
			}
		}
		sum += d
		out = append(out, Weight{ID: id, Value: float32(d)})
	}
	if math.Abs(sum-1) >= weightSumTolerance {
		return nil, fmt.Errorf("%w: %s: weights sum to %s, must sum to 1", ErrInvalidConfig, field, strconv.FormatFloat(sum, 'g', -1, 64))
	}
	return out, nil
}

// stripJavaSuffix trims whitespace and one Java type suffix (f, F, d, D),
// which Double.valueOf and Float.parseFloat accept.
func stripJavaSuffix(s string) string {
	t := strings.TrimSpace(s)
	if n := len(t); n > 1 && strings.IndexByte("fFdD", t[n-1]) >= 0 {
		t = t[:n-1]
	}
	return t
}

// FormatWeightString writes ws as "SC-1:0.7,SC-2:0.3" in slice order with
// Java float text. Pass HadoopOrder(ws) to match `routeradmin -policy -l`.
func FormatWeightString(ws []Weight) string {
	var b strings.Builder
	for i, w := range ws {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(string(w.ID))
		b.WriteByte(':')
		b.WriteString(JavaFloatString(w.Value))
	}
	return b.String()
}

// The batch file of `routeradmin -policy -bs --format xml -f FILE`.
type xmlFederationWeights struct {
	XMLName xml.Name    `xml:"federationWeights"`
	Weights []xmlWeight `xml:"weight"`
	// Hadoop finds <queue> elements at any depth; accept them without the
	// <weight> wrapper too.
	Queues []xmlQueue `xml:"queue"`
}

type xmlWeight struct {
	Queues []xmlQueue `xml:"queue"`
}

type xmlQueue struct {
	Name                *string     `xml:"name"`
	AMRMPolicyWeights   *xmlWeights `xml:"amrmPolicyWeights"`
	RouterPolicyWeights *xmlWeights `xml:"routerPolicyWeights"`
	HeadroomAlpha       *string     `xml:"headroomAlpha"`
}

type xmlWeights struct {
	Items []xmlSubClusterIDInfo `xml:"subClusterIdInfo"`
}

type xmlSubClusterIDInfo struct {
	ID     *string `xml:"id"`
	Weight *string `xml:"weight"`
}

// maxBatchXML bounds the batch file we read.
const maxBatchXML = 16 << 20

// ParseBatchXML reads a federation-weights.xml batch file. Each queue is
// validated as `-policy -s` validates one (weights sum to 1, alpha in
// [0, 1]); an error names the queue and the field.
func ParseBatchXML(r io.Reader) ([]QueuePolicy, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxBatchXML+1))
	if err != nil {
		return nil, fmt.Errorf("%w: batch xml: %v", ErrInvalidConfig, err)
	}
	if len(data) > maxBatchXML {
		return nil, fmt.Errorf("%w: batch xml: larger than %d bytes", ErrInvalidConfig, maxBatchXML)
	}
	var doc xmlFederationWeights
	dec := xml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: batch xml: malformed: %v", ErrInvalidConfig, err)
	}
	var queues []xmlQueue
	for _, w := range doc.Weights {
		queues = append(queues, w.Queues...)
	}
	queues = append(queues, doc.Queues...)
	if len(queues) == 0 {
		return nil, fmt.Errorf("%w: batch xml: no <queue> elements under <federationWeights>", ErrInvalidConfig)
	}
	out := make([]QueuePolicy, 0, len(queues))
	seen := make(map[string]bool, len(queues))
	for i, q := range queues {
		where := fmt.Sprintf("batch xml: queue[%d]", i)
		if q.Name == nil || strings.TrimSpace(*q.Name) == "" {
			return nil, fmt.Errorf("%s: %w: missing <name>", where, ErrInvalidConfig)
		}
		name := strings.TrimSpace(*q.Name)
		where = fmt.Sprintf("batch xml: queue %q", name)
		if seen[name] {
			return nil, fmt.Errorf("%s: %w: queue defined twice", where, ErrInvalidConfig)
		}
		seen[name] = true
		router, err := xmlWeightList(q.RouterPolicyWeights, "routerPolicyWeights")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		amrm, err := xmlWeightList(q.AMRMPolicyWeights, "amrmPolicyWeights")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if q.HeadroomAlpha == nil {
			return nil, fmt.Errorf("%s: %w: missing <headroomAlpha>", where, ErrInvalidConfig)
		}
		alpha, err := parseHeadroomAlpha(*q.HeadroomAlpha)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		qp := QueuePolicy{Queue: name, Info: WeightedPolicyInfo{RouterWeights: router, AMRMWeights: amrm, HeadroomAlpha: alpha}}
		if err := qp.Info.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		out = append(out, qp)
	}
	return out, nil
}

func xmlWeightList(w *xmlWeights, field string) ([]Weight, error) {
	if w == nil {
		return nil, fmt.Errorf("%w: missing <%s>", ErrInvalidConfig, field)
	}
	parts := make([]string, 0, len(w.Items))
	for i, it := range w.Items {
		if it.ID == nil || it.Weight == nil {
			return nil, fmt.Errorf("%w: %s: subClusterIdInfo[%d] needs <id> and <weight>", ErrInvalidConfig, field, i)
		}
		id, wt := strings.TrimSpace(*it.ID), strings.TrimSpace(*it.Weight)
		if strings.ContainsAny(id, ",:") || strings.ContainsAny(wt, ",:") {
			return nil, fmt.Errorf("%w: %s: subClusterIdInfo[%d]: ',' and ':' are not allowed in <id> or <weight>", ErrInvalidConfig, field, i)
		}
		parts = append(parts, id+":"+wt)
	}
	// Hadoop joins the entries into "id:weight,..." and validates that
	// string; doing the same keeps the rules (and the sum check) identical.
	return ParseWeightString(field, strings.Join(parts, ","))
}

// MarshalBatchXML writes queue policies as a federation-weights.xml batch
// file that ParseBatchXML and Hadoop's RouterCLI both read.
func MarshalBatchXML(qs []QueuePolicy) []byte {
	var b bytes.Buffer
	b.WriteString("<federationWeights>\n")
	writeList := func(tag string, ws []Weight) {
		b.WriteString("      <" + tag + ">\n")
		for _, w := range ws {
			b.WriteString("        <subClusterIdInfo>\n          <id>")
			_ = xml.EscapeText(&b, []byte(w.ID))
			b.WriteString("</id>\n          <weight>" + JavaFloatString(w.Value) + "</weight>\n        </subClusterIdInfo>\n")
		}
		b.WriteString("      </" + tag + ">\n")
	}
	for _, q := range qs {
		b.WriteString("  <weight>\n    <queue>\n      <name>")
		_ = xml.EscapeText(&b, []byte(q.Queue))
		b.WriteString("</name>\n")
		writeList("amrmPolicyWeights", q.Info.AMRMWeights)
		writeList("routerPolicyWeights", q.Info.RouterWeights)
		b.WriteString("      <headroomAlpha>" + JavaFloatString(q.Info.HeadroomAlpha) + "</headroomAlpha>\n")
		b.WriteString("    </queue>\n  </weight>\n")
	}
	b.WriteString("</federationWeights>\n")
	return b.Bytes()
}
