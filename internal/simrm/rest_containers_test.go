package simrm

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/testpoll"
)

// TestRESTAttemptContainers: an attempt and its containers over REST, in
// Hadoop's JSON and XML shapes, and the 400/404 answers for ids that do
// not parse, do not belong together, or are unknown.
func TestRESTAttemptContainers(t *testing.T) {
	rm := startRM(t, func(c *Config) { c.SimAM.ContainerRuntime = config.Duration(time.Hour) })
	ctx := context.Background()
	cl := rmrest.NewClient(rm.Addrs().Web)
	na, err := cl.NewApplication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := ParseAppID(na.ApplicationID)
	if err := rm.core().Submit(SubmitRequest{ID: id, User: "carol", AMResource: Resource{MemoryMB: 1024, VCores: 1}}); err != nil {
		t.Fatal(err)
	}
	var am string
	testpoll.Poll(t, "AM container running", func() bool {
		a, err := rm.core().Attempt(AttemptID{App: id, Attempt: 1})
		if err != nil || a.AMContainer == nil {
			return false
		}
		am = a.AMContainer.String()
		c, err := rm.core().Container(*a.AMContainer)
		return err == nil && c.State == ContainerRunning
	})
	base := "http://" + rm.Addrs().Web + "/ws/v1/cluster/apps/" + id.String() + "/appattempts/"
	attempt := AttemptID{App: id, Attempt: 1}.String()

	code, body := httpGet(t, base+attempt, "")
	var one rmrest.AppAttemptResponse
	if code != 200 || json.Unmarshal([]byte(body), &one) != nil || one.AppAttempt.AppAttemptID != attempt || one.AppAttempt.ContainerID != am {
		t.Fatalf("attempt: %d %s", code, body)
	}
	code, body = httpGet(t, base+attempt+"/containers", "")
	var list rmrest.ContainersResponse
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list.Containers.Container) == 0 {
		t.Fatalf("containers: %d %s", code, body)
	}
	// The simulated AM asks for more containers: every one listed is the
	// attempt's, and the AM container comes first (allocation order).
	for _, c := range list.Containers.Container {
		cid, err := ParseContainerID(c.ContainerID)
		if err != nil || cid.Attempt != (AttemptID{App: id, Attempt: 1}) {
			t.Fatalf("listed container %q not of the attempt", c.ContainerID)
		}
	}
	c := list.Containers.Container[0]
	if c.ContainerID != am || c.ContainerState != "RUNNING" || c.AllocatedMB != 1024 || c.AllocatedVCores != 1 ||
		c.AssignedNodeID == "" || c.NodeHTTPAddress == "" || c.LogURL == "" || c.StartedTime == 0 || c.FinishedTime != 0 {
		t.Fatalf("container %+v", c)
	}
	code, body = httpGet(t, base+attempt+"/containers", "application/xml")
	var xl rmrest.Containers
	if code != 200 || xml.Unmarshal([]byte(body), &xl) != nil || len(xl.Container) == 0 || xl.Container[0].ContainerID != am {
		t.Fatalf("containers XML: %d %s", code, body)
	}
	code, body = httpGet(t, base+attempt+"/containers/"+am, "")
	var single rmrest.ContainerResponse
	if code != 200 || json.Unmarshal([]byte(body), &single) != nil || single.Container.ContainerID != am {
		t.Fatalf("container: %d %s", code, body)
	}

	other := AttemptID{App: AppID{ClusterTimestamp: id.ClusterTimestamp, ID: id.ID + 50}, Attempt: 1}
	for _, tc := range []struct {
		path string
		want int
	}{
		{base + "appattempt_x", http.StatusBadRequest},
		{base + other.String() + "/containers", http.StatusBadRequest}, // another app's attempt
		{base + AttemptID{App: id, Attempt: 9}.String(), http.StatusNotFound},
		{base + AttemptID{App: id, Attempt: 9}.String() + "/containers", http.StatusNotFound},
		{base + attempt + "/containers/container_x", http.StatusBadRequest},
		{base + attempt + "/containers/" + ContainerID{Attempt: AttemptID{App: id, Attempt: 1}, ID: 999}.String(), http.StatusNotFound},
		{base + attempt + "/containers/" + ContainerID{Attempt: other, ID: 1}.String(), http.StatusBadRequest},
	} {
		code, body := httpGet(t, tc.path, "")
		var re rmrest.RemoteExceptionResponse
		if code != tc.want || json.Unmarshal([]byte(body), &re) != nil || re.RemoteException.Message == "" {
			t.Errorf("%s: %d %s, want %d", tc.path, code, body, tc.want)
		}
	}
}
