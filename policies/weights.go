package policies

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Weight is one sub-cluster's weight in a WeightedPolicyInfo.
type Weight struct {
	ID    SubClusterID
	Value float32
}

// WeightedPolicyInfo is Hadoop's policy parameter object
// (FED/policies/dao/WeightedPolicyInfo.java): router weights, AMRMProxy
// weights and headroomAlpha. Hadoop keeps weights as Java floats; so do we,
// so that values round-trip to the same text.
//
// The weight slices keep insertion order (the order of the JSON document or
// of the admin string); MarshalHadoopJSON reorders them the way a Java
// HashMap iterates so the bytes match what Hadoop writes.
type WeightedPolicyInfo struct {
	RouterWeights []Weight
	AMRMWeights   []Weight
	HeadroomAlpha float32
}

// RouterWeight returns the router weight of id.
func (w *WeightedPolicyInfo) RouterWeight(id SubClusterID) (float32, bool) {
	return lookupWeight(w.RouterWeights, id)
}

// AMRMWeight returns the AMRMProxy weight of id.
func (w *WeightedPolicyInfo) AMRMWeight(id SubClusterID) (float32, bool) {
	return lookupWeight(w.AMRMWeights, id)
}

func lookupWeight(ws []Weight, id SubClusterID) (float32, bool) {
	for _, x := range ws {
		if x.ID == id {
			return x.Value, true
		}
	}
	return 0, false
}

// Equal reports whether two infos hold the same weights and alpha,
// regardless of entry order.
func (w *WeightedPolicyInfo) Equal(o *WeightedPolicyInfo) bool {
	if w == nil || o == nil {
		return w == o
	}
	return sameWeights(w.RouterWeights, o.RouterWeights) &&
		sameWeights(w.AMRMWeights, o.AMRMWeights) &&
		sameFloat(w.HeadroomAlpha, o.HeadroomAlpha)
}

func sameFloat(a, b float32) bool {
	return a == b || (a != a && b != b) // NaN equals NaN for config comparison
}

func sameWeights(a, b []Weight) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		y, ok := lookupWeight(b, x.ID)
		if !ok || !sameFloat(x.Value, y) {
			return false
		}
	}
	return true
}

// Validate rejects values no policy can use: negative, NaN or infinite
// weights, empty or duplicate sub-cluster ids, and a headroomAlpha outside
// [0, 1]. Policy-specific rules (non-empty router weights, not all zero,
// 0/1 only) are checked by the policies themselves.
func (w *WeightedPolicyInfo) Validate() error {
	if err := validateWeights("routerPolicyWeights", w.RouterWeights); err != nil {
		return err
	}
	if err := validateWeights("amrmPolicyWeights", w.AMRMWeights); err != nil {
		return err
	}
	a := float64(w.HeadroomAlpha)
	if math.IsNaN(a) || a < 0 || a > 1 {
		return fmt.Errorf("%w: headroomAlpha: %s is not between 0 and 1", ErrInvalidConfig, JavaFloatString(w.HeadroomAlpha))
	}
	return nil
}

func validateWeights(field string, ws []Weight) error {
	seen := make(map[SubClusterID]struct{}, len(ws))
	for _, x := range ws {
		if _, dup := seen[x.ID]; dup {
			return fmt.Errorf("%w: %s: duplicate sub-cluster id %q", ErrInvalidConfig, field, x.ID)
		}
		seen[x.ID] = struct{}{}
		v := float64(x.Value)
		switch {
		case math.IsNaN(v):
			return fmt.Errorf("%w: %s[%s]: weight is NaN", ErrInvalidConfig, field, x.ID)
		case math.IsInf(v, 0):
			return fmt.Errorf("%w: %s[%s]: weight is infinite", ErrInvalidConfig, field, x.ID)
		case v < 0:
			return fmt.Errorf("%w: %s[%s]: weight %s is negative", ErrInvalidConfig, field, x.ID, JavaFloatString(x.Value))
		}
	}
	return nil
}

// CheckKnown returns an error naming the first weight whose sub-cluster id
// known does not accept. Use it where an unknown id is an operator mistake
// (saving a policy), not when loading a stored one (a sub-cluster may
// register later).
func (w *WeightedPolicyInfo) CheckKnown(known func(SubClusterID) bool) error {
	for _, f := range []struct {
		name string
		ws   []Weight
	}{{"routerPolicyWeights", w.RouterWeights}, {"amrmPolicyWeights", w.AMRMWeights}} {
		for _, x := range f.ws {
			if !known(x.ID) {
				return fmt.Errorf("%w: %s: sub-cluster %q", ErrUnknownSubCluster, f.name, x.ID)
			}
		}
	}
	return nil
}

