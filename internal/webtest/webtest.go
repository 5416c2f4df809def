// Package webtest is the tests' one way to send an HTTP request and read
// the answer whole: the status and the body as text, with a transport or
// read failure failing the test. Tests alone import it.
package webtest

import (
	"io"
	"net/http"
	"testing"
)

// Do sends req with http.DefaultClient and returns the answer's status and
// body. A request that gets no answer, or whose body cannot be read to the
// end, fails the test.
func Do(t testing.TB, req *http.Request) (status int, body string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
		return 0, ""
	}
	return resp.StatusCode, string(b)
}
