package policies

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

type fakeResolver struct {
	nodes map[string]SubClusterID
	racks map[string][]SubClusterID
}

func (r fakeResolver) SubClusterForNode(n string) (SubClusterID, bool) {
	id, ok := r.nodes[n]
	return id, ok
}
func (r fakeResolver) SubClustersForRack(n string) []SubClusterID { return r.racks[n] }

type fakeReservations map[string]SubClusterID

func (f fakeReservations) ReservationHome(_ context.Context, id string) (SubClusterID, error) {
	if h, ok := f[id]; ok {
		return h, nil
	}
	return "", errors.New("no such reservation")
}

func running(ids ...SubClusterID) []SubCluster {
	var scs []SubCluster
	for _, id := range ids {
		scs = append(scs, SubCluster{ID: id, State: StateRunning})
	}
	return scs
}

func weightsJSON(router, amrm string, alpha float32) []byte {
	parse := func(s string) []Weight {
		if s == "" {
			return nil
		}
		var ws []Weight
		for _, item := range javaSplit(s, ",") {
			kv := javaSplit(item, ":")
			v, err := parseJavaFloat(kv[1])
			if err != nil {
				panic(err)
			}
			ws = append(ws, Weight{ID: SubClusterID(kv[0]), Value: v})
		}
		return ws
	}
	info := WeightedPolicyInfo{RouterWeights: parse(router), AMRMWeights: parse(amrm), HeadroomAlpha: alpha}
	return info.MarshalHadoopJSON()
}

func newRouter(t *testing.T, typ string, params []byte, env Env) RouterPolicy {
	t.Helper()
	if env.Rand == nil {
		env.Rand = NewSeededSource(1)
	}
	p, err := NewDefaultRegistry().NewRouterPolicy(typ, params, env)
	if err != nil {
		t.Fatalf("NewRouterPolicy(%s): %v", typ, err)
	}
	return p
}

func countPicks(t *testing.T, p RouterPolicy, snap *Snapshot, app AppSubmission, bl []SubClusterID, n int) map[SubClusterID]int {
	t.Helper()
	got := map[SubClusterID]int{}
	for i := 0; i < n; i++ {
		a := app
		id, err := p.HomeSubCluster(context.Background(), snap, &a, bl)
		if err != nil {
			t.Fatal(err)
		}
		got[id]++
	}
	return got
}

func TestWeightedRandomRouter(t *testing.T) {
	snap := NewSnapshot(running("SC-1", "SC-2", "SC-3", "SC-4"))
	p := newRouter(t, "WeightedRandom", weightsJSON("SC-1:0.7,SC-2:0.3,SC-3:0", "", 0), Env{})
	got := countPicks(t, p, snap, AppSubmission{Queue: "q"}, nil, 20000)
	if got["SC-3"] != 0 || got["SC-4"] != 0 {
		t.Errorf("weight-0 or unlisted sub-cluster picked: %v", got)
	}
	if frac := float64(got["SC-1"]) / 20000; frac < 0.68 || frac > 0.72 {
		t.Errorf("SC-1 share %.3f, want ~0.7 (%v)", frac, got)
	}
	got = countPicks(t, p, snap, AppSubmission{}, []SubClusterID{"SC-1"}, 200)
	if got["SC-2"] != 200 {
		t.Errorf("with SC-1 blacklisted: %v, want all SC-2", got)
	}
	_, err := p.HomeSubCluster(context.Background(), snap, &AppSubmission{}, []SubClusterID{"SC-1", "SC-2"})
	if !errors.Is(err, ErrNoActiveSubCluster) {
		t.Errorf("only weight-0 left: err = %v", err)
	}
}

func TestUniformRandomRouterCoversActive(t *testing.T) {
	snap := NewSnapshot(append(running("SC-1", "SC-2", "SC-3"), SubCluster{ID: "SC-4", State: StateLost}))
	p := newRouter(t, "UniformRandom", nil, Env{})
	got := countPicks(t, p, snap, AppSubmission{}, []SubClusterID{"SC-2"}, 3000)
	if len(got) != 2 || got["SC-1"] < 1300 || got["SC-3"] < 1300 {
		t.Errorf("picks = %v, want SC-1 and SC-3 about evenly", got)
	}
}