// wpiJSON is the Jersey "mapped" JSON of WeightedPolicyInfo: the root
// element is unwrapped, every scalar is a string, and a Map is an object
// with one "entry" member holding an array of {key, value} (or a bare
// object when the map has a single entry).
type wpiJSON struct {
	RouterPolicyWeights json.RawMessage `json:"routerPolicyWeights"`
	AMRMPolicyWeights   json.RawMessage `json:"amrmPolicyWeights"`
	HeadroomAlpha       json.RawMessage `json:"headroomAlpha"`
}

type entryJSON struct {
	Key *struct {
		ID *string `json:"id"`
	} `json:"key"`
	Value json.RawMessage `json:"value"`
}

// maxPolicyParams bounds the params accepted; Hadoop's ZooKeeper store caps
// a znode at 1 MB, so nothing larger can exist in a real store.
const maxPolicyParams = 1 << 20

// ParseWeightedPolicyInfo decodes Hadoop's WeightedPolicyInfo JSON
// (yarn.federation.policy-manager-params, SubClusterPolicyConfiguration
// params). It accepts quoted or bare numbers, an "entry" that is an array or
// a single object, and null/""/{} for an empty map, as Jersey may write any
// of them. The result is validated (see Validate).
func ParseWeightedPolicyInfo(b []byte) (*WeightedPolicyInfo, error) {
	if len(b) > maxPolicyParams {
		return nil, fmt.Errorf("%w: policy params: %d bytes exceeds the %d byte limit", ErrInvalidConfig, len(b), maxPolicyParams)
	}
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: policy params: empty, expected WeightedPolicyInfo JSON", ErrInvalidConfig)
	}
	if trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: policy params: expected a JSON object", ErrInvalidConfig)
	}
	var raw wpiJSON
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, fmt.Errorf("%w: policy params: malformed JSON: %v", ErrInvalidConfig, err)
	}
	info := &WeightedPolicyInfo{}
	var err error
	if info.RouterWeights, err = parseWeightMap("routerPolicyWeights", raw.RouterPolicyWeights); err != nil {
		return nil, err
	}
	if info.AMRMWeights, err = parseWeightMap("amrmPolicyWeights", raw.AMRMPolicyWeights); err != nil {
		return nil, err
	}
	if !isEmptyJSON(raw.HeadroomAlpha) {
		s, err := scalarText(raw.HeadroomAlpha)
		if err != nil {
			return nil, fmt.Errorf("%w: headroomAlpha: %v", ErrInvalidConfig, err)
		}
		if info.HeadroomAlpha, err = parseJavaFloat(s); err != nil {
			return nil, fmt.Errorf("%w: headroomAlpha: %v", ErrInvalidConfig, err)
		}
	}
	if err := info.Validate(); err != nil {
		return nil, err
	}
	return info, nil
}

func isEmptyJSON(r json.RawMessage) bool {
	t := bytes.TrimSpace(r)
	return len(t) == 0 || string(t) == "null" || string(t) == `""`
}

func parseWeightMap(field string, r json.RawMessage) ([]Weight, error) {
	if isEmptyJSON(r) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: expected an object with an \"entry\" member: %v", ErrInvalidConfig, field, err)
	}
	for k := range m {
		if k != "entry" {
			return nil, fmt.Errorf("%w: %s: unexpected member %q (want \"entry\")", ErrInvalidConfig, field, k)
		}
	}
	ent := bytes.TrimSpace(m["entry"])
	if isEmptyJSON(ent) {
		return nil, nil
	}
	var entries []entryJSON
	switch ent[0] {
	case '[':
		if err := json.Unmarshal(ent, &entries); err != nil {
			return nil, fmt.Errorf("%w: %s.entry: %v", ErrInvalidConfig, field, err)
		}
	case '{':
		var one entryJSON
		if err := json.Unmarshal(ent, &one); err != nil {
			return nil, fmt.Errorf("%w: %s.entry: %v", ErrInvalidConfig, field, err)
		}
		entries = []entryJSON{one}
	default:
		return nil, fmt.Errorf("%w: %s.entry: expected an array or an object", ErrInvalidConfig, field)
	}
	out := make([]Weight, 0, len(entries))
	for i, e := range entries {
		if e.Key == nil || e.Key.ID == nil {
			return nil, fmt.Errorf("%w: %s.entry[%d]: missing key.id", ErrInvalidConfig, field, i)
		}
		id := SubClusterID(*e.Key.ID)
		if isEmptyJSON(e.Value) {
			return nil, fmt.Errorf("%w: %s[%s]: missing value", ErrInvalidConfig, field, id)
		}
		s, err := scalarText(e.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: %s[%s]: %v", ErrInvalidConfig, field, id, err)
		}
		v, err := parseJavaFloat(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %s[%s]: %v", ErrInvalidConfig, field, id, err)
		}
		out = append(out, Weight{ID: id, Value: v})
	}
	return out, nil
}

