package kube

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// configCase is one Config file decoded and validated: err is what the
// error must contain ("" for none), check judges the section under test.
type configCase[S any] struct {
	name, json, err string
	check           func(S) bool
}

// runConfigCases decodes each case's JSON into a Config, validates it and
// checks the section section picks.
func runConfigCases[S any](t *testing.T, cases []configCase[S], section func(Config) S) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			err := json.Unmarshal([]byte(tc.json), &c)
			if err == nil {
				err = c.Validate()
			}
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err %v, want one containing %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.check != nil && !tc.check(section(c)):
				t.Fatalf("decoded %+v", section(c))
			}
		})
	}
}

func TestNodeResourcePushConfig(t *testing.T) {
	runConfigCases(t, []configCase[PushConfig]{
		{"off by default", `{"default_sub_cluster":"sc"}`, "", func(p PushConfig) bool { return p == DefaultPushConfig() && !p.Enabled }},
		{"keys decoded onto defaults", `{"default_sub_cluster":"sc","node_resource_push":{"enabled":true,"user":"yarn","interval":"1s"}}`, "",
			func(p PushConfig) bool {
				return p.Enabled && p.User == "yarn" && p.Interval.D() == time.Second && p.MinChange == 0.10 && p.MaxAge.D() == 5*time.Minute
			}},
		{"unknown key", `{"default_sub_cluster":"sc","node_resource_push":{"enabled":true,"usr":"yarn"}}`, `unknown field "usr"`, nil},
		{"enabled needs a user", `{"default_sub_cluster":"sc","node_resource_push":{"enabled":true}}`, "node_resource_push: user: required", nil},
		{"bad values", `{"default_sub_cluster":"sc","node_resource_push":{"enabled":true,"user":"y","min_change":1.5,"max_age":"0s"}}`, "min_change", nil},
		{"disabled is not checked", `{"default_sub_cluster":"sc","node_resource_push":{"min_change":1.5}}`, "", func(p PushConfig) bool { return !p.Enabled }},
	}, func(c Config) PushConfig { return c.NodeResourcePush })
}

func TestThirdPartyAllocationsConfig(t *testing.T) {
	runConfigCases(t, []configCase[WriteBackConfig]{
		{"off by default", `{"default_sub_cluster":"sc"}`, "", func(w WriteBackConfig) bool { return w == DefaultWriteBackConfig() && !w.Enabled }},
		{"keys decoded onto defaults", `{"default_sub_cluster":"sc","third_party_allocations":{"enabled":true,"interval":"500ms"}}`, "",
			func(w WriteBackConfig) bool {
				return w.Enabled && w.Interval.D() == 500*time.Millisecond && w.Parallel == 4 && w.CallTimeout.D() == 10*time.Second
			}},
		{"unknown key", `{"default_sub_cluster":"sc","third_party_allocations":{"enable":true}}`, `unknown field "enable"`, nil},
		{"bad values", `{"default_sub_cluster":"sc","third_party_allocations":{"enabled":true,"interval":"0s","parallel":0}}`, "third_party_allocations: interval", nil},
		{"disabled is not checked", `{"default_sub_cluster":"sc","third_party_allocations":{"parallel":0}}`, "", func(w WriteBackConfig) bool { return !w.Enabled }},
	}, func(c Config) WriteBackConfig { return c.ThirdPartyAllocations })
}
