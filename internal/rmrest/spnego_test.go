package rmrest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	krbclient "github.com/jcmturner/gokrb5/v8/client"

	"github.com/yarnfed/yarnfed/internal/krblogin"
	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/rmrest/spnegotest"
)

// kerberizedRM is a fake RM REST endpoint (named so: it answers /info and
// the app state, nothing else) behind spnegotest, with a real KDC.
type kerberizedRM struct {
	kdc  *krbtest.KDC
	ep   *spnegotest.Endpoint
	url  string // http://localhost:port: SPN HTTP/localhost
	mu   sync.Mutex
	seen []string // principal of each request the RM served
	body []string // bodies of PUTs
}

func startKerberizedRM(t *testing.T, kdc *krbtest.KDC, configure func(*spnegotest.Endpoint)) *kerberizedRM {
	t.Helper()
	httpKT := kdc.AddService(t, "HTTP/localhost")
	rm := &kerberizedRM{kdc: kdc}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws/v1/cluster/info", func(w http.ResponseWriter, r *http.Request) {
		rm.record(r, "")
		_ = json.NewEncoder(w).Encode(rmrest.ClusterInfoResponse{ClusterInfo: rmrest.ClusterInfo{ID: 7, HAState: "ACTIVE"}})
	})
	mux.HandleFunc("PUT /ws/v1/cluster/apps/{app}/state", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rm.record(r, string(b))
		_ = json.NewEncoder(w).Encode(rmrest.AppState{State: "KILLED"})
	})
	rm.ep = spnegotest.New(mux, kdc.Keytab(t, httpKT), "HTTP/localhost")
	if configure != nil {
		configure(rm.ep)
	}
	srv := httptest.NewServer(rm.ep)
	t.Cleanup(srv.Close)
	rm.url = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	return rm
}

func (rm *kerberizedRM) record(r *http.Request, body string) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	rm.seen = append(rm.seen, spnegotest.Principal(r))
	if body != "" {
		rm.body = append(rm.body, body)
	}
}

func login(t *testing.T, kdc *krbtest.KDC, name string) *krbclient.Client {
	t.Helper()
	kt := kdc.AddService(t, name)
	cl, err := krblogin.Config{Principal: kdc.Principal(name), Keytab: kt, Krb5Conf: kdc.ConfPath}.Login(nil)
	if err != nil {
		t.Fatalf("login %s: %v\nKDC log:\n%s", name, err, kdc.Log())
	}
	t.Cleanup(cl.Destroy)
	return cl
}

func counts(ep *spnegotest.Endpoint) [4]int64 {
	return [4]int64{ep.Challenges.Load(), ep.Tokens.Load(), ep.Refused.Load(), ep.CookieHits.Load()}
}

