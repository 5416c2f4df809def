package simrm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/yarnfed/yarnfed/internal/rmrest"
)

func httpPost(t *testing.T, url, contentType, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestRESTSubmit: POST /ws/v1/cluster/apps (JSON and XML) submits through
// the same path as IPC: 202 with Location, the app is then reported with
// the submitted fields and the caller as user; a submit the core refuses is
// a 400 BadRequestException carrying the RM's message, as in Hadoop.
func TestRESTSubmit(t *testing.T) {
	rm := startRM(t, nil)
	ctx := context.Background()
	base := "http://" + rm.Addrs().Web + "/ws/v1/cluster/apps"
	cl := rmrest.NewClient(rm.Addrs().Web)

	na, err := cl.NewApplication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"application-id":"` + na.ApplicationID + `","application-name":"pi","application-type":"MAPREDUCE",
		"queue":"default","priority":3,"resource":{"memory":2048,"vCores":2},"application-tags":{"tag":["x","y"]},
		"am-container-spec":{"commands":{"command":"sleep 1"}}}`
	resp, out := httpPost(t, base+"?user.name=erin", "application/json", body)
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Location") != base+"/"+na.ApplicationID {
		t.Fatalf("submit: %d %q Location %q", resp.StatusCode, out, resp.Header.Get("Location"))
	}
	a, err := cl.GetApp(ctx, na.ApplicationID)
	if err != nil || a.User != "erin" || a.Name != "pi" || a.ApplicationType != "MAPREDUCE" || a.ApplicationTags != "x,y" || a.Priority != 3 {
		t.Fatalf("submitted app %+v %v", a, err)
	}

	na2, _ := cl.NewApplication(ctx)
	xmlBody := `<?xml version="1.0"?><application-submission-context><application-id>` + na2.ApplicationID +
		`</application-id><application-name>x</application-name><application-tags><tag>a</tag><tag>b</tag></application-tags>` +
		`<resource><memory>1024</memory><vCores>1</vCores></resource></application-submission-context>`
	if resp, out := httpPost(t, base, "application/xml", xmlBody); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("xml submit: %d %q", resp.StatusCode, out)
	}
	if a, err := cl.GetApp(ctx, na2.ApplicationID); err != nil || a.User != "dr.who" || a.ApplicationTags != "a,b" {
		t.Fatalf("xml app %+v %v", a, err)
	}

	// Refused by the core: more memory than the maximum allocation.
	na3, _ := cl.NewApplication(ctx)
	resp, out = httpPost(t, base, "application/json", `{"application-id":"`+na3.ApplicationID+`","resource":{"memory":999999,"vCores":1}}`)
	var re rmrest.RemoteExceptionResponse
	if resp.StatusCode != http.StatusBadRequest || json.Unmarshal([]byte(out), &re) != nil ||
		re.RemoteException.JavaClassName != rmrest.ClassBadRequest || !strings.Contains(re.RemoteException.Message, "memory") {
		t.Fatalf("oversized submit: %d %q", resp.StatusCode, out)
	}
	for _, bad := range []string{`{}`, `{"application-id":"application_x"}`, `not json`} {
		if resp, out := httpPost(t, base, "application/json", bad); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %d %q", bad, resp.StatusCode, out)
		}
	}
}
