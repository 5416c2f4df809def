package restwire

import (
	"encoding/xml"
	"strings"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// Decoders for the bodies of the per-application and reservation calls.
// The router relays the body as sent once it is valid; it decodes only to
// refuse malformed input itself and to read what it routes by.

// DecodeAppPriority decodes PUT /apps/{id}/priority ({"priority":N}).
func DecodeAppPriority(contentType string, body []byte) (int32, error) {
	var in struct {
		XMLName  xml.Name `json:"-" xml:"applicationpriority"`
		Priority *int32   `json:"priority" xml:"priority"`
	}
	if err := DecodeBody(contentType, body, &in); err != nil {
		return 0, err
	}
	if in.Priority == nil {
		return 0, BadRequest("priority is required")
	}
	return *in.Priority, nil
}

// DecodeAppQueue decodes PUT /apps/{id}/queue ({"queue":"name"}).
func DecodeAppQueue(contentType string, body []byte) (string, error) {
	var in struct {
		XMLName xml.Name `json:"-" xml:"appqueue"`
		Queue   string   `json:"queue" xml:"queue"`
	}
	if err := DecodeBody(contentType, body, &in); err != nil {
		return "", err
	}
	if strings.TrimSpace(in.Queue) == "" {
		return "", BadRequest("queue is required")
	}
	return in.Queue, nil
}

type appTimeoutBody struct {
	XMLName    xml.Name `json:"-" xml:"timeout"`
	Type       string   `json:"type" xml:"type"`
	ExpiryTime string   `json:"expiryTime" xml:"expiryTime"`
}

// DecodeAppTimeout decodes PUT /apps/{id}/timeout
// ({"timeout":{"type":"LIFETIME","expiryTime":"..."}}) and returns the
// timeout type.
func DecodeAppTimeout(contentType string, body []byte) (string, error) {
	var in appTimeoutBody
	x, err := isXML(contentType)
	if err != nil {
		return "", err
	}
	if x {
		err = DecodeBody(contentType, body, &in)
	} else {
		var env struct {
			Timeout *appTimeoutBody `json:"timeout"`
		}
		if err = DecodeBody(contentType, body, &env); err == nil {
			if env.Timeout == nil {
				return "", BadRequest("timeout is required: {\"timeout\":{\"type\":\"LIFETIME\",\"expiryTime\":...}}")
			}
			in = *env.Timeout
		}
	}
	if err != nil {
		return "", err
	}
	t := strings.ToUpper(strings.TrimSpace(in.Type))
	if _, ok := yarnpb.ApplicationTimeoutTypeProto_value["APP_TIMEOUT_"+t]; !ok || t == "" {
		return "", BadRequest("timeout type %q: want LIFETIME", in.Type)
	}
	if strings.TrimSpace(in.ExpiryTime) == "" {
		return "", BadRequest("timeout expiryTime is required (ISO 8601, e.g. 2026-12-05T22:51:00.104+0000)")
	}
	return t, nil
}

// ReservationRequest is what the router reads of a reservation body: the
// queue (submit) and the reservation it is about.
type ReservationRequest struct {
	Queue         string
	ReservationID *yarnpb.ReservationIdProto
}

type reservationBody struct {
	Queue         string `json:"queue" xml:"queue"`
	ReservationID string `json:"reservation-id" xml:"reservation-id"`
}

func decodeReservation(root, contentType string, body []byte) (ReservationRequest, error) {
	var in reservationBody
	x, err := isXML(contentType)
	if err != nil {
		return ReservationRequest{}, err
	}
	if x {
		var doc struct {
			XMLName xml.Name
			reservationBody
		}
		if err := DecodeBody(contentType, body, &doc); err != nil {
			return ReservationRequest{}, err
		}
		if doc.XMLName.Local != root {
			return ReservationRequest{}, BadRequest("root element <%s>, want <%s>", doc.XMLName.Local, root)
		}
		in = doc.reservationBody
	} else if err := DecodeBody(contentType, body, &in); err != nil {
		return ReservationRequest{}, err
	}
	if in.ReservationID == "" {
		return ReservationRequest{}, BadRequest("reservation-id is required (get one from POST /ws/v1/cluster/reservation/new-reservation)")
	}
	rid, err := ParseReservationID(in.ReservationID)
	if err != nil {
		return ReservationRequest{}, err
	}
	return ReservationRequest{Queue: in.Queue, ReservationID: rid}, nil
}

// DecodeReservationSubmission reads a reservation/submit body.
func DecodeReservationSubmission(contentType string, body []byte) (ReservationRequest, error) {
	rr, err := decodeReservation("reservation-submission-context", contentType, body)
	if err == nil && strings.TrimSpace(rr.Queue) == "" {
		err = BadRequest("queue is required")
	}
	return rr, err
}

// DecodeReservationUpdate reads a reservation/update body.
func DecodeReservationUpdate(contentType string, body []byte) (ReservationRequest, error) {
	return decodeReservation("reservation-update-context", contentType, body)
}

// DecodeReservationDelete reads a reservation/delete body.
func DecodeReservationDelete(contentType string, body []byte) (ReservationRequest, error) {
	return decodeReservation("reservation-delete-context", contentType, body)
}