// TestSPNEGOClientNegotiatesOnceThenUsesCookie: the first call answers the
// Negotiate challenge with a real ticket; later calls (GET and a PUT with a
// body) present the hadoop.auth cookie; when the RM stops honouring the
// cookie, the client negotiates again, resending the PUT body intact.
func TestSPNEGOClientNegotiatesOnceThenUsesCookie(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	rm := startKerberizedRM(t, kdc, nil)
	c := rmrest.NewClient(rm.url)
	c.SPNEGO = rmrest.NewSPNEGO(login(t, kdc, "agent/localhost"), "")
	ctx := context.Background()

	for i := 0; i < 3; i++ {
		info, err := c.GetClusterInfo(ctx)
		if err != nil {
			t.Fatalf("call %d: %v\nKDC log:\n%s", i, err, kdc.Log())
		}
		if info.ID != 7 {
			t.Fatalf("info %+v", info)
		}
	}
	if got, want := counts(rm.ep), [4]int64{1, 1, 0, 2}; got != want {
		t.Fatalf("challenges, tokens, refused, cookie hits = %v, want %v", got, want)
	}
	if st, err := c.KillApp(ctx, "application_1_0001"); err != nil || st != "KILLED" {
		t.Fatalf("kill: %q %v", st, err)
	}
	if got, want := counts(rm.ep), [4]int64{1, 1, 0, 3}; got != want {
		t.Fatalf("after PUT: %v, want %v", got, want)
	}

	rm.ep.ExpireCookies()
	if _, err := c.KillApp(ctx, "application_1_0002"); err != nil {
		t.Fatalf("kill after cookie expiry: %v", err)
	}
	if got, want := counts(rm.ep), [4]int64{2, 2, 0, 3}; got != want {
		t.Fatalf("after cookie expiry: %v, want %v", got, want)
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	for i, p := range rm.seen {
		if p != "agent/localhost@"+kdc.Realm {
			t.Fatalf("request %d served as %q", i, p)
		}
	}
	if len(rm.body) != 2 || rm.body[0] != rm.body[1] || !strings.Contains(rm.body[1], `"KILLED"`) {
		t.Fatalf("PUT bodies %q", rm.body)
	}
}

// TestSPNEGOClientWithoutCookiesSendsTokenAtOnce: an RM that sets no cookie
// is sent a token up front after its first challenge, not challenged on
// every call; concurrent calls share one SPNEGO safely.
func TestSPNEGOClientWithoutCookiesSendsTokenAtOnce(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	rm := startKerberizedRM(t, kdc, func(ep *spnegotest.Endpoint) { ep.NoCookies = true })
	s := rmrest.NewSPNEGO(login(t, kdc, "gpg/localhost"), "HTTP/_HOST@"+kdc.Realm)
	c := rmrest.NewClient(rm.url)
	c.SPNEGO = s
	if _, err := c.GetClusterInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			c := rmrest.NewClient(rm.url) // a client per call, as the agent makes them
			c.SPNEGO = s
			_, err := c.GetClusterInfo(context.Background())
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, want := counts(rm.ep), [4]int64{1, 9, 0, 0}; got != want {
		t.Fatalf("challenges, tokens, refused, cookie hits = %v, want %v", got, want)
	}
}

// TestSPNEGOClientRefused: without a login the Negotiate challenge is a
// clear error; a token the RM cannot verify (a ticket for another HTTP
// principal) is refused once, not renegotiated in a loop.
func TestSPNEGOClientRefused(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	rm := startKerberizedRM(t, kdc, nil)
	kdc.AddService(t, "HTTP/elsewhere")
	ctx := context.Background()

	_, err := rmrest.NewClient(rm.url).GetClusterInfo(ctx)
	if !errors.Is(err, rmrest.ErrKerberosRequired) {
		t.Fatalf("no login: %v, want ErrKerberosRequired", err)
	}
	c := rmrest.NewClient(rm.url)
	c.SPNEGO = rmrest.NewSPNEGO(login(t, kdc, "agent/localhost"), "HTTP/elsewhere")
	_, err = c.GetClusterInfo(ctx)
	if !errors.Is(err, rmrest.ErrSPNEGORefused) {
		t.Fatalf("wrong principal: %v, want ErrSPNEGORefused", err)
	}
	if got, want := counts(rm.ep), [4]int64{2, 0, 1, 0}; got != want {
		t.Fatalf("challenges, tokens, refused, cookie hits = %v, want %v", got, want)
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if len(rm.seen) != 0 {
		t.Fatalf("RM served %d unauthenticated requests", len(rm.seen))
	}
}

// TestSPNEGOClientAgainstUnsecuredRM: a login does not change calls to an
// RM that does not ask for one (no token is sent).
func TestSPNEGOClientAgainstUnsecuredRM(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		_ = json.NewEncoder(w).Encode(rmrest.ClusterInfoResponse{ClusterInfo: rmrest.ClusterInfo{ID: 1}})
	}))
	defer srv.Close()
	c := rmrest.NewClient(srv.URL)
	c.SPNEGO = rmrest.NewSPNEGO(login(t, kdc, "agent/localhost"), "")
	for i := 0; i < 2; i++ {
		if _, err := c.GetClusterInfo(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(auth) != 2 || auth[0] != "" || auth[1] != "" {
		t.Fatalf("Authorization headers %q", auth)
	}
}
