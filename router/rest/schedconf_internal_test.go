package rest

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMergeSchedConf: RMs that do serve their scheduler configuration
// (a mutable CapacityScheduler) are listed in federationConfInfo, each
// with its subClusterId, in JSON and XML; an answer that is not one
// document is the sub-cluster's error, not silently dropped.
func TestMergeSchedConf(t *testing.T) {
	got := []scBody{
		{sc: "SC-1", body: []byte(`{"schedConf":{"property":[{"name":"a","value":"1"}]}}`)},
		{sc: "SC-2", body: []byte(`{"schedConf":{"property":[{"name":"b","value":"2"}]}}`)},
	}
	out, err := mergeSubClusterJSON(got, FederationConfRoot, "", "GET /ws/v1/cluster/scheduler-conf")
	var doc struct {
		Root struct {
			SubCluster []struct {
				Property     []map[string]string `json:"property"`
				SubClusterID string              `json:"subClusterId"`
			} `json:"subCluster"`
		} `json:"federationConfInfo"`
	}
	if err != nil || json.Unmarshal(out, &doc) != nil || len(doc.Root.SubCluster) != 2 ||
		doc.Root.SubCluster[1].SubClusterID != "SC-2" || doc.Root.SubCluster[1].Property[0]["name"] != "b" {
		t.Fatalf("JSON merge: %s %v", out, err)
	}
	if _, err := mergeSubClusterJSON([]scBody{{sc: "SC-1", body: []byte(`{"a":{},"b":{}}`)}}, FederationConfRoot, "", "x"); err == nil {
		t.Fatal("two root keys accepted")
	}
	xgot := []scBody{{sc: "SC-1", body: []byte(`<?xml version="1.0"?><schedConf><property><name>a</name><value>1</value></property></schedConf>`)}}
	xout, err := mergeSubClusterXML(xgot, FederationConfRoot, "", "x")
	if err != nil || !strings.Contains(string(xout), "<federationConfInfo><subCluster><property><name>a</name><value>1</value></property><subClusterId>SC-1</subClusterId></subCluster></federationConfInfo>") {
		t.Fatalf("XML merge: %s %v", xout, err)
	}
}
