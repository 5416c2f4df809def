//go:build interop

package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestUAMWithForeignAppIDOnRealRM is the AMRMProxy's secondary path, done
// by hand with Hadoop's own clients: RM-1 mints an ApplicationId (its cluster
// timestamp), and RM-2 (another cluster id, an epoch 1000 higher) is asked
// to run an unmanaged AM under that very id, shaped as Hadoop's
// UnmanagedApplicationManager shapes it (keep containers across attempts,
// 1024 MB / 1 vcore, empty launch context), submitted as the app's user.
// RM-2 must accept it, launch the attempt, hand that user the AMRMToken in
// the report, accept register with it on RM-2's scheduler and allocate
// containers on RM-2's NodeManagers whose ids carry RM-2's epoch (so they
// cannot collide with the home's containers of the same application).
// RM-2 runs the launcher's stock configuration: no federation setting.
func TestUAMWithForeignAppIDOnRealRM(t *testing.T) {
	rm1 := needCluster(t) // epoch 7
	const epoch2 = 1007
	rm2 := newCluster(t, clusterOptions{clusterID: "e2e-uam-sc2", epoch: epoch2, nms: 1})
	j := needJava(t)

	mint := j.runDriver(t, "YarnClientDriver", "--conf", rm1.info.Conf, "newapp")
	var minted struct {
		ApplicationID    string `json:"applicationId"`
		ClusterTimestamp int64  `json:"clusterTimestamp"`
	}
	mint.op(t, "newapp").decode(t, &minted)
	app := minted.ApplicationID

	const user = "alice"
	uam := j.runDriver(t, "YarnClientDriver", "--conf", rm2.info.Conf, "--user", user,
		"nodes", "submituam:"+app+":default", "waittoken:"+app, "attempt:"+app, "report:"+app)
	var nodes struct {
		Nodes []struct{ ID string } `json:"nodes"`
	}
	uam.op(t, "nodes").decode(t, &nodes)
	rm2Nodes := map[string]bool{}
	for _, n := range nodes.Nodes {
		rm2Nodes[n.ID] = true
	}
	var sub struct {
		ApplicationID string `json:"applicationId"`
	}
	uam.op(t, "submituam:"+app+":default").decode(t, &sub)
	if sub.ApplicationID != app {
		t.Fatalf("RM-2 took the submission as %s, want the foreign id %s", sub.ApplicationID, app)
	}
	type report struct {
		ApplicationID string `json:"applicationId"`
		Queue         string `json:"queue"`
		User          string `json:"user"`
		State         string `json:"state"`
		Unmanaged     bool   `json:"unmanaged"`
		AMRMToken     *struct {
			Identifier string `json:"identifier"`
			Password   string `json:"password"`
			Kind       string `json:"kind"`
		} `json:"amrmToken"`
	}
	var rep report
	uam.op(t, "waittoken:"+app).decode(t, &rep)
	if rep.AMRMToken == nil || rep.AMRMToken.Kind != "YARN_AM_RM_TOKEN" {
		t.Fatalf("RM-2 gave no AMRMToken for the foreign-id UAM: %+v", rep)
	}
	// The 3.4 capacity scheduler reports the queue's full path.
	if rep.User != user || rep.Queue != "root.default" || !rep.Unmanaged {
		t.Errorf("RM-2's report of the UAM: %+v, want user %s, queue root.default, unmanaged", rep, user)
	}
	var att struct {
		AttemptID string `json:"attemptId"`
		State     string `json:"state"`
	}
	uam.op(t, "attempt:"+app).decode(t, &att)
	if att.State != "LAUNCHED" || !strings.HasPrefix(att.AttemptID, "appattempt_"+strings.TrimPrefix(app, "application_")+"_") {
		t.Errorf("UAM attempt on RM-2: %+v, want LAUNCHED under %s", att, app)
	}

	// The UAM's conversation with RM-2's scheduler, as the proxy holds it.
	am := j.runDriver(t, "AMRMDriver", "--scheduler", loopback(rm2.info.Scheduler), "--user", user,
		"--token-id", rep.AMRMToken.Identifier, "--token-password", rep.AMRMToken.Password,
		"register", "ask:3:128:1", "await:3:60000", "finish")
	var reg struct {
		Queue string `json:"queue"`
	}
	am.op(t, "register").decode(t, &reg)
	t.Logf("register answered queue %q", reg.Queue)
	var got struct {
		Containers []string `json:"containers"`
		Nodes      []string `json:"nodes"`
	}
	am.op(t, "await:3:60000").decode(t, &got)
	// container_e<epoch>_<clusterTimestamp>_<app>_<attempt>_<n>: RM-2's
	// epoch, RM-1's timestamp (the application's own id).
	wantPrefix := fmt.Sprintf("container_e%02d_%s_", epoch2, strings.TrimPrefix(app, "application_"))
	for i, c := range got.Containers {
		if !strings.HasPrefix(c, wantPrefix) {
			t.Errorf("container %s from RM-2: want prefix %s (RM-2's epoch, the foreign app id)", c, wantPrefix)
		}
		if !rm2Nodes[got.Nodes[i]] {
			t.Errorf("container %s on node %s, which is not one of RM-2's %v", c, got.Nodes[i], nodes.Nodes)
		}
	}
	am.op(t, "finish").decode(t, &struct{}{})
	t.Logf("RM-2 (epoch %d) ran a UAM for %s (minted by RM-1, timestamp %d): containers %v on %v",
		epoch2, app, minted.ClusterTimestamp, got.Containers, got.Nodes)
}
