package rest

import (
	"errors"
	"fmt"
)

// ErrRelayedRefusal: the RM answered a relayed REST call with an error
// status, which the client receives as it was sent.
var ErrRelayedRefusal = errors.New("the RM refused the relayed call")

// auditOutcome is the result the audit line records: the client's. A
// relayed answer carries the RM's status (relay.go) with a nil
// error, so a 4xx/5xx from the RM is a failure too.
func auditOutcome(rep restReply, err error) error {
	if err != nil {
		return err
	}
	if rep.raw != nil && rep.raw.status >= 400 {
		return fmt.Errorf("%w: HTTP %d", ErrRelayedRefusal, rep.raw.status)
	}
	return nil
}