func TestPriorityRouter(t *testing.T) {
	snap := NewSnapshot(append(running("SC-1", "SC-2", "SC-3", "SC-4"), SubCluster{ID: "SC-9", State: StateUnhealthy}))
	p := newRouter(t, "Priority", weightsJSON("SC-1:0.2,SC-2:0.5,SC-3:0.5,SC-4:0,SC-9:0.9", "", 0), Env{})
	tests := []struct {
		name string
		bl   []SubClusterID
		want SubClusterID
	}{
		{"highest active, tie to smallest id", nil, "SC-2"},
		{"next when blacklisted", []SubClusterID{"SC-2"}, "SC-3"},
		{"lowest positive", []SubClusterID{"SC-2", "SC-3"}, "SC-1"},
	}
	for _, tt := range tests {
		id, err := p.HomeSubCluster(context.Background(), snap, &AppSubmission{}, tt.bl)
		if err != nil || id != tt.want {
			t.Errorf("%s: got %q, %v; want %s", tt.name, id, err, tt.want)
		}
	}
	if _, err := p.HomeSubCluster(context.Background(), snap, &AppSubmission{}, []SubClusterID{"SC-1", "SC-2", "SC-3"}); !errors.Is(err, ErrNoActiveSubCluster) {
		t.Errorf("only weight 0 left: err = %v", err)
	}
}

func TestHashBasedRouterMatchesJava(t *testing.T) {
	snap := NewSnapshot(running("SC-4", "SC-2", "SC-3", "SC-1"))
	p := newRouter(t, "HashBased", nil, Env{})
	tests := []struct {
		queue string
		bl    []SubClusterID
		want  SubClusterID
	}{
		// "default".hashCode() = 1544803905; % 4 = 1.
		{"default", nil, "SC-2"},
		{"", nil, "SC-2"}, // empty queue means "default"
		// "root.a".hashCode() = -925313451; Java % 4 = -3; abs = 3.
		{"root.a", nil, "SC-4"},
		// Blacklisting SC-2 leaves [SC-1 SC-3 SC-4]; 1544803905 % 3 = 0.
		{"default", []SubClusterID{"SC-2"}, "SC-1"},
	}
	for _, tt := range tests {
		for i := 0; i < 3; i++ { // same queue, same answer
			id, err := p.HomeSubCluster(context.Background(), snap, &AppSubmission{Queue: tt.queue}, tt.bl)
			if err != nil || id != tt.want {
				t.Errorf("queue %q bl %v: got %q, %v; want %s", tt.queue, tt.bl, id, err, tt.want)
			}
		}
	}
}

func TestLoadBasedRouter(t *testing.T) {
	scs := running("SC-1", "SC-2", "SC-3")
	scs[0].Capability.AvailableMB = 4096
	scs[1].Capability.AvailableMB = 8192
	scs[2].Capability.AvailableMB = 1 << 20
	snap := NewSnapshot(scs)
	p := newRouter(t, "LoadBased", weightsJSON("SC-1:1,SC-2:1,SC-3:0", "", 0), Env{})
	id, err := p.HomeSubCluster(context.Background(), snap, &AppSubmission{}, nil)
	if err != nil || id != "SC-2" {
		t.Errorf("got %q, %v; want SC-2 (most memory among enabled)", id, err)
	}
	id, err = p.HomeSubCluster(context.Background(), snap, &AppSubmission{}, []SubClusterID{"SC-2"})
	if err != nil || id != "SC-1" {
		t.Errorf("blacklisted SC-2: got %q, %v; want SC-1", id, err)
	}
	_, err = NewDefaultRegistry().NewRouterPolicy("LoadBased", weightsJSON("SC-1:0.5,SC-2:0.5", "", 0), Env{})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("fractional weights: err = %v, want ErrInvalidConfig", err)
	}
}

