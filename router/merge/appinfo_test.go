package merge_test

import (
	"testing"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/router/merge"
)

func TestMergeAppInfos(t *testing.T) {
	home := rmrest.App{ID: "application_1_0001", Name: "job", AllocatedMB: 100, RunningContainers: 1, ApplicationTags: "a"}
	uam1 := rmrest.App{ID: "application_1_0001", Name: "UnmanagedAM", UnmanagedApplication: true, AllocatedMB: 200, RunningContainers: 2, ApplicationTags: "b"}
	orphan := rmrest.App{ID: "application_1_0002", Name: "UnmanagedAM", UnmanagedApplication: true, AllocatedMB: 5}
	got := merge.AppInfos([][]rmrest.App{{uam1, orphan}, {home}}, false)
	if len(got) != 1 || got[0].Name != "job" || got[0].AllocatedMB != 300 || got[0].RunningContainers != 3 || got[0].ApplicationTags != "a,b" {
		t.Fatalf("merged %+v", got)
	}
	got = merge.AppInfos([][]rmrest.App{{uam1, orphan}, {home}}, true)
	if len(got) != 2 || got[1].Name != "Partial Report application_1_0002" {
		t.Fatalf("partial merge %+v", got)
	}
}
