package restwire_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/router/restwire"
)

func TestDecodeSubmissionContext(t *testing.T) {
	xmlBody := `<?xml version="1.0" encoding="UTF-8"?>
<application-submission-context>
  <application-id>application_1404203615263_0001</application-id>
  <application-name>test</application-name>
  <queue>root.a</queue>
  <priority>3</priority>
  <am-container-spec>
    <local-resources><entry><key>example</key><value>
      <resource>hdfs://hdfs-namenode:9000/user/test/app.jar</resource><type>ARCHIVE</type><visibility>PUBLIC</visibility><size>43004</size><timestamp>1405452071209</timestamp>
    </value></entry></local-resources>
    <commands><command>sleep 5</command></commands>
    <environment><entry><key>A</key><value>1</value></entry></environment>
  </am-container-spec>
  <max-app-attempts>2</max-app-attempts>
  <resource><memory>1024</memory><vCores>1</vCores></resource>
  <application-tags><tag>t1</tag><tag>t2</tag></application-tags>
  <reservation-id>reservation_1454114874_1</reservation-id>
</application-submission-context>`
	asc, err := restwire.DecodeSubmissionContext("application/xml", []byte(xmlBody))
	if err != nil {
		t.Fatal(err)
	}
	lr := asc.GetAmContainerSpec().GetLocalResources()
	switch {
	case yarnid.AppIDString(asc.GetApplicationId()) != "application_1404203615263_0001",
		asc.GetQueue() != "root.a", asc.GetPriority().GetPriority() != 3, asc.GetMaxAppAttempts() != 2,
		asc.GetResource().GetMemory() != 1024, len(asc.GetApplicationTags()) != 2,
		len(lr) != 1 || lr[0].GetValue().GetResource().GetHost() != "hdfs-namenode" || lr[0].GetValue().GetResource().GetPort() != 9000 ||
			lr[0].GetValue().GetType().String() != "ARCHIVE" || lr[0].GetValue().GetSize() != 43004,
		len(asc.GetAmContainerSpec().GetCommand()) != 1, len(asc.GetAmContainerSpec().GetEnvironment()) != 1,
		asc.GetReservationId().GetId() != 1:
		t.Fatalf("decoded %v", asc)
	}

	bad := []struct{ name, ctype, body string }{
		{"no id", "application/json", `{"application-name":"x"}`},
		{"bad id", "application/json", `{"application-id":"job_1_1"}`},
		{"bad resource url", "application/json", `{"application-id":"application_1_1","am-container-spec":{"local-resources":{"entry":[{"key":"k","value":{"resource":"relative/path"}}]}}}`},
		{"bad type", "application/json", `{"application-id":"application_1_1","am-container-spec":{"local-resources":{"entry":[{"key":"k","value":{"resource":"hdfs://h/p","type":"BLOB"}}]}}}`},
		{"negative memory", "application/json", `{"application-id":"application_1_1","resource":{"memory":-1,"vCores":1}}`},
		{"unsupported media", "text/plain", `{}`},
		{"broken xml", "application/xml", `<application-submission-context>`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := restwire.DecodeSubmissionContext(tc.ctype, []byte(tc.body)); err == nil {
				t.Fatal("accepted")
			} else if tc.ctype != "text/plain" && !errors.Is(err, restwire.ErrBadRequest) {
				t.Fatalf("err %v does not wrap ErrBadRequest", err)
			}
		})
	}
}

func FuzzDecodeSubmissionContext(f *testing.F) {
	f.Add("application/json", []byte(`{"application-id":"application_1_0001","am-container-spec":{"commands":{"command":["a","b"]},"local-resources":{"entry":[{"key":"k","value":{"resource":"hdfs://h:1/p"}}]}},"application-tags":{"tag":"x"}}`))
	f.Add("application/xml", []byte(`<application-submission-context><application-id>application_1_0001</application-id><application-tags><tag>a</tag><tag>b</tag></application-tags></application-submission-context>`))
	f.Add("application/json", []byte(`{"application-id":"nope"}`))
	f.Add("text/plain", []byte(`x`))
	f.Fuzz(func(t *testing.T, ctype string, body []byte) {
		asc, err := restwire.DecodeSubmissionContext(ctype, body)
		if err != nil {
			return
		}
		if asc.GetApplicationId() == nil {
			t.Fatal("accepted a context without an application id")
		}
		if _, err := proto.Marshal(asc); err != nil {
			t.Fatalf("decoded context does not marshal: %v", err)
		}
	})
}

func FuzzDecodeAppState(f *testing.F) {
	f.Add("application/json", []byte(`{"state":"KILLED"}`))
	f.Add("application/xml", []byte(`<appstate><state>KILLED</state></appstate>`))
	f.Add("", []byte(`{}`))
	f.Fuzz(func(t *testing.T, ctype string, body []byte) {
		st, err := restwire.DecodeAppState(ctype, body)
		if err == nil && st == "" {
			t.Fatal("empty state accepted")
		}
	})
}

func FuzzDecodeAppBodies(f *testing.F) {
	f.Add("application/json", []byte(`{"priority":3}`))
	f.Add("application/xml", []byte(`<applicationpriority><priority>3</priority></applicationpriority>`))
	f.Add("application/json", []byte(`{"queue":"root.a"}`))
	f.Add("application/xml", []byte(`<appqueue><queue>a</queue></appqueue>`))
	f.Add("application/json", []byte(`{"timeout":{"type":"LIFETIME","expiryTime":"2026-12-05T22:51:00.104+0000"}}`))
	f.Add("application/xml", []byte(`<timeout><type>lifetime</type><expiryTime>x</expiryTime></timeout>`))
	f.Add("text/plain", []byte(`7`))
	f.Fuzz(func(t *testing.T, ctype string, body []byte) {
		_, _ = restwire.DecodeAppPriority(ctype, body)
		if q, err := restwire.DecodeAppQueue(ctype, body); err == nil && strings.TrimSpace(q) == "" {
			t.Fatal("accepted an empty queue")
		}
		if typ, err := restwire.DecodeAppTimeout(ctype, body); err == nil && typ != "LIFETIME" {
			t.Fatalf("accepted timeout type %q", typ)
		}
	})
}

func FuzzDecodeReservation(f *testing.F) {
	f.Add("application/json", []byte(`{"queue":"q","reservation-id":"reservation_1_0001","reservation-definition":{}}`))
	f.Add("application/xml", []byte(`<reservation-submission-context><queue>q</queue><reservation-id>reservation_1_0001</reservation-id></reservation-submission-context>`))
	f.Add("application/xml", []byte(`<reservation-delete-context><reservation-id>reservation_1_1</reservation-id></reservation-delete-context>`))
	f.Add("application/json", []byte(`{"reservation-id":"reservation_x"}`))
	f.Fuzz(func(t *testing.T, ctype string, body []byte) {
		if rr, err := restwire.DecodeReservationSubmission(ctype, body); err == nil && (rr.ReservationID == nil || strings.TrimSpace(rr.Queue) == "") {
			t.Fatalf("accepted a submission without id or queue: %+v", rr)
		}
		for _, dec := range []func(string, []byte) (restwire.ReservationRequest, error){restwire.DecodeReservationUpdate, restwire.DecodeReservationDelete} {
			if rr, err := dec(ctype, body); err == nil && rr.ReservationID == nil {
				t.Fatal("accepted a body without a reservation id")
			}
		}
	})
}
