package router_test

import (
	"errors"
	"testing"

	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/yarnid"
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
	asc, err := router.DecodeSubmissionContext("application/xml", []byte(xmlBody))
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
			if _, err := router.DecodeSubmissionContext(tc.ctype, []byte(tc.body)); err == nil {
				t.Fatal("accepted")
			} else if tc.ctype != "text/plain" && !errors.Is(err, router.ErrBadRequest) {
				t.Fatalf("err %v does not wrap ErrBadRequest", err)
			}
		})
	}
}
