package kubenode

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func randomHex(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// writeCredentials writes the service-account key pair, the static tokens
// of every component (the kubelet's in system:nodes, so the Node authorizer
// and NodeRestriction treat it as the node), a CA and the API server's
// client certificate for the kubelet's API. It returns the tokens by user.
func (c *Cluster) writeCredentials() map[string]string {
	t := c.t
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	c.write("pki/sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	c.write("pki/sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))

	tokens := map[string]string{"admin": c.AdminToken}
	var csv bytes.Buffer
	for _, u := range []struct{ key, user, groups string }{
		{"admin", "kubenode-admin", "system:masters"},
		{"kubelet", "system:node:" + NodeName, "system:nodes"},
		{"controller-manager", "system:kube-controller-manager", ""},
		{"scheduler", "system:kube-scheduler", ""},
		{"kube-proxy", "system:kube-proxy", ""},
		{"coredns", corednsUser, ""},
	} {
		if tokens[u.key] == "" {
			tokens[u.key] = randomHex(t)
		}
		fmt.Fprintf(&csv, "%s,%s,%s,\"%s\"\n", tokens[u.key], u.user, u.user, u.groups)
	}
	c.write("pki/tokens.csv", csv.Bytes())

	caKey, caCert := newCert(t, nil, nil, pkix.Name{CommonName: "kubenode-ca"}, true)
	c.write("pki/ca.crt", caCert)
	ca, err := tls.X509KeyPair(caCert, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ckey, ccert := newCert(t, &ca, caCertParsed(t, caCert), pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}}, false)
	c.write("pki/apiserver-kubelet-client.key", ckey)
	c.write("pki/apiserver-kubelet-client.crt", ccert)
	return tokens
}

func caCertParsed(t testing.TB, p []byte) *x509.Certificate {
	b, _ := pem.Decode(p)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// newCert makes a key and certificate, self-signed when parent is nil.
func newCert(t testing.TB, parent *tls.Certificate, parentCert *x509.Certificate, subject pkix.Name, isCA bool) (keyPEM, certPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	signer, signerCert := any(key), tmpl
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		tmpl.ExtKeyUsage = nil
	} else {
		signer, signerCert = parent.PrivateKey, parentCert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// kubeconfig writes a kubeconfig for a token (the API server's serving
// certificate is its own CA).
func (c *Cluster) kubeconfig(name, token string) string {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubenode"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["kubenode"] = &clientcmdapi.Context{Cluster: "kubenode", AuthInfo: name}
	cfg.CurrentContext = "kubenode"
	p := c.path("etc", name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		c.t.Fatal(err)
	}
	return p
}
