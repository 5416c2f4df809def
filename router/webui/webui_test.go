package webui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/yarnfed/yarnfed/router/webui"
)

// TestRenderRefusesWhatItCannotRender: an unknown page or data the page's
// template cannot read is an error with nothing written (the router then
// answers 500), never half a page with a 200 header.
func TestRenderRefusesWhatItCannotRender(t *testing.T) {
	for name, v := range map[string]webui.View{
		"unknown page":   {Page: "nope"},
		"data mismatch":  {Page: "nodes", Data: struct{ Unrelated int }{}},
		"about, no data": {Page: "about", Data: 42},
	} {
		rec := httptest.NewRecorder()
		if err := webui.Render(rec, http.StatusOK, v); err == nil {
			t.Errorf("%s: rendered", name)
		}
		if rec.Body.Len() != 0 || len(rec.Header()) != 0 {
			t.Errorf("%s: wrote %q, headers %v", name, rec.Body.String(), rec.Header())
		}
	}
}

// TestRenderHeadersAndEscaping: a page carries the no-script headers and
// its status, and user text is escaped.
func TestRenderHeadersAndEscaping(t *testing.T) {
	rec := httptest.NewRecorder()
	v := webui.View{Page: "nodes", Title: "Nodes", User: "<script>alert(1)</script>", Err: "boom", Data: struct {
		Nodes   []struct{}
		ByState map[string]int
		States  string
	}{}}
	if err := webui.Render(rec, http.StatusServiceUnavailable, v); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d", rec.Code)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP %q", csp)
	}
	body := rec.Body.String()
	if strings.Contains(body, "<script>alert(1)") || !strings.Contains(body, "&lt;script&gt;") {
		t.Errorf("user name not escaped: %s", body)
	}
	srv := httptest.NewServer(http.StripPrefix("/static/", webui.Static()))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/static/yarnfed.css")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(b) == 0 {
		t.Errorf("stylesheet: %d, %d bytes", resp.StatusCode, len(b))
	}
}
