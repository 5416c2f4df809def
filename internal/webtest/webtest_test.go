package webtest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDoReturnsStatusAndBody: the status and the whole body come back, and
// the request goes out as built (method, header, body).
func TestDoReturnsStatusAndBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprintf(w, "%s %s %s", r.Method, r.Header.Get("Accept"), b)
	}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/xml")
	if code, body := Do(t, req); code != http.StatusTeapot || body != "PUT application/xml payload" {
		t.Fatalf("Do: %d %q, want 418 %q", code, body, "PUT application/xml payload")
	}
}

// fakeTB records Fatalf instead of ending the test, so a failure of Do can
// be seen from outside.
type fakeTB struct {
	testing.TB
	fatal string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }

// TestDoFailsWithoutAnAnswer: a request nobody answers fails the test,
// naming the request, and returns no status.
func TestDoFailsWithoutAnAnswer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ft := &fakeTB{TB: t}
	if code, body := Do(ft, req); code != 0 || body != "" || !strings.Contains(ft.fatal, "GET "+url) {
		t.Fatalf("Do against a closed server: %d %q, fatal %q", code, body, ft.fatal)
	}
}
