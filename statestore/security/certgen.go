package security

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority for a federation: `yarnfed certs` and the
// tests issue every party's certificate from one.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte
}

// NewCA creates a self-signed P-256 CA valid for validity.
func NewCA(name string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"yarnfed"}},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// LoadCA reads a CA certificate and its key (PEM, as WriteFiles wrote them).
func LoadCA(certFile, keyFile string) (*CA, error) {
	cp, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	kp, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(cp)
	kb, _ := pem.Decode(kp)
	if cb == nil || kb == nil {
		return nil, errors.New("certs: CA files are not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key, PEM: cp}, nil
}

// KeyPEM returns the CA's private key.
func (ca *CA) KeyPEM() ([]byte, error) { return keyPEM(ca.key) }

// Leaf describes one certificate to issue.
type Leaf struct {
	Name  string // CN: a sub-cluster id for agents
	Roles []Role // O= values
	// Hosts are DNS names or IPs (SANs); not checked by yarnfed peers, but
	// useful to other tools.
	Hosts     []string
	NotBefore time.Time // zero: now
	NotAfter  time.Time // zero: NotBefore + 1 year
}

// Issue signs a leaf usable as both TLS server and client (replicas are
// both); it returns PEM certificate and key.
func (ca *CA) Issue(l Leaf) (certPEM, keyPEMOut []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if l.NotBefore.IsZero() {
		l.NotBefore = time.Now().Add(-time.Minute)
	}
	if l.NotAfter.IsZero() {
		l.NotAfter = l.NotBefore.Add(365 * 24 * time.Hour)
	}
	org := make([]string, len(l.Roles))
	for i, r := range l.Roles {
		org[i] = string(r)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: l.Name, Organization: org},
		NotBefore:    l.NotBefore,
		NotAfter:     l.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range l.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	kp, err := keyPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), kp, nil
}

// WriteFiles issues l into dir as <base>.crt and <base>.key (0600), writes
// the CA bundle as ca.crt, and returns the TLSInfo naming them.
func (ca *CA) WriteFiles(dir, base string, l Leaf) (TLSInfo, error) {
	c, k, err := ca.Issue(l)
	if err != nil {
		return TLSInfo{}, err
	}
	info := TLSInfo{CertFile: filepath.Join(dir, base+".crt"), KeyFile: filepath.Join(dir, base+".key"), CAFile: filepath.Join(dir, "ca.crt")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return TLSInfo{}, err
	}
	// Key first, then certificate: a reloader that sees the new
	// certificate must find its key (it retries a mismatched pair).
	for _, f := range []struct {
		path string
		b    []byte
		mode os.FileMode
	}{{info.KeyFile, k, 0o600}, {info.CertFile, c, 0o644}, {info.CAFile, ca.PEM, 0o644}} {
		if err := writeAtomic(f.path, f.b, f.mode); err != nil {
			return TLSInfo{}, err
		}
	}
	return info, nil
}

// writeAtomic replaces path by rename, so a reader never sees half a file.
func writeAtomic(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func keyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}
