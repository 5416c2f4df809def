package merge

import (
	"slices"
	"strings"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/router/fed"
)

// The REST API's application documents (rmrest.App) merged the way
// Applications merges the IPC reports: one entry per application, UAM
// copies folded into the home's, and the span of an application that runs
// in several sub-clusters.

// AppInfos is Applications for REST documents: one entry per
// application id, UAM copies folded into the home app (allocations,
// containers and resource-seconds summed, tags joined), UAM-only apps
// dropped unless partial results are on.
func AppInfos(lists [][]rmrest.App, partial bool) []rmrest.App {
	isUAM := func(a rmrest.App) bool { return a.UnmanagedApplication && strings.HasPrefix(a.Name, UAMName) }
	groups := GroupApps(lists, func(a rmrest.App) string { return a.ID }, isUAM)
	out := make([]rmrest.App, 0, len(groups))
	for _, g := range groups {
		home, uams := g.Home, g.UAMs
		if !g.HasHome {
			if !partial {
				continue
			}
			home = uams[0]
			home.Name = PartialName + g.ID
			uams = uams[1:]
		}
		for _, u := range uams {
			FoldAppInfo(&home, u)
		}
		out = append(out, home)
	}
	return out
}

// AppInfosBySC is AppInfos over lists that say which
// sub-cluster each came from: an app with UAM copies also gets its span
// (home and secondaries, with each one's containers) in SubClusters.
func AppInfosBySC(ids []fed.SubClusterID, lists [][]rmrest.App, partial bool) []rmrest.App {
	merged := AppInfos(lists, partial)
	isUAM := func(a *rmrest.App) bool { return a.UnmanagedApplication && strings.HasPrefix(a.Name, UAMName) }
	type where struct {
		home  fed.SubClusterID
		homeA *rmrest.App
		uams  []rmrest.AppSubCluster
	}
	var spans map[string]*where
	for i, l := range lists {
		for j := range l {
			a := &l[j]
			if !isUAM(a) {
				continue
			}
			if spans == nil {
				spans = map[string]*where{}
			}
			w := spans[a.ID]
			if w == nil {
				w = &where{}
				spans[a.ID] = w
			}
			w.uams = append(w.uams, AppSubCluster(ids[i], false, *a))
		}
	}
	if spans == nil {
		return merged
	}
	for i, l := range lists {
		for j := range l {
			a := &l[j]
			if w := spans[a.ID]; w != nil && w.homeA == nil && !isUAM(a) {
				w.home, w.homeA = ids[i], a
			}
		}
	}
	for i := range merged {
		w := spans[merged[i].ID]
		if w == nil {
			continue
		}
		var sub []rmrest.AppSubCluster
		if w.homeA != nil {
			sub = append(sub, AppSubCluster(w.home, true, *w.homeA))
		}
		merged[i].SubClusters = &rmrest.AppSubClusters{SubCluster: append(sub, w.uams...)}
	}
	return merged
}

// AppSubCluster is one sub-cluster's line of an application's span.
func AppSubCluster(sc fed.SubClusterID, home bool, a rmrest.App) rmrest.AppSubCluster {
	return rmrest.AppSubCluster{SubClusterID: string(sc), Home: home, State: a.State, RunningContainers: a.RunningContainers,
		AllocatedMB: a.AllocatedMB, AllocatedVCores: a.AllocatedVCores}
}

// FoldAppInfo adds a UAM's REST document into its home app's
// (allocations, containers and resource-seconds summed, tags joined).
func FoldAppInfo(home *rmrest.App, u rmrest.App) {
	home.AllocatedMB += u.AllocatedMB
	home.AllocatedVCores += u.AllocatedVCores
	home.ReservedMB += u.ReservedMB
	home.ReservedVCores += u.ReservedVCores
	home.RunningContainers += u.RunningContainers
	home.MemorySeconds += u.MemorySeconds
	home.VCoreSeconds += u.VCoreSeconds
	home.QueueUsagePercentage += u.QueueUsagePercentage
	home.ClusterUsagePercentage += u.ClusterUsagePercentage
	tags := strings.Split(home.ApplicationTags, ",")
	for _, t := range strings.Split(u.ApplicationTags, ",") {
		if t != "" && !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	home.ApplicationTags = strings.Trim(strings.Join(tags, ","), ",")
}
