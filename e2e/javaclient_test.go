//go:build interop

package e2e

import (
	"encoding/base64"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// Scenario 1: the real Hadoop YarnClient drives our Go IPC server over
// SIMPLE auth: typed answers come back, and errors surface as the Java
// exception classes Hadoop code catches.
func TestJavaYarnClientAgainstGoServer(t *testing.T) {
	j := needJava(t)
	rm := newFakeRM()
	addr := serveIPC(t, hadoopipc.DefaultServerConfig(), rm.protocol())
	conf := writeYarnSite(t, map[string]string{"yarn.resourcemanager.address": addr})

	run := j.runDriver(t, "YarnClientDriver", "--conf", conf,
		"metrics", "newapp", "submit:interop-s1:root.e2e", "report", "list", "kill", "report",
		"report:application_1700000000000_9999", "labels", "parallel:8:50")

	var metrics struct {
		NumNodeManagers       int `json:"numNodeManagers"`
		NumActiveNodeManagers int `json:"numActiveNodeManagers"`
		NumLostNodeManagers   int `json:"numLostNodeManagers"`
	}
	run.op(t, "metrics").decode(t, &metrics)
	if metrics.NumNodeManagers != 3 || metrics.NumActiveNodeManagers != 2 || metrics.NumLostNodeManagers != 1 {
		t.Errorf("Java read cluster metrics %+v, want 3 NMs, 2 active, 1 lost", metrics)
	}

	var newApp struct {
		ApplicationID string `json:"applicationId"`
		MaxMemoryMB   int64  `json:"maxMemoryMB"`
		MaxVcores     int    `json:"maxVcores"`
	}
	run.op(t, "newapp").decode(t, &newApp)
	if newApp.ApplicationID != "application_1700000000000_0001" || newApp.MaxMemoryMB != 8192 || newApp.MaxVcores != 4 {
		t.Errorf("Java read new application %+v", newApp)
	}

	var submitted struct {
		ApplicationID string `json:"applicationId"`
	}
	run.op(t, "submit:interop-s1:root.e2e").decode(t, &submitted)
	type report struct {
		ApplicationID string `json:"applicationId"`
		Name, Queue   string
		User, State   string
		FinalStatus   string `json:"finalStatus"`
	}
	var rep report
	reports := 0
	for _, l := range run.lines {
		if l.Op != "report" {
			continue
		}
		reports++
		l.decode(t, &rep)
		want := "ACCEPTED"
		if reports == 2 {
			want = "KILLED"
		}
		if rep.ApplicationID != submitted.ApplicationID || rep.Name != "interop-s1" || rep.Queue != "root.e2e" || rep.State != want {
			t.Errorf("report %d: Java read %+v, want %s named interop-s1 in root.e2e, state %s", reports, rep, submitted.ApplicationID, want)
		}
		if rep.User == "" {
			t.Errorf("report %d: the server saw no user from the connection context", reports)
		}
	}
	if reports != 2 {
		t.Errorf("got %d report lines, want 2", reports)
	}
	var list struct {
		Applications []report `json:"applications"`
	}
	run.op(t, "list").decode(t, &list)
	if len(list.Applications) != 1 || list.Applications[0].ApplicationID != submitted.ApplicationID {
		t.Errorf("Java listed %+v", list.Applications)
	}
	run.op(t, "kill").decode(t, &struct{}{})
	var par struct {
		Calls int `json:"calls"`
	}
	run.op(t, "parallel:8:50").decode(t, &par)
	if par.Calls != 400 {
		t.Errorf("%d of 400 concurrent calls on one connection succeeded", par.Calls)
	}

	t.Run("large response", func(t *testing.T) {
		// ~20,000 reports, a multi-megabyte getApplications reply in one
		// frame: Hadoop's client must read it whole.
		big := newFakeRM()
		const n = 20000
		for i := int32(1); i <= n; i++ {
			big.apps[i] = &yarnpb.ApplicationReportProto{
				ApplicationId: big.appID(i), User: proto.String("u"), Queue: proto.String("root.default"),
				Name: proto.String(strings.Repeat("n", 64)), YarnApplicationState: yarnpb.YarnApplicationStateProto_RUNNING.Enum(),
				FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_UNDEFINED.Enum(), ApplicationType: proto.String("MAPREDUCE"),
			}
		}
		bconf := writeYarnSite(t, map[string]string{"yarn.resourcemanager.address": serveIPC(t, hadoopipc.DefaultServerConfig(), big.protocol())})
		var got struct {
			Count int `json:"count"`
		}
		j.runDriver(t, "YarnClientDriver", "--conf", bconf, "countapps").op(t, "countapps").decode(t, &got)
		if got.Count != n {
			t.Errorf("Java read %d applications, want %d", got.Count, n)
		}
	})

	for _, tc := range []struct {
		name, op, class, msg string
	}{
		{"unknown application", "report:application_1700000000000_9999", hadoopipc.ClassApplicationNotFound, "doesn't exist"},
		{"unimplemented method", "labels", hadoopipc.ClassNoSuchMethod, "getNodeToLabels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := run.op(t, tc.op)
			if l.OK {
				t.Fatalf("%s succeeded in Java, want %s", tc.op, tc.class)
			}
			if l.Exception != tc.class || !strings.Contains(l.Message, tc.msg) {
				t.Errorf("Java threw %s (remote %s): %q; want %s containing %q", l.Exception, l.RemoteClass, l.Message, tc.class, tc.msg)
			}
		})
	}
}

