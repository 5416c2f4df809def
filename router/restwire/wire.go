// Package restwire is the wire format of the router's RM REST API, apart
// from any routing: request bodies decoded and validated as RMWebServices
// reads them (JSON or XML by Content-Type; fuzzed), bounded reads, the
// RemoteException error with its HTTP status, and JSON/XML replies by
// Accept. The handlers, which route, are in router/rest.
package restwire

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// MaxBody bounds the request bodies the router reads (a submission context
// is a few KiB).
const MaxBody = 1 << 20

// Error is an error with the HTTP status and the Java class Hadoop would
// send in its RemoteException body.
type Error struct {
	Status int
	Class  string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ErrBadRequest: the client request is malformed (the REST API answers it
// with 400; router.ErrBadRequest is this same value, so every room of the
// router wraps one sentinel). Id parse errors wrap yarnid.ErrBadID instead.
var ErrBadRequest = errors.New("bad request")

// BadRequest is a 400 BadRequestException wrapping ErrBadRequest.
func BadRequest(format string, a ...any) error {
	return &Error{Status: http.StatusBadRequest, Class: rmrest.ClassBadRequest, Err: fmt.Errorf("%w: "+format, append([]any{ErrBadRequest}, a...)...)}
}

// ReadBody reads a request body of at most MaxBody bytes (413 beyond).
func ReadBody(req *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(req.Body, MaxBody+1))
	if err != nil {
		return nil, BadRequest("read body: %v", err)
	}
	if len(body) > MaxBody {
		return nil, &Error{Status: http.StatusRequestEntityTooLarge, Class: "javax.ws.rs.WebApplicationException",
			Err: fmt.Errorf("request body larger than %d bytes", MaxBody)}
	}
	return body, nil
}

// WantsXML reports whether the request's Accept asks for XML before JSON
// (Hadoop's web services default to JSON).
func WantsXML(req *http.Request) bool {
	for _, part := range strings.Split(req.Header.Get("Accept"), ",") {
		mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part))
		switch mt {
		case "application/json":
			return false
		case "application/xml", "text/xml":
			return true
		}
	}
	return false
}

// Write renders j as JSON, or x as XML when asXML, with status.
func Write(w http.ResponseWriter, status int, asXML bool, j, x any) {
	var b []byte
	var err error
	if asXML {
		w.Header().Set("Content-Type", "application/xml; charset=utf-8")
		b, err = xml.Marshal(x)
		b = append([]byte(xml.Header[:len(xml.Header)-1]), b...)
	} else {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		b, err = json.Marshal(j)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
