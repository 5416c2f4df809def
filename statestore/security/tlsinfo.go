// Package security is the state store's transport security: one TLSInfo
// (certificate, key and trusted CA files, reloaded when they change) that
// yields the server and client tls.Config for gRPC and the Raft transport,
// the identity and role a client certificate carries, and the per-RPC
// authorization table every replica enforces.
package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"
)

// TLSInfo names the PEM files of one party: its certificate chain and key,
// and the CA bundle it trusts for its peers. The files are re-read when
// their modification time or size changes (checked at most once a second),
// so rotating them on disk takes effect for new connections without a
// restart.
type TLSInfo struct {
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
	CAFile   string `json:"ca_file"`
}

// Empty reports whether no file is set (plaintext).
func (i TLSInfo) Empty() bool { return i.CertFile == "" && i.KeyFile == "" && i.CAFile == "" }

// Validate requires all three files once any is set: mutual TLS needs a
// certificate to present and a CA to check the peer's against.
func (i TLSInfo) Validate() error {
	if i.Empty() {
		return nil
	}
	if i.CertFile == "" || i.KeyFile == "" || i.CAFile == "" {
		return errors.New("tls: cert_file, key_file and ca_file must all be set (mutual TLS)")
	}
	return nil
}

// BindFlags defines <prefix>tls-cert, <prefix>tls-key and <prefix>tls-ca.
func (i *TLSInfo) BindFlags(f *pflag.FlagSet, prefix, who string) {
	f.StringVar(&i.CertFile, prefix+"tls-cert", i.CertFile, who+" certificate (PEM); with --"+prefix+"tls-key and --"+prefix+"tls-ca enables mutual TLS")
	f.StringVar(&i.KeyFile, prefix+"tls-key", i.KeyFile, who+" private key (PEM)")
	f.StringVar(&i.CAFile, prefix+"tls-ca", i.CAFile, "CA bundle (PEM) trusted for peer certificates")
}

// ErrPlaintext is returned by CheckMode when a process is given neither
// TLS files nor the explicit insecure flag: it refuses to start rather than
// serve or speak the federation's state in the clear.
var ErrPlaintext = errors.New("refusing to start: no TLS certificate for the state store")

// Mode names, for messages, the options through which one process chooses
// its state store transport.
type Mode struct {
	TLSFlags string // e.g. "--tls-cert, --tls-key and --tls-ca"
	Insecure string // e.g. "--insecure"
}

// ServerMode and ClientMode are the options of `yarnfed statestore` and of
// every store client role.
var (
	ServerMode = Mode{TLSFlags: "--tls-cert, --tls-key and --tls-ca", Insecure: "--insecure"}
	ClientMode = Mode{TLSFlags: "--store-tls-cert, --store-tls-key and --store-tls-ca", Insecure: "--store-insecure"}
)

// CheckMode decides between TLS and plaintext for one process. Plaintext
// needs the explicit insecure flag and is logged as a warning; with neither
// TLS files nor the flag the result is ErrPlaintext, naming both ways out.
func CheckMode(info TLSInfo, insecure bool, m Mode, log *slog.Logger) (useTLS bool, err error) {
	if err := info.Validate(); err != nil {
		return false, err
	}
	switch {
	case !info.Empty() && insecure:
		return false, fmt.Errorf("%s and TLS files are exclusive", m.Insecure)
	case !info.Empty():
		return true, nil
	case insecure:
		log.Warn("state store traffic is PLAINTEXT and UNAUTHENTICATED ("+m.Insecure+"): anyone who reaches the port can rewrite or wipe the federation; development only", "flag", m.Insecure)
		return false, nil
	}
	return false, fmt.Errorf("%w: give %s (`yarnfed certs` issues a CA and per-role certificates), or pass %s to run plaintext and unauthenticated in a test or dev federation", ErrPlaintext, m.TLSFlags, m.Insecure)
}

// MinVersion is TLS 1.3: every party is ours, no legacy peer to serve.
const MinVersion = tls.VersionTLS13

// reloadEvery bounds how often the files are stat'ed.
const reloadEvery = time.Second

// Reloader holds the current key pair and CA pool of a TLSInfo.
type Reloader struct {
	info TLSInfo

	mu       sync.Mutex
	checked  time.Time
	stamp    [3]fileStamp
	cert     *tls.Certificate
	pool     *x509.CertPool
	err      error        // of the last reload; nil while the files are the pair in use
	badStamp [3]fileStamp // the files' state when err was recorded
	watch    reloadWatch
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// NewReloader loads info's files once; an error here is a startup error.
func NewReloader(info TLSInfo) (*Reloader, error) {
	if err := info.Validate(); err != nil {
		return nil, err
	}
	if info.Empty() {
		return nil, errors.New("tls: no files configured")
	}
	r := &Reloader{info: info}
	if err := r.reload(true); err != nil {
		return nil, err
	}
	return r, nil
}

// current returns the key pair and pool, re-reading the files if they
// changed. A failed reload keeps the previous good pair (a half-written
// rotation must not take the process down), is recorded (Err, logged and
// counted once per change, see Observe) and is retried when the files
// change again.
func (r *Reloader) current() (*tls.Certificate, *x509.CertPool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) >= reloadEvery {
		_ = r.reload(false) // recorded in r.err
	}
	return r.cert, r.pool
}