// Scenario 2: the real Hadoop AMRMClient authenticates to our Go server with
// an AMRMToken over SASL TOKEN/DIGEST-MD5 and runs register, allocate and
// finish; a wrong password and an unknown token fail with the same Java
// exception classes as against a real ResourceManager.
func TestJavaAMRMClientAgainstGoServer(t *testing.T) {
	j := needJava(t)
	am := &fakeAM{
		secrets: fakeAMSecrets{
			key:      []byte("e2e-master-key-0123456789"),
			attempts: map[string]bool{"appattempt_1700000000000_0007_000001": true},
		},
		registered: map[string]bool{},
	}
	cfg := hadoopipc.DefaultServerConfig()
	cfg.Secrets = am.secrets
	cfg.AllowSimple = false
	cfg.QOPs = []string{"auth-conf", "auth-int", "auth"}
	addr := serveIPC(t, cfg, am.protocol())

	ident := amrmIdentifier(t, 1700000000000, 7)
	b64 := base64.StdEncoding.EncodeToString
	good := b64(am.secrets.password(ident))
	unknown := amrmIdentifier(t, 1700000000000, 9999)

	t.Run("register allocate finish", func(t *testing.T) {
		run := j.runDriver(t, "AMRMDriver", "--scheduler", addr, "--token-id", b64(ident), "--token-password", good,
			"register", "ask:2:512:1", "await:2:20000", "finish:SUCCEEDED:done")
		var reg struct {
			MaxMemoryMB int64  `json:"maxMemoryMB"`
			MaxVcores   int    `json:"maxVcores"`
			Queue       string `json:"queue"`
		}
		run.op(t, "register").decode(t, &reg)
		if reg.MaxMemoryMB != 6144 || reg.MaxVcores != 3 || reg.Queue != "root.e2e" {
			t.Errorf("Java read register response %+v", reg)
		}
		var got struct {
			Containers []string `json:"containers"`
		}
		run.op(t, "await:2:20000").decode(t, &got)
		want := []string{"container_1700000000000_0007_01_000002", "container_1700000000000_0007_01_000003"}
		if strings.Join(got.Containers, ",") != strings.Join(want, ",") {
			t.Errorf("Java received containers %v, want %v", got.Containers, want)
		}
		run.op(t, "finish:SUCCEEDED:done").decode(t, &struct{}{})
	})

	// Hadoop's client picks the protection from hadoop.rpc.protection; with
	// integrity or privacy every packet after the login is wrapped (auth-int,
	// auth-conf with the cipher the JDK prefers).
	for _, protection := range []string{"integrity", "privacy"} {
		t.Run("protection "+protection, func(t *testing.T) {
			run := j.runDriver(t, "AMRMDriver", "--scheduler", addr, "--token-id", b64(ident), "--token-password", good,
				"--set", "hadoop.rpc.protection="+protection, "register", "ask:1:512:1", "await:1:20000", "finish")
			for _, op := range []string{"register", "await:1:20000", "finish"} {
				run.op(t, op).decode(t, &struct{}{})
			}
		})
	}

	// What a real RM answers to the same mistakes, measured in
	// TestGoClientAgainstRealRM's reference run and pinned here.
	for _, tc := range []struct {
		name, id, password, class string
	}{
		{"wrong password", b64(ident), b64([]byte("not-the-password-at-all")), hadoopipc.ClassSaslException},
		{"unknown attempt", b64(unknown), b64(am.secrets.password(unknown)), hadoopipc.ClassInvalidToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := j.runDriver(t, "AMRMDriver", "--scheduler", addr, "--token-id", tc.id, "--token-password", tc.password, "register")
			l := run.op(t, "register")
			if l.OK {
				t.Fatalf("register succeeded with a bad token")
			}
			if l.Exception != tc.class {
				t.Errorf("Java threw %s (remote %s): %q; a real RM makes it throw %s", l.Exception, l.RemoteClass, l.Message, tc.class)
			}
		})
	}
}

// amrmIdentifier encodes the AMRMTokenIdentifier of attempt 1 of an app.
func amrmIdentifier(t testing.TB, clusterTS int64, app int32) []byte {
	t.Helper()
	b, err := proto.Marshal(&yarnpb.AMRMTokenIdentifierProto{
		AppAttemptId: &yarnpb.ApplicationAttemptIdProto{
			ApplicationId: &yarnpb.ApplicationIdProto{Id: proto.Int32(app), ClusterTimestamp: proto.Int64(clusterTS)},
			AttemptId:     proto.Int32(1),
		},
		KeyId: proto.Int32(42),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
