package rmrest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxResponseBytes bounds a response body the client reads (an RM with many
// applications answers /apps with megabytes; 256 MiB is far beyond that).
const MaxResponseBytes = 256 << 20

// ErrHTTP wraps non-2xx answers that carry no RemoteException body.
var ErrHTTP = errors.New("rmrest: unexpected HTTP status")

// Error is an RM web service error reply.
type Error struct {
	Status int
	RemoteException
}

func (e *Error) Error() string {
	return fmt.Sprintf("rmrest: HTTP %d: %s: %s", e.Status, e.JavaClassName, e.Message)
}

// Client calls one RM's REST API with JSON.
type Client struct {
	// BaseURL is the RM web address, e.g. "http://rm:8088".
	BaseURL string
	// HTTP is the client to use; nil means a client with a 30 s timeout.
	HTTP *http.Client
	// User, if set, is sent as the user.name query parameter (Hadoop's
	// pseudo authentication).
	User string
	// SPNEGO, if set, answers the RM's Negotiate challenge with Kerberos
	// and keeps its hadoop.auth cookie (see SPNEGO). Nil: no Kerberos, and
	// a Kerberized RM's 401 is an error wrapping ErrKerberosRequired.
	SPNEGO *SPNEGO
	// MaxBody bounds a response body; 0 means MaxResponseBytes.
	MaxBody int64
}

// NewClient returns a client for baseURL ("host:port" gets http://).
func NewClient(baseURL string) *Client {
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: &http.Client{Timeout: 30 * time.Second}}
}