// reload re-reads the files when their state changed (always when force,
// the first load) and records the outcome.
func (r *Reloader) reload(force bool) error {
	r.checked = time.Now()
	var st [3]fileStamp
	var statErr error
	for i, p := range []string{r.info.CertFile, r.info.KeyFile, r.info.CAFile} {
		fi, err := os.Stat(p)
		if err != nil {
			st[i] = fileStamp{size: -1} // missing: a state of its own
			statErr = errors.Join(statErr, fmt.Errorf("tls: %w", err))
			continue
		}
		st[i] = fileStamp{fi.ModTime(), fi.Size()}
	}
	switch {
	case force:
	case statErr == nil && st == r.stamp:
		if r.err != nil { // back to the files in use
			r.settle(st, nil)
		}
		return nil
	case r.err != nil && st == r.badStamp:
		return r.err // this broken state is already recorded
	}
	err := statErr
	if err == nil {
		err = r.load(st)
	}
	if !force {
		r.settle(st, err)
	}
	return err
}

// load reads the files whose state is st and, if they hold a usable pair
// and CA bundle, makes them current.
func (r *Reloader) load(st [3]fileStamp) error {
	cert, err := tls.LoadX509KeyPair(r.info.CertFile, r.info.KeyFile)
	if err != nil {
		return fmt.Errorf("tls: key pair %s/%s: %w", r.info.CertFile, r.info.KeyFile, err)
	}
	if cert.Leaf == nil && len(cert.Certificate) > 0 {
		cert.Leaf, _ = x509.ParseCertificate(cert.Certificate[0])
	}
	caPEM, err := os.ReadFile(r.info.CAFile)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("tls: %s holds no PEM certificate", r.info.CAFile)
	}
	r.cert, r.pool, r.stamp = &cert, pool, st
	return nil
}

// verify checks a peer's chain against the current pool for usage and
// returns its identity; requireRole, when set, must be among its roles.
func (r *Reloader) verify(rawCerts [][]byte, usage x509.ExtKeyUsage, requireRole Role) (Identity, error) {
	if len(rawCerts) == 0 {
		return Identity{}, errors.New("tls: peer presented no certificate")
	}
	certs := make([]*x509.Certificate, len(rawCerts))
	for i, raw := range rawCerts {
		c, err := x509.ParseCertificate(raw)
		if err != nil {
			return Identity{}, fmt.Errorf("tls: peer certificate: %w", err)
		}
		certs[i] = c
	}
	_, pool := r.current()
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return Identity{}, fmt.Errorf("tls: peer certificate: %w", err)
	}
	id := IdentityOf(certs[0])
	if requireRole != "" && !id.Has(requireRole) {
		return Identity{}, fmt.Errorf("tls: peer %q lacks role %s", id.Name, requireRole)
	}
	return id, nil
}

// ServerConfig is the tls.Config of a listener that requires a client
// certificate signed by the current CA; requireRole, when set, must be one
// of the client's roles (the Raft port requires RoleReplica). Chains are
// verified by hand against the pool current at handshake time, so a CA
// rotation needs no restart either.
func (r *Reloader) ServerConfig(requireRole Role) *tls.Config {
	return &tls.Config{
		MinVersion: MinVersion,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, _ := r.current()
			return c, nil
		},
		// RequireAnyClientCert + our own verification (below) instead of
		// RequireAndVerifyClientCert: ClientCAs would be fixed at start.
		ClientAuth: tls.RequireAnyClientCert,
		// A resumed session skips VerifyPeerCertificate: no tickets, so
		// every connection is checked against the current CA and roles.
		SessionTicketsDisabled: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			_, err := r.verify(raw, x509.ExtKeyUsageClientAuth, requireRole)
			return err
		},
	}
}

// ClientConfig is the tls.Config to dial a replica: it presents the
// current certificate and accepts only a server certificate from the
// current CA carrying RoleReplica. Host names are not checked: the CA is
// the federation's own, and what a client must know is that it talks to a
// replica, whatever address it was given.
func (r *Reloader) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: MinVersion,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, _ := r.current()
			return c, nil
		},
		InsecureSkipVerify: true, // replaced by VerifyPeerCertificate below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			_, err := r.verify(raw, x509.ExtKeyUsageServerAuth, RoleReplica)
			return err
		},
	}
}
