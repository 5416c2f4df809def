// Package restwire is the wire format of the router's RM REST API, apart
// from any routing: request bodies decoded and validated as RMWebServices
// reads them (JSON or XML by Content-Type; fuzzed), bounded reads, the
// RemoteException error with its HTTP status, and JSON/XML replies by
// Accept. The handlers, which route, are in router/rest.
package restwire

import (
	"bufio"
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

// WriteJSONStream answers status with a JSON body that fn writes (through
// a buffer) as it goes, so a large list is never held whole as bytes. An
// error after the status is sent can only cut the body short (the client
// sees malformed JSON, not a shorter valid list); it is returned for the
// log.
func WriteJSONStream(w http.ResponseWriter, status int, fn func(io.Writer) error) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := fn(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// JSONList writes {"<list>":{"<item>":[...]}} with every element of parts
// in order, each encoded by enc; no element renders {"<list>":{}}, as
// Jersey renders an empty list (and json.Marshal of rmrest.Apps/Nodes).
func JSONList[T any](w io.Writer, list, item string, parts [][]T, enc func(T) ([]byte, error)) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n == 0 {
		_, err := io.WriteString(w, `{"`+list+`":{}}`)
		return err
	}
	if _, err := io.WriteString(w, `{"`+list+`":{"`+item+`":[`); err != nil {
		return err
	}
	first := true
	for _, p := range parts {
		for _, v := range p {
			b, err := enc(v)
			if err != nil {
				return err
			}
			if !first {
				if _, err := io.WriteString(w, ","); err != nil {
					return err
				}
			}
			first = false
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
	}
	_, err := io.WriteString(w, "]}}")
	return err
}
