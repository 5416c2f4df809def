package rest

import (
	"net/http/httptest"
	"testing"
)

func TestRewriteLocation(t *testing.T) {
	req := httptest.NewRequest("GET", "http://router:8089/ws/v1/cluster/apps/application_1_0001/state", nil)
	tests := []struct{ loc, rm, want string }{
		{"http://rm:8088/ws/v1/cluster/apps/application_1_0001/state", "rm:8088", "http://router:8089/ws/v1/cluster/apps/application_1_0001/state"},
		{"http://localhost:8088/x?y=1", "127.0.0.1:8088", "http://router:8089/x?y=1"},
		{"http://elsewhere:1/x", "rm:8088", "http://elsewhere:1/x"},
		{"/relative", "rm:8088", "/relative"},
		{"", "rm:8088", ""},
	}
	for _, tc := range tests {
		if got := rewriteLocation(tc.loc, tc.rm, req); got != tc.want {
			t.Errorf("rewriteLocation(%q, %q) = %q, want %q", tc.loc, tc.rm, got, tc.want)
		}
	}
}
