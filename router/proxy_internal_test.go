package router

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReplacingWriterSplitMatches: a link split across writes, at any
// point, is still rewritten, and nothing else changes.
func TestReplacingWriterSplitMatches(t *testing.T) {
	from := []string{"http://rm:8088/proxy/", "http://localhost:8088/proxy/"}
	to := "http://router:8089/proxy/"
	in := `<a href="http://rm:8088/proxy/app_1/x">x</a> http://rm:8088/prox http://localhost:8088/proxy/y http://rm:8088/proxy/`
	want := strings.NewReplacer(from[0], to, from[1], to).Replace(in)
	for chunk := 1; chunk <= len(in); chunk++ {
		var out bytes.Buffer
		rw := newReplacingWriter(&out, from, to)
		for i := 0; i < len(in); i += chunk {
			if _, err := rw.Write([]byte(in[i:min(i+chunk, len(in))])); err != nil {
				t.Fatal(err)
			}
		}
		if err := rw.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("chunk %d:\n got %s\nwant %s", chunk, out.String(), want)
		}
	}
}

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
