package rmrest

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// ErrResponseTooLarge is returned when a response body exceeds the
// client's MaxBody (or MaxResponseBytes).
var ErrResponseTooLarge = errors.New("rmrest: response too large")

// GetJSON is GET /ws/v1/cluster{path} with the client's authentication and
// body bound, decoded into out. It is for callers that read a document in
// their own shape (out may be a *json.RawMessage, or implement
// json.Unmarshaler), e.g. the GPG's reading of /scheduler, whose lists
// may come as a lone object.
func (c *Client) GetJSON(ctx context.Context, path string, q url.Values, out any) error {
	return c.do(ctx, http.MethodGet, path, q, nil, out)
}