func TestLocalityRouter(t *testing.T) {
	snap := NewSnapshot(append(running("SC-1", "SC-2", "SC-3"), SubCluster{ID: "SC-4", State: StateLost}))
	res := fakeResolver{
		nodes: map[string]SubClusterID{"n1": "SC-1", "n3": "SC-3", "n4": "SC-4"},
		racks: map[string][]SubClusterID{"r1": {"SC-1"}, "r3": {"SC-3"}, "r4": {"SC-4"}},
	}
	p := newRouter(t, "Locality", weightsJSON("SC-1:0.5,SC-2:0.5,SC-3:0,SC-4:1", "", 0), Env{Resolver: res})
	am := func(node, rack string) []ResourceRequest {
		return []ResourceRequest{
			{ResourceName: node, NumContainers: 1, Priority: 5},
			{ResourceName: rack, NumContainers: 1, Priority: 5},
			{ResourceName: ResourceAny, NumContainers: 1, Priority: 5, Capability: Resource{MemoryMB: 2048, VCores: 1}},
		}
	}
	app := &AppSubmission{Queue: "q", AMResourceRequests: am("n1", "r1")}
	if id, err := p.HomeSubCluster(context.Background(), snap, app, nil); err != nil || id != "SC-1" {
		t.Errorf("node on SC-1: got %q, %v", id, err)
	}
	if len(app.AMResourceRequests) != 3 {
		t.Errorf("a local placement must not rewrite the AM requests")
	}
	for _, tt := range []struct {
		name       string
		node, rack string
		bl         []SubClusterID
	}{
		{"node's sub-cluster blacklisted", "n1", "r1", []SubClusterID{"SC-1"}},
		{"node's sub-cluster has weight 0", "n3", "r3", nil},
		{"node's sub-cluster inactive", "n4", "r4", nil},
		{"unknown node", "nx", "r1", nil},
	} {
		app := &AppSubmission{Queue: "q", AMResourceRequests: am(tt.node, tt.rack)}
		id, err := p.HomeSubCluster(context.Background(), snap, app, tt.bl)
		if err != nil || (id != "SC-1" && id != "SC-2") || containsID(tt.bl, id) {
			t.Errorf("%s: got %q, %v; want a weighted-random pick", tt.name, id, err)
		}
		if len(app.AMResourceRequests) != 1 || !app.AMResourceRequests[0].IsAny() ||
			!app.AMResourceRequests[0].RelaxLocality || app.AMResourceRequests[0].Capability.MemoryMB != 2048 {
			t.Errorf("%s: fallback must rewrite the AM request to one relaxed ANY, got %+v", tt.name, app.AMResourceRequests)
		}
	}
	_, err := p.HomeSubCluster(context.Background(), snap, &AppSubmission{AMResourceRequests: am("n1", "r1")[:2]}, nil)
	if !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("two AM requests: err = %v, want ErrInvalidRequest", err)
	}
}

func containsID(ids []SubClusterID, id SubClusterID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func TestRejectRouter(t *testing.T) {
	p := newRouter(t, "Reject", nil, Env{})
	_, err := p.HomeSubCluster(context.Background(), NewSnapshot(running("SC-1")), &AppSubmission{Queue: "root.x"}, nil)
	if !errors.Is(err, ErrRejected) {
		t.Errorf("err = %v", err)
	}
	if _, err := p.ReservationHome(context.Background(), NewSnapshot(running("SC-1")), ""); !errors.Is(err, ErrRejected) {
		t.Errorf("reservation: err = %v", err)
	}
}

func TestRouterWeightValidation(t *testing.T) {
	reg := NewDefaultRegistry()
	for _, typ := range []string{"WeightedRandom", "Priority", "Locality", "LoadBased"} {
		for name, params := range map[string][]byte{
			"empty params":   nil,
			"no weights":     []byte(`{"headroomAlpha":"1.0"}`),
			"all zero":       weightsJSON("SC-1:0,SC-2:0", "", 0),
			"empty id":       weightsJSON(":1", "", 0),
			"malformed json": []byte(`{"routerPolicyWeights":`),
		} {
			if _, err := reg.NewRouterPolicy(typ, params, Env{}); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%s with %s: err = %v, want ErrInvalidConfig", typ, name, err)
			}
		}
	}
	// Policies that ignore weights accept anything, as in Hadoop.
	for _, typ := range []string{"UniformRandom", "HashBased", "Reject"} {
		if _, err := reg.NewRouterPolicy(typ, []byte("garbage"), Env{}); err != nil {
			t.Errorf("%s: %v", typ, err)
		}
	}
}

func TestRouterReservationWithoutResolver(t *testing.T) {
	p := newRouter(t, "UniformRandom", nil, Env{})
	_, err := p.HomeSubCluster(context.Background(), NewSnapshot(running("SC-1")), &AppSubmission{ReservationID: "r1"}, nil)
	if !errors.Is(err, ErrReservation) {
		t.Errorf("err = %v", err)
	}
	p = newRouter(t, "HashBased", nil, Env{Reservations: fakeReservations{"r1": "SC-2"}})
	id, err := p.HomeSubCluster(context.Background(), NewSnapshot(running("SC-1", "SC-2")), &AppSubmission{ReservationID: "r1"}, nil)
	if err != nil || id != "SC-2" {
		t.Errorf("got %q, %v", id, err)
	}
}

