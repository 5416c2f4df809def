package gpg

import (
	"math"
	"testing"

	"github.com/yarnfed/yarnfed/policies"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestLoadBasedWeightsMatchHadoop(t *testing.T) {
	lb := LoadBasedConfig{PendingMinimum: 100, PendingMaximum: 1000, WeightMinimum: 0, EditMaximum: 3, Scaling: "LINEAR"}
	in := func(pending ...int64) []loadInput {
		var out []loadInput
		for i, p := range pending {
			out = append(out, loadInput{ID: string(rune('A' + i)), Capability: policies.Capability{AppsPending: p}})
		}
		return out
	}
	cases := []struct {
		name  string
		cfg   func(*LoadBasedConfig)
		input []loadInput
		want  Weights
	}{
		{"light load stays uniform", nil, in(10, 100, 0), Weights{"A": 1, "B": 1, "C": 1}},
		{"linear in the band", nil, in(550, 0), Weights{"A": 0.5, "B": 1}},
		{"over maximum gets the minimum", func(c *LoadBasedConfig) { c.WeightMinimum = 0.1 }, in(5000, 0), Weights{"A": 0.1, "B": 1}},
		{"quadratic", func(c *LoadBasedConfig) { c.Scaling = "QUADRATIC" }, in(550, 0), Weights{"A": 0.75, "B": 1}},
		{"log", func(c *LoadBasedConfig) { c.Scaling = "LOG" }, in(101, 0), Weights{"A": 1, "B": 1}},
		{"only edit_maximum are scaled", func(c *LoadBasedConfig) { c.EditMaximum = 1 }, in(550, 5000), Weights{"A": 1, "B": 0}},
		{"all zero resets to one", nil, in(5000, 5000), Weights{"A": 1, "B": 1}},
		{"none scaling", func(c *LoadBasedConfig) { c.Scaling = "NONE" }, in(550, 0), Weights{"A": 1, "B": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := lb
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			got := loadBasedWeights(tc.input, c)
			for id, w := range tc.want {
				if !near(got[id], w) {
					t.Fatalf("%s: got %v, want %v", id, got, tc.want)
				}
			}
		})
	}
}

func TestCapacityWeights(t *testing.T) {
	cases := []struct {
		name  string
		input []loadInput
		want  Weights // normalized
	}{
		{"proportional to headroom", []loadInput{
			{ID: "A", Capability: policies.Capability{AvailableMB: 3000, AvailableVCores: 30}},
			{ID: "B", Capability: policies.Capability{AvailableMB: 1000, AvailableVCores: 10}},
		}, Weights{"A": 0.75, "B": 0.25}},
		{"scarcer resource decides", []loadInput{
			{ID: "A", Capability: policies.Capability{AvailableMB: 1000, AvailableVCores: 1}},
			{ID: "B", Capability: policies.Capability{AvailableMB: 1000, AvailableVCores: 9}},
		}, Weights{"A": 0.1 / 0.6, "B": 0.5 / 0.6}},
		{"pending apps damp", []loadInput{
			{ID: "A", Capability: policies.Capability{AvailableMB: 1000, AvailableVCores: 10, AppsPending: 100}},
			{ID: "B", Capability: policies.Capability{AvailableMB: 1000, AvailableVCores: 10}},
		}, Weights{"A": 1.0 / 3, "B": 2.0 / 3}},
		{"nothing free anywhere resets to uniform", []loadInput{{ID: "A"}, {ID: "B"}}, Weights{"A": 0.5, "B": 0.5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := normalized(capacityWeights(tc.input, 100))
			for id, w := range tc.want {
				if !near(got[id], w) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestStepToward(t *testing.T) {
	cases := []struct {
		name        string
		old, target Weights
		wantChanged bool
		want        Weights
	}{
		{"nothing stored writes the target", nil, Weights{"A": 0.6, "B": 0.4}, true, Weights{"A": 0.6, "B": 0.4}},
		{"below threshold writes nothing", Weights{"A": 0.5, "B": 0.5}, Weights{"A": 0.53, "B": 0.47}, false, Weights{"A": 0.5, "B": 0.5}},
		{"small move goes all the way", Weights{"A": 0.5, "B": 0.5}, Weights{"A": 0.6, "B": 0.4}, true, Weights{"A": 0.6, "B": 0.4}},
		{"big move is bounded by max_step", Weights{"A": 0.5, "B": 0.5}, Weights{"A": 1, "B": 0}, true, Weights{"A": 0.7, "B": 0.3}},
		{"new sub-cluster glides in", Weights{"A": 1}, Weights{"A": 0.5, "B": 0.5}, true, Weights{"A": 0.8, "B": 0.2}},
		{"vanished sub-cluster glides out then drops", Weights{"A": 0.9, "Z": 0.1}, Weights{"A": 1}, true, Weights{"A": 1}},
		{"zero target drains below threshold", Weights{"A": 0.97, "B": 0.03}, Weights{"A": 1, "B": 0}, true, Weights{"A": 1, "B": 0}},
		{"vanished sub-cluster drains below threshold", Weights{"A": 0.97, "Z": 0.03}, Weights{"A": 1}, true, Weights{"A": 1}},
		{"stored zero stays below threshold", Weights{"A": 1, "B": 0}, Weights{"A": 0.97, "B": 0.03}, false, Weights{"A": 1, "B": 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, _ := stepToward(tc.old, tc.target, 0.05, 0.2)
			if changed != tc.wantChanged || len(got) != len(tc.want) {
				t.Fatalf("got %v changed=%v, want %v changed=%v", got, changed, tc.want, tc.wantChanged)
			}
			for id, w := range tc.want {
				if !near(got[id], w) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}