func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	if c.User != "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("user.name", c.User)
	}
	u := c.BaseURL + "/ws/v1/cluster" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var payload []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("rmrest: encode request: %w", err)
		}
		payload = b
	}
	// A request may be sent twice (again with a token after a Negotiate
	// challenge), so it is built from the encoded body each time.
	newReq := func() (*http.Request, error) {
		var rd io.Reader
		if payload != nil {
			rd = bytes.NewReader(payload)
		}
		req, err := http.NewRequestWithContext(ctx, method, u, rd)
		if err != nil {
			return nil, fmt.Errorf("rmrest: %w", err)
		}
		req.Header.Set("Accept", "application/json")
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		return req, nil
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, negotiated, err := c.send(hc, newReq)
	if err != nil {
		return fmt.Errorf("rmrest: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	limit := c.MaxBody
	if limit <= 0 {
		limit = MaxResponseBytes
	}
	if sd, ok := out.(streamDecoder); ok && resp.StatusCode >= 200 && resp.StatusCode <= 299 && !negotiateChallenge(resp) {
		// A list: decoded as it arrives, the bound applied while reading.
		if err := sd.decodeStream(&limitedBody{r: resp.Body, n: limit, path: path}); err != nil {
			if errors.Is(err, ErrResponseTooLarge) {
				return err
			}
			return fmt.Errorf("rmrest: decode %s: %w", path, err)
		}
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return fmt.Errorf("rmrest: read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return fmt.Errorf("%w: %s: more than %d bytes", ErrResponseTooLarge, path, limit)
	}
	if negotiateChallenge(resp) {
		// Hadoop's AuthenticationFilter answers its own text, not a
		// RemoteException: name the cause instead.
		if c.SPNEGO == nil {
			return fmt.Errorf("%w: %s %s: HTTP %d", ErrKerberosRequired, method, path, resp.StatusCode)
		}
		if negotiated {
			return fmt.Errorf("%w: %s %s: HTTP %d %s", ErrSPNEGORefused, method, path, resp.StatusCode, bytes.TrimSpace(data))
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var re RemoteExceptionResponse
		if json.Unmarshal(data, &re) == nil && re.RemoteException.JavaClassName != "" {
			return &Error{Status: resp.StatusCode, RemoteException: re.RemoteException}
		}
		return fmt.Errorf("%w: %s %s: %d %s", ErrHTTP, method, path, resp.StatusCode, bytes.TrimSpace(data))
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("rmrest: decode %s: %w", path, err)
	}
	return nil
}

// send sends the request newReq builds; with SPNEGO it adds the RM's
// cookie (or a token, for an RM known to want one), and answers a Negotiate
// challenge once with a token. negotiated says whether the last request
// sent carried a token.
func (c *Client) send(hc *http.Client, newReq func() (*http.Request, error)) (resp *http.Response, negotiated bool, err error) {
	req, err := newReq()
	if err != nil {
		return nil, false, err
	}
	s := c.SPNEGO
	if s == nil {
		resp, err = hc.Do(req)
		return resp, false, err
	}
	if negotiated, err = s.prepare(req); err != nil {
		return nil, false, err
	}
	if resp, err = hc.Do(req); err != nil {
		return nil, false, err
	}
	if !s.observe(req, resp) || negotiated {
		return resp, negotiated, nil
	}
	// Challenged without a token (first call, or the cookie expired):
	// once more with one.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if req, err = newReq(); err != nil {
		return nil, false, err
	}
	if err = s.setToken(req); err != nil {
		return nil, false, err
	}
	if resp, err = hc.Do(req); err != nil {
		return nil, true, err
	}
	s.observe(req, resp)
	return resp, true, nil
}

// GetClusterInfo is GET /ws/v1/cluster/info.
func (c *Client) GetClusterInfo(ctx context.Context) (*ClusterInfo, error) {
	var r ClusterInfoResponse
	if err := c.do(ctx, http.MethodGet, "/info", nil, nil, &r); err != nil {
		return nil, err
	}
	return &r.ClusterInfo, nil
}

// GetClusterMetrics is GET /ws/v1/cluster/metrics.
func (c *Client) GetClusterMetrics(ctx context.Context) (*ClusterMetrics, error) {
	var r ClusterMetricsResponse
	if err := c.do(ctx, http.MethodGet, "/metrics", nil, nil, &r); err != nil {
		return nil, err
	}
	return &r.ClusterMetrics, nil
}

// GetApps is GET /ws/v1/cluster/apps with a filter, decoded as the body
// arrives (AppList).
func (c *Client) GetApps(ctx context.Context, q AppsQuery) ([]App, error) {
	var r AppList
	if err := c.do(ctx, http.MethodGet, "/apps", q.Values(), nil, &r); err != nil {
		return nil, err
	}
	return r, nil
}

// GetApp is GET /ws/v1/cluster/apps/{appid}.
func (c *Client) GetApp(ctx context.Context, appID string) (*App, error) {
	var r AppResponse
	if err := c.do(ctx, http.MethodGet, "/apps/"+url.PathEscape(appID), nil, nil, &r); err != nil {
		return nil, err
	}
	return &r.App, nil
}

// GetAppAttempts is GET /ws/v1/cluster/apps/{appid}/appattempts.
func (c *Client) GetAppAttempts(ctx context.Context, appID string) ([]AppAttempt, error) {
	var r AppAttemptsResponse
	if err := c.do(ctx, http.MethodGet, "/apps/"+url.PathEscape(appID)+"/appattempts", nil, nil, &r); err != nil {
		return nil, err
	}
	return r.AppAttempts.AppAttempt, nil
}

// GetAppState is GET /ws/v1/cluster/apps/{appid}/state.
func (c *Client) GetAppState(ctx context.Context, appID string) (string, error) {
	var r AppState
	if err := c.do(ctx, http.MethodGet, "/apps/"+url.PathEscape(appID)+"/state", nil, nil, &r); err != nil {
		return "", err
	}
	return r.State, nil
}

// KillApp is PUT /ws/v1/cluster/apps/{appid}/state {"state":"KILLED"}; it
// returns the state the RM reports.
func (c *Client) KillApp(ctx context.Context, appID string) (string, error) {
	var r AppState
	if err := c.do(ctx, http.MethodPut, "/apps/"+url.PathEscape(appID)+"/state", nil, AppState{State: "KILLED"}, &r); err != nil {
		return "", err
	}
	return r.State, nil
}

// NewApplication is POST /ws/v1/cluster/apps/new-application.
func (c *Client) NewApplication(ctx context.Context) (*NewApplication, error) {
	var r NewApplication
	if err := c.do(ctx, http.MethodPost, "/apps/new-application", nil, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// GetNodes is GET /ws/v1/cluster/nodes, optionally filtered by states
// (comma-separated NodeState names), decoded as the body arrives.
func (c *Client) GetNodes(ctx context.Context, states string) ([]Node, error) {
	var q url.Values
	if states != "" {
		q = url.Values{"states": {states}}
	}
	var r NodeList
	if err := c.do(ctx, http.MethodGet, "/nodes", q, nil, &r); err != nil {
		return nil, err
	}
	return r, nil
}

// GetNode is GET /ws/v1/cluster/nodes/{nodeid}.
func (c *Client) GetNode(ctx context.Context, nodeID string) (*Node, error) {
	var r NodeResponse
	if err := c.do(ctx, http.MethodGet, "/nodes/"+url.PathEscape(nodeID), nil, nil, &r); err != nil {
		return nil, err
	}
	return &r.Node, nil
}

// GetScheduler is GET /ws/v1/cluster/scheduler.
func (c *Client) GetScheduler(ctx context.Context) (*SchedulerInfo, error) {
	var r SchedulerResponse
	if err := c.do(ctx, http.MethodGet, "/scheduler", nil, nil, &r); err != nil {
		return nil, err
	}
	return &r.Scheduler.SchedulerInfo, nil
}
