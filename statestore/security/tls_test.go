package security

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func newCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func issue(t *testing.T, ca *CA, dir, base string, l Leaf) TLSInfo {
	t.Helper()
	info, err := ca.WriteFiles(dir, base, l)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func reloader(t *testing.T, info TLSInfo) *Reloader {
	t.Helper()
	r, err := NewReloader(info)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// serveTLS accepts connections with cfg and reports each handshake's
// outcome (the peer's identity or the error).
func serveTLS(t *testing.T, cfg *tls.Config) (string, <-chan error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan error, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			err = c.(*tls.Conn).Handshake()
			c.Close()
			out <- err
		}
	}()
	return ln.Addr().String(), out
}

// dial handshakes as a client and returns the server side's verdict too.
func dial(t *testing.T, addr string, cfg *tls.Config, server <-chan error) (clientErr, serverErr error) {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err == nil {
		// TLS 1.3: the server's verdict on our certificate arrives after
		// the client's handshake completes; a read surfaces it.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
		if err != nil && isEOF(err) {
			err = nil
		}
	}
	select {
	case serverErr = <-server:
	case <-time.After(5 * time.Second):
		t.Fatal("server saw no handshake")
	}
	return err, serverErr
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) }

// TestMutualTLSRefusals: a server config requiring a replica client
// refuses a client without a certificate, one from another CA, an expired
// one, and one without the replica role; a client refuses a server that
// is not a replica.
func TestMutualTLSRefusals(t *testing.T) {
	dir := t.TempDir()
	ca, other := newCA(t), newCA(t)
	srv := reloader(t, issue(t, ca, filepath.Join(dir, "srv"), "srv", Leaf{Name: "ss1", Roles: []Role{RoleReplica}}))
	addr, verdicts := serveTLS(t, srv.ServerConfig(RoleReplica))

	good := reloader(t, issue(t, ca, filepath.Join(dir, "good"), "c", Leaf{Name: "ss2", Roles: []Role{RoleReplica}}))
	foreign := reloader(t, issue(t, other, filepath.Join(dir, "foreign"), "c", Leaf{Name: "ss3", Roles: []Role{RoleReplica}}))
	expired := reloader(t, issue(t, ca, filepath.Join(dir, "expired"), "c", Leaf{Name: "ss4", Roles: []Role{RoleReplica},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)}))
	router := reloader(t, issue(t, ca, filepath.Join(dir, "router"), "c", Leaf{Name: "r1", Roles: []Role{RoleRouter}}))

	noCert := good.ClientConfig()
	noCert.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tls.Certificate{}, nil }

	cases := []struct {
		name string
		cfg  *tls.Config
		ok   bool
	}{
		{"valid replica", good.ClientConfig(), true},
		{"no certificate", noCert, false},
		{"other CA", foreign.ClientConfig(), false},
		{"expired", expired.ClientConfig(), false},
		{"router on the replica port", router.ClientConfig(), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, serverErr := dial(t, addr, c.cfg, verdicts)
			if (serverErr == nil) != c.ok {
				t.Fatalf("server verdict %v, want ok=%v", serverErr, c.ok)
			}
		})
	}

	t.Run("client refuses a non-replica server", func(t *testing.T) {
		fake := reloader(t, issue(t, ca, filepath.Join(dir, "fake"), "srv", Leaf{Name: "evil", Roles: []Role{RoleRouter}}))
		addr, verdicts := serveTLS(t, fake.ServerConfig(""))
		clientErr, _ := dial(t, addr, good.ClientConfig(), verdicts)
		if clientErr == nil {
			t.Fatal("client accepted a server certificate without the replica role")
		}
	})
}

// TestReloadOnChange: rotating the files on disk changes what new
// handshakes present and trust, without a new Reloader.
func TestReloadOnChange(t *testing.T) {
	dir := t.TempDir()
	ca, ca2 := newCA(t), newCA(t)
	srvInfo := issue(t, ca, filepath.Join(dir, "srv"), "srv", Leaf{Name: "ss1", Roles: []Role{RoleReplica}})
	srv := reloader(t, srvInfo)
	addr, verdicts := serveTLS(t, srv.ServerConfig(""))

	// The client starts with a router certificate from ca.
	cliDir := filepath.Join(dir, "cli")
	cli := reloader(t, issue(t, ca, cliDir, "c", Leaf{Name: "r1", Roles: []Role{RoleRouter}}))
	cfg := cli.ClientConfig()
	var seen Identity
	if _, err := dial(t, addr, cfg, verdicts); err != nil {
		t.Fatal(err)
	}

	// Rotate the client to an admin certificate issued by ca2, and the
	// server's CA bundle to ca2: both sides must pick the files up.
	// (The client then trusts only ca2, so the server's certificate is
	// reissued from ca2 as well.)
	issue(t, ca2, cliDir, "c", Leaf{Name: "ops", Roles: []Role{RoleAdmin}})
	issue(t, ca2, filepath.Join(dir, "srv"), "srv", Leaf{Name: "ss1", Roles: []Role{RoleReplica}})
	if err := writeAtomic(srvInfo.CAFile, append(append([]byte{}, ca.PEM...), ca2.PEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, _ := cli.current()
		if c.Leaf != nil && c.Leaf.Subject.CommonName == "ops" {
			seen = IdentityOf(c.Leaf)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("client certificate not reloaded")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !seen.Has(RoleAdmin) {
		t.Fatalf("reloaded identity %+v", seen)
	}
	for {
		_, serverErr := dial(t, addr, cfg, verdicts)
		if serverErr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handshake after rotation still fails: %v", serverErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHalfWrittenRotationKeepsOldPair: a key that does not match the
// certificate (rotation in progress) keeps the previous good pair.
func TestHalfWrittenRotationKeepsOldPair(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t)
	info := issue(t, ca, dir, "c", Leaf{Name: "a", Roles: []Role{RoleAdmin}})
	r := reloader(t, info)
	_, k, err := ca.Issue(Leaf{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(info.KeyFile, k, 0o600); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.checked = time.Time{}
	r.mu.Unlock()
	c, _ := r.current()
	if c == nil || c.Leaf.Subject.CommonName != "a" {
		t.Fatalf("lost the good pair: %+v", c)
	}
}
