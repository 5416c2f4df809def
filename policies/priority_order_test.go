package policies

import (
	"slices"
	"testing"
)

// TestPriorityRouterOrderIndependentOfListing: the priority router tries
// sub-clusters from the highest weight down (Hadoop's
// PriorityRouterPolicy picks the maximum), whatever order the weights
// arrive in: ascending, descending, or mixed. TestPriorityRouter's weights
// come out of the parser already near the right order, so a comparator
// that never moves a heavier sub-cluster forward passed it.
func TestPriorityRouterOrderIndependentOfListing(t *testing.T) {
	snap := NewSnapshot(running("SC-1", "SC-2", "SC-3", "SC-4"))
	asc := []Weight{{"SC-1", 0.1}, {"SC-2", 0.2}, {"SC-3", 0.3}, {"SC-4", 0.4}}
	want := []SubClusterID{"SC-4", "SC-3", "SC-2", "SC-1"} // by weight, highest first
	desc := slices.Clone(asc)
	slices.Reverse(desc)
	mixed := []Weight{asc[1], asc[3], asc[0], asc[2]}
	for name, ws := range map[string][]Weight{"ascending": asc, "descending": desc, "mixed": mixed} {
		p := &priority{weights: ws}
		var got []SubClusterID
		var bl []SubClusterID
		for range want {
			id, err := p.choose(snap, "", bl)
			if err != nil {
				t.Fatalf("%s: after %v: %v", name, got, err)
			}
			got = append(got, id)
			bl = append(bl, id)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s listing: tried %v, want %v (highest weight first)", name, got, want)
		}
	}
}
