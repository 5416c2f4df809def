package router

import (
	"bytes"
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
