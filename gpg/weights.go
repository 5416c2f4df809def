package gpg

import (
	"math"
	"slices"
	"sort"

	"github.com/yarnfed/yarnfed/policies"
)

// Weights maps sub-cluster ids to weights.
type Weights map[string]float64

// loadInput is what a global policy knows about one eligible sub-cluster.
type loadInput struct {
	ID string
	// Capability is the RM's clusterMetrics, narrowed by measured capacity
	// when a capacity.Source knows the sub-cluster.
	Capability policies.Capability
}

// capacityWeights is the default global policy: a sub-cluster's share of
// the federation's headroom in its scarcer resource (the smaller of its
// memory share and its vcore share), damped by its pending applications
// so a backlog drains before more work arrives. All zero (nothing free
// anywhere) resets to uniform, as Hadoop's LoadBasedGlobalPolicy does:
// zero everywhere would make a weighted policy refuse every submission.
func capacityWeights(in []loadInput, pendingScale float64) Weights {
	var sumMB, sumVC float64
	for _, x := range in {
		sumMB += float64(max(0, x.Capability.AvailableMB))
		sumVC += float64(max(0, x.Capability.AvailableVCores))
	}
	out := make(Weights, len(in))
	for _, x := range in {
		var share float64
		switch {
		case sumMB > 0 && sumVC > 0:
			share = math.Min(float64(max(0, x.Capability.AvailableMB))/sumMB, float64(max(0, x.Capability.AvailableVCores))/sumVC)
		case sumMB > 0:
			share = float64(max(0, x.Capability.AvailableMB)) / sumMB
		case sumVC > 0:
			share = float64(max(0, x.Capability.AvailableVCores)) / sumVC
		}
		out[x.ID] = share / (1 + float64(max(0, x.Capability.AppsPending))/pendingScale)
	}
	return resetIfAllZero(out)
}

// loadBasedWeights is Hadoop's LoadBasedGlobalPolicy.getTargetWeights:
// uniform 1.0, then the edit_maximum sub-clusters with the most pending
// applications scaled down: pending <= minimum keeps 1, >= maximum gets
// weight_minimum, in between LINEAR/QUADRATIC/LOG of
// val = pending-minimum over maxVal = maximum-minimum, mapped into
// [weight_minimum, 1]. All zero resets to 1.
func loadBasedWeights(in []loadInput, c LoadBasedConfig) Weights {
	out := make(Weights, len(in))
	order := make([]loadInput, len(in))
	copy(order, in)
	// Most pending first; ties by id so a round is reproducible (Hadoop's
	// order among ties is its HashMap's).
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].Capability.AppsPending != order[j].Capability.AppsPending {
			return order[i].Capability.AppsPending > order[j].Capability.AppsPending
		}
		return order[i].ID < order[j].ID
	})
	for _, x := range in {
		out[x.ID] = 1
	}
	for i, x := range order {
		if i >= c.EditMaximum {
			break
		}
		pending := x.Capability.AppsPending
		switch {
		case pending <= int64(c.PendingMinimum):
		case pending < int64(c.PendingMaximum):
			val := float64(pending - int64(c.PendingMinimum))
			maxVal := float64(c.PendingMaximum - c.PendingMinimum)
			w := 1.0
			switch c.Scaling {
			case "LINEAR":
				w = (maxVal - val) / maxVal
			case "QUADRATIC":
				w = (maxVal*maxVal - val*val) / (maxVal * maxVal)
			case "LOG":
				w = (math.Log(maxVal) - math.Log(val)) / math.Log(maxVal)
			}
			out[x.ID] = w*(1-c.WeightMinimum) + c.WeightMinimum
		default:
			out[x.ID] = c.WeightMinimum
		}
	}
	return resetIfAllZero(out)
}

func resetIfAllZero(w Weights) Weights {
	for _, v := range w {
		if v > 0 {
			return w
		}
	}
	for id := range w {
		w[id] = 1
	}
	return w
}

// normalized returns w scaled to sum 1 (nil if it sums to 0). Weighted
// policies use only ratios, so this changes no routing decision and makes
// weights of different policies and rounds comparable.
func normalized(w Weights) Weights {
	var sum float64
	for _, v := range w {
		sum += max(0, v)
	}
	if sum <= 0 {
		return nil
	}
	out := make(Weights, len(w))
	for id, v := range w {
		out[id] = max(0, v) / sum
	}
	return out
}

// stepToward moves the stored weights old toward target (both
// normalized; old nil when none are stored). The distance is the total
// variation, half the sum of |target-old|: the share of new applications
// the change would send elsewhere, whatever the number of sub-clusters.
// Below threshold nothing changes (hysteresis: small wobbles write
// nothing); above it the weights move along the straight line toward the
// target by at most maxStep of that distance per round, so they still sum
// to 1 and no round redirects more than maxStep of the traffic.
func stepToward(old, target Weights, threshold, maxStep float64) (next Weights, changed bool, distance float64) {
	if len(old) == 0 {
		next = make(Weights, len(target))
		for id, v := range target {
			next[id] = math.Round(v*1e4) / 1e4
		}
		return next, len(target) > 0, 1
	}
	ids := unionIDs(old, target)
	// A sub-cluster the target gives nothing (no usable capacity, or no
	// longer eligible) is drained completely, however small its stored
	// weight: hysteresis damps wobbles, but applications sent where there
	// is no room would only wait there.
	drain := false
	for _, id := range ids {
		distance += math.Abs(target[id] - old[id])
		if target[id] == 0 && old[id] > 0 {
			drain = true
		}
	}
	distance /= 2
	if distance <= threshold && !drain {
		return old, false, distance
	}
	alpha := math.Min(1, maxStep/distance)
	next = make(Weights, len(ids))
	for _, id := range ids {
		v := old[id] + alpha*(target[id]-old[id])
		if _, known := target[id]; !known && v < 1e-4 {
			// A sub-cluster gone from the target drops out once its
			// weight has glided to nothing.
			continue
		}
		next[id] = math.Round(v*1e4) / 1e4
	}
	return next, true, distance
}

func unionIDs(a, b Weights) []string {
	ids := make([]string, 0, len(a)+len(b))
	for id := range a {
		ids = append(ids, id)
	}
	for id := range b {
		if _, ok := a[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// toPolicyWeights renders weights for a WeightedPolicyInfo, sorted by id.
func toPolicyWeights(w Weights) []policies.Weight {
	out := make([]policies.Weight, 0, len(w))
	for _, id := range unionIDs(w, nil) {
		out = append(out, policies.Weight{ID: policies.SubClusterID(id), Value: float32(w[id])})
	}
	return out
}

// fromPolicyWeights reads stored weights.
func fromPolicyWeights(ws []policies.Weight) Weights {
	out := make(Weights, len(ws))
	for _, x := range ws {
		out[string(x.ID)] = float64(x.Value)
	}
	return out
}
