package rmrest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// The lists a federation fans out for (/apps, /nodes) are the RMs' largest
// answers: 100 RMs with 1000 nodes each send ~177 MiB of node JSON. They
// are decoded here in one pass over the response body as it arrives
// (json.Decoder, element by element) instead of reading the whole body and
// then decoding it (encoding/json scans a whole document before it decodes
// it, and App's own decoder re-parsed every application once more).

// ErrBadList is a list document that is not {"<list>":{"<item>":[...]}}.
var ErrBadList = errors.New("rmrest: malformed list document")

// streamDecoder is an out value of do that reads the response body itself.
type streamDecoder interface {
	decodeStream(r io.Reader) error
}

// limitedBody fails with ErrResponseTooLarge once more than n bytes are read.
type limitedBody struct {
	r    io.Reader
	n    int64
	path string
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, fmt.Errorf("%w: %s: more than the client's bound", ErrResponseTooLarge, l.path)
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return n, fmt.Errorf("%w: %s: more than the client's bound", ErrResponseTooLarge, l.path)
	}
	return n, err
}

// decodeList reads {"<list>":{"<item>":[e, e, ...]}} from dec, calling each
// with dec before every element (each must consume exactly one value).
// {"<list>":null} and {"<list>":{}} are empty lists (JAXB omits an empty
// array); other members, at either level, are skipped. After the document
// only white space may follow.
func decodeList(dec *json.Decoder, list, item string, each func(*json.Decoder) error) error {
	if err := wantDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadList, err)
		}
		if key != list {
			if err := skipValue(dec); err != nil {
				return err
			}
			continue
		}
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadList, err)
		}
		if tok == nil {
			continue
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return fmt.Errorf("%w: %q is not an object", ErrBadList, list)
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%w: %w", ErrBadList, err)
			}
			if k != item {
				if err := skipValue(dec); err != nil {
					return err
				}
				continue
			}
			if err := wantDelim(dec, '['); err != nil {
				return err
			}
			for dec.More() {
				if err := each(dec); err != nil {
					return err
				}
			}
			if err := wantDelim(dec, ']'); err != nil {
				return err
			}
		}
		if err := wantDelim(dec, '}'); err != nil {
			return err
		}
	}
	if err := wantDelim(dec, '}'); err != nil {
		return err
	}
	switch _, err := dec.Token(); {
	case err == io.EOF:
	case err != nil:
		return fmt.Errorf("%w: %w", ErrBadList, err)
	default:
		return fmt.Errorf("%w: data after the document", ErrBadList)
	}
	return nil
}

func wantDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadList, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: want %q, got %v", ErrBadList, want, tok)
	}
	return nil
}

func skipValue(dec *json.Decoder) error {
	var skip json.RawMessage
	if err := dec.Decode(&skip); err != nil {
		return fmt.Errorf("%w: %w", ErrBadList, err)
	}
	return nil
}

// decodeApp decodes one application from dec in one pass: into appWire,
// which has no decoder of its own, so App.UnmarshalJSON's second parse of
// every application does not run; its resourceInfo (six resource blocks
// with their resourceInformations lists, most of an application's bytes,
// which no merge reads) is kept as the RM's bytes.
func decodeApp(dec *json.Decoder) (App, error) {
	var w appWire
	if err := dec.Decode(&w); err != nil {
		return App{}, err
	}
	return w.app(), nil
}

// AppList is /apps decoded from a stream (DecodeApps).
type AppList []App

func (l *AppList) decodeStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	return decodeList(dec, "apps", "app", func(dec *json.Decoder) error {
		a, err := decodeApp(dec)
		if err != nil {
			return fmt.Errorf("%w: app %d: %w", ErrBadList, len(*l), err)
		}
		*l = append(*l, a)
		return nil
	})
}

// DecodeApps reads an /apps document ({"apps":{"app":[...]}}) from r as it
// arrives.
func DecodeApps(r io.Reader) ([]App, error) {
	var l AppList
	err := l.decodeStream(r)
	return l, err
}

// NodeList is /nodes decoded from a stream.
type NodeList []Node

func (l *NodeList) decodeStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	return decodeList(dec, "nodes", "node", func(dec *json.Decoder) error {
		var n Node
		if err := dec.Decode(&n); err != nil {
			return fmt.Errorf("%w: node %d: %w", ErrBadList, len(*l), err)
		}
		*l = append(*l, n)
		return nil
	})
}

// RawNodes is /nodes kept as the RM sent it: each node's JSON object,
// checked to be well-formed JSON, not decoded. A federation's /nodes is
// the RMs' lists one after the other, so the router passes every field
// through, those rmrest.Node does not model included, and never decodes
// nor re-encodes the largest document it serves.
type RawNodes []json.RawMessage

func (l *RawNodes) decodeStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	return decodeList(dec, "nodes", "node", func(dec *json.Decoder) error {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("%w: node %d: %w", ErrBadList, len(*l), err)
		}
		if len(raw) == 0 || raw[0] != '{' {
			return fmt.Errorf("%w: node %d is not an object", ErrBadList, len(*l))
		}
		*l = append(*l, raw)
		return nil
	})
}

// DecodeRawNodes reads a /nodes document ({"nodes":{"node":[...]}}) from r
// as it arrives, keeping each node's bytes.
func DecodeRawNodes(r io.Reader) (RawNodes, error) {
	var l RawNodes
	err := l.decodeStream(r)
	return l, err
}

// Nodes decodes the nodes (the typed view: XML, the web UI, one node).
func (l RawNodes) Nodes() ([]Node, error) {
	out := make([]Node, len(l))
	for i, raw := range l {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("%w: node %d: %w", ErrBadList, i, err)
		}
	}
	return out, nil
}

// GetRawNodes is GET /ws/v1/cluster/nodes, optionally filtered by states,
// each node kept as the RM's JSON (RawNodes).
func (c *Client) GetRawNodes(ctx context.Context, states string) (RawNodes, error) {
	var q url.Values
	if states != "" {
		q = url.Values{"states": {states}}
	}
	var r RawNodes
	if err := c.do(ctx, http.MethodGet, "/nodes", q, nil, &r); err != nil {
		return nil, err
	}
	return r, nil
}
