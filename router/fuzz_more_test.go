package router_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/yarnfed/yarnfed/router"
)

// Fuzz targets for the issue-13 REST decoders and mergers: no panic, and
// what is accepted is what the router routes by.

func FuzzDecodeAppBodies(f *testing.F) {
	f.Add("application/json", []byte(`{"priority":3}`))
	f.Add("application/xml", []byte(`<applicationpriority><priority>3</priority></applicationpriority>`))
	f.Add("application/json", []byte(`{"queue":"root.a"}`))
	f.Add("application/xml", []byte(`<appqueue><queue>a</queue></appqueue>`))
	f.Add("application/json", []byte(`{"timeout":{"type":"LIFETIME","expiryTime":"2026-12-05T22:51:00.104+0000"}}`))
	f.Add("application/xml", []byte(`<timeout><type>lifetime</type><expiryTime>x</expiryTime></timeout>`))
	f.Add("text/plain", []byte(`7`))
	f.Fuzz(func(t *testing.T, ctype string, body []byte) {
		_, _ = router.DecodeAppPriority(ctype, body)
		if q, err := router.DecodeAppQueue(ctype, body); err == nil && strings.TrimSpace(q) == "" {
			t.Fatal("accepted an empty queue")
		}
		if typ, err := router.DecodeAppTimeout(ctype, body); err == nil && typ != "LIFETIME" {
			t.Fatalf("accepted timeout type %q", typ)
		}
	})
}

func FuzzDecodeReservation(f *testing.F) {
	f.Add("application/json", []byte(`{"queue":"q","reservation-id":"reservation_1_0001","reservation-definition":{}}`))
	f.Add("application/xml", []byte(`<reservation-submission-context><queue>q</queue><reservation-id>reservation_1_0001</reservation-id></reservation-submission-context>`))
	f.Add("application/xml", []byte(`<reservation-delete-context><reservation-id>reservation_1_1</reservation-id></reservation-delete-context>`))
	f.Add("application/json", []byte(`{"reservation-id":"reservation_x"}`))
	f.Fuzz(func(t *testing.T, ctype string, body []byte) {
		if rr, err := router.DecodeReservationSubmission(ctype, body); err == nil && (rr.ReservationID == nil || strings.TrimSpace(rr.Queue) == "") {
			t.Fatalf("accepted a submission without id or queue: %+v", rr)
		}
		for _, dec := range []func(string, []byte) (router.ReservationRequest, error){router.DecodeReservationUpdate, router.DecodeReservationDelete} {
			if rr, err := dec(ctype, body); err == nil && rr.ReservationID == nil {
				t.Fatal("accepted a body without a reservation id")
			}
		}
	})
}

// FuzzMergeLists: merging list documents of RMs never panics, and merged
// JSON is JSON and merged XML is XML.
func FuzzMergeLists(f *testing.F) {
	f.Add([]byte(`{"reservations":[{"a":1}]}`), []byte(`{"reservations":[{"a":2}]}`))
	f.Add([]byte(`{"reservations":{"a":1}}`), []byte(`{"reservations":[{"a":2}],"x":3}`))
	f.Add([]byte(`<reservationListInfo><reservations><a>1</a></reservations></reservationListInfo>`), []byte(`<r><reservations/></r>`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if out, err := router.MergeJSONLists([][]byte{a, b}); err == nil && !json.Valid(out) {
			t.Fatalf("merged JSON is not JSON: %s", out)
		}
		if out, err := router.MergeXMLLists([][]byte{a, b}); err == nil {
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
