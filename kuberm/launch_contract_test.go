package kuberm

import (
	"testing"

	"github.com/yarnfed/yarnfed/kuberm/launch"
)

// TestLaunchContractConstants: the launcher repeats the mount path and the
// Secret key (importing kuberm would bring client-go into it); they must
// stay equal to the pod's and the NM face's.
func TestLaunchContractConstants(t *testing.T) {
	if launch.DefaultLaunchDir != LaunchMountPath || launch.ContextFile != DataLaunchContext {
		t.Fatalf("launcher reads %s/%s, kuberm mounts %s/%s", launch.DefaultLaunchDir, launch.ContextFile, LaunchMountPath, DataLaunchContext)
	}
}