// scalarText returns the text of a JSON string or number.
func scalarText(r json.RawMessage) (string, error) {
	t := bytes.TrimSpace(r)
	if len(t) > 0 && t[0] == '"' {
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(t, &n); err != nil {
		return "", fmt.Errorf("expected a number or a numeric string, got %s", truncate(string(t), 32))
	}
	return n.String(), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// parseJavaFloat parses the way Java's Float.parseFloat does for the inputs
// Hadoop writes or documents: surrounding whitespace is ignored and a
// trailing f/F/d/D type suffix is allowed.
func parseJavaFloat(s string) (float32, error) {
	t := strings.TrimSpace(s)
	if n := len(t); n > 1 && strings.IndexByte("fFdD", t[n-1]) >= 0 {
		t = t[:n-1]
	}
	v, err := strconv.ParseFloat(t, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", truncate(s, 32))
	}
	return float32(v), nil
}

// JavaFloatString formats f exactly as Java's Float.toString does (what JAXB
// writes for a float): "0.7", "1.0", "1.0E-4", "1.5E7", "NaN", "Infinity".
func JavaFloatString(f float32) string {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case v == 0:
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	a := math.Abs(v)
	if a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, 32)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'e', -1, 32) // e.g. "1e-04", "-1.5e+07"
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// javaStringHash is java.lang.String.hashCode over UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaHashMapOrder returns ws in the order a java.util.HashMap built by
// inserting ws in slice order iterates them, for keys whose hashCode is h.
// HashMap iterates bucket by bucket (bucket = spread(hash) & (capacity-1))
// and, within a bucket, in insertion order; resizing keeps that relative
// order. Capacity starts at 16 and doubles while size > 0.75*capacity.
// (Buckets holding 8+ colliding keys become trees; ids never collide that
// much in practice and we do not model it.)
func javaHashMapOrder(ws []Weight, h func(SubClusterID) int32) []Weight {
	capacity := 16
	for float64(len(ws)) > 0.75*float64(capacity) {
		capacity *= 2
	}
	type item struct {
		w      Weight
		bucket int
	}
	items := make([]item, len(ws))
	for i, w := range ws {
		hc := uint32(h(w.ID))
		spread := hc ^ (hc >> 16)
		items[i] = item{w: w, bucket: int(spread & uint32(capacity-1))}
	}
	slices.SortStableFunc(items, func(a, b item) int { return a.bucket - b.bucket })
	out := make([]Weight, len(ws))
	for i, it := range items {
		out[i] = it.w
	}
	return out
}

// subClusterIDInfoHash is SubClusterIdInfo.hashCode(): commons-lang
// HashCodeBuilder (17, 37) over the id string.
func subClusterIDInfoHash(id SubClusterID) int32 {
	return 17*37 + javaStringHash(string(id))
}

// HadoopOrder returns ws in the order Hadoop iterates its weight map
// (HashMap<SubClusterIdInfo, Float>): the order of its JSON entries and of
// `routeradmin -policy -l` output.
func HadoopOrder(ws []Weight) []Weight {
	return javaHashMapOrder(ws, subClusterIDInfoHash)
}

// MarshalHadoopJSON encodes the info as Hadoop's WeightedPolicyInfo
// toByteBuffer does (Jersey mapped JSON, compact): members in declaration
// order, every number a string in Float.toString form, entries in HashMap
// order, a single-entry map as a bare object. An empty map is omitted,
// which Hadoop reads back as an empty map.
func (w *WeightedPolicyInfo) MarshalHadoopJSON() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	writeMap := func(name string, ws []Weight) {
		if len(ws) == 0 {
			return
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(`"` + name + `":{"entry":`)
		ordered := HadoopOrder(ws)
		if len(ordered) > 1 {
			b.WriteByte('[')
		}
		for i, x := range ordered {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"key":{"id":`)
			writeJSONString(&b, string(x.ID))
			b.WriteString(`},"value":"`)
			b.WriteString(JavaFloatString(x.Value))
			b.WriteString(`"}`)
		}
		if len(ordered) > 1 {
			b.WriteByte(']')
		}
		b.WriteByte('}')
	}
	writeMap("routerPolicyWeights", w.RouterWeights)
	writeMap("amrmPolicyWeights", w.AMRMWeights)
	if !first {
		b.WriteByte(',')
	}
	b.WriteString(`"headroomAlpha":"`)
	b.WriteString(JavaFloatString(w.HeadroomAlpha))
	b.WriteString(`"}`)
	return b.Bytes()
}

func writeJSONString(b *bytes.Buffer, s string) {
	// Jersey writes <, > and & literally; encoding/json would escape them.
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode appends a newline
}
