package rest_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"testing"

	"github.com/yarnfed/yarnfed/router/rest"
)

// Fuzz targets for the issue-13 REST mergers (the decoders' are in
// router/restwire): no panic, and merged output is well-formed.

// FuzzMergeLists: merging list documents of RMs never panics, and merged
// JSON is JSON and merged XML is XML.
func FuzzMergeLists(f *testing.F) {
	f.Add([]byte(`{"reservations":[{"a":1}]}`), []byte(`{"reservations":[{"a":2}]}`))
	f.Add([]byte(`{"reservations":{"a":1}}`), []byte(`{"reservations":[{"a":2}],"x":3}`))
	f.Add([]byte(`<reservationListInfo><reservations><a>1</a></reservations></reservationListInfo>`), []byte(`<r><reservations/></r>`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if out, err := rest.MergeJSONLists([][]byte{a, b}); err == nil && !json.Valid(out) {
			t.Fatalf("merged JSON is not JSON: %s", out)
		}
		if out, err := rest.MergeXMLLists([][]byte{a, b}); err == nil {
			d := xml.NewDecoder(bytes.NewReader(out))
			for {
				if _, err := d.Token(); err != nil {
					if !errors.Is(err, io.EOF) {
						// innerxml is copied verbatim from documents that
						// parsed; the merge must not break well-formedness.
						t.Fatalf("merged XML does not parse: %v\n%s", err, out)
					}
					break
				}
			}
		}
	})
}