func TestSnapshotCacheFollowsMembership(t *testing.T) {
	p := newRouter(t, "Priority", weightsJSON("SC-1:0.9,SC-2:0.1", "", 0), Env{})
	s1 := NewSnapshot(running("SC-1", "SC-2"))
	s2 := NewSnapshot(append(running("SC-2"), SubCluster{ID: "SC-1", State: StateLost}))
	for i, tt := range []struct {
		snap *Snapshot
		want SubClusterID
	}{{s1, "SC-1"}, {s2, "SC-2"}, {s1, "SC-1"}} {
		id, err := p.HomeSubCluster(context.Background(), tt.snap, &AppSubmission{}, nil)
		if err != nil || id != tt.want {
			t.Errorf("step %d: got %q, %v; want %s", i, id, err, tt.want)
		}
	}
}

func ExampleRegistry_NewManager() {
	reg := NewDefaultRegistry()
	q, _ := ParsePolicySaveString("root.a;SC-1:0.7,SC-2:0.3;SC-1:0.6,SC-2:0.4;1.0")
	m, err := reg.NewManager(q.Config("WeightedLocality"), Env{Rand: NewSeededSource(1)})
	if err != nil {
		panic(err)
	}
	snap := NewSnapshot(running("SC-1", "SC-2"))
	home, _ := m.Router().HomeSubCluster(context.Background(), snap, &AppSubmission{Queue: "root.a"}, []SubClusterID{"SC-2"})
	fmt.Println(m.Type())
	fmt.Println(home)
	// Output:
	// org.apache.hadoop.yarn.server.federation.policies.manager.WeightedLocalityPolicyManager
	// SC-1
}

func TestWeightedRandomBlacklistPaths(t *testing.T) {
	snap := NewSnapshot(running("SC-1", "SC-2", "SC-3", "SC-4"))
	p := newRouter(t, "WeightedRandom", weightsJSON("SC-1:0.1,SC-2:0.2,SC-3:0.3,SC-4:0.4", "", 0), Env{})
	tests := []struct {
		name string
		bl   []SubClusterID
		want map[SubClusterID]float64 // expected shares
	}{
		// SC-1 carries 10% of the weight: rejection sampling.
		{"light blacklist", []SubClusterID{"SC-1"}, map[SubClusterID]float64{"SC-2": 2.0 / 9, "SC-3": 3.0 / 9, "SC-4": 4.0 / 9}},
		// 70% blacklisted: linear scan.
		{"heavy blacklist", []SubClusterID{"SC-3", "SC-4"}, map[SubClusterID]float64{"SC-1": 1.0 / 3, "SC-2": 2.0 / 3}},
		{"unknown ids in blacklist", []SubClusterID{"SC-9", "SC-9"}, map[SubClusterID]float64{"SC-1": .1, "SC-2": .2, "SC-3": .3, "SC-4": .4}},
	}
	for _, tt := range tests {
		const n = 20000
		got := countPicks(t, p, snap, AppSubmission{}, tt.bl, n)
		for sc, share := range tt.want {
			if f := float64(got[sc]) / n; f < share-0.02 || f > share+0.02 {
				t.Errorf("%s: %s share %.3f, want %.3f (%v)", tt.name, sc, f, share, got)
			}
		}
		for _, b := range tt.bl {
			if got[b] != 0 {
				t.Errorf("%s: blacklisted %s picked", tt.name, b)
			}
		}
	}
}

func TestCheckKnown(t *testing.T) {
	q, err := ParsePolicySaveString("root.a;SC-1:0.5,SC-2:0.5;SC-1:0.5,SC-9:0.5;1")
	if err != nil {
		t.Fatal(err)
	}
	snap := NewSnapshot(running("SC-1", "SC-2"))
	err = q.Info.CheckKnown(func(id SubClusterID) bool { _, ok := snap.Get(id); return ok })
	if !errors.Is(err, ErrUnknownSubCluster) || err.Error() != `policies: unknown sub-cluster: amrmPolicyWeights: sub-cluster "SC-9"` {
		t.Errorf("err = %v", err)
	}
}
