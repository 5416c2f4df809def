// Package kubetest runs a real Kubernetes API server for tests: etcd and
// kube-apiserver, built from the Go module proxy by scripts/kube-binaries.sh,
// started on 127.0.0.1 with free ports, temporary directories, RBAC
// authorization and static bearer tokens. Without the binaries a test skips
// with the reason, unless YARNFED_KUBE_REQUIRED=1 (CI), where it fails.
package kubetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Version is the Kubernetes release hack/kube builds (its go.mod's
// k8s.io/kubernetes requirement; a test keeps the two equal).
const Version = "v1.36.3"

// Environment variables.
const (
	// EnvAssets names a directory holding kube-apiserver and etcd, overriding
	// the cache location.
	EnvAssets = "YARNFED_KUBE_ASSETS"
	// EnvRequired=1 turns a missing binary from a skip into a failure.
	EnvRequired = "YARNFED_KUBE_REQUIRED"
	// EnvCache is the cache root scripts/kube-binaries.sh builds into.
	EnvCache = "YARNFED_CACHE"
)

// BinaryDir is where the binaries are looked for: $YARNFED_KUBE_ASSETS, else
// ${YARNFED_CACHE:-$HOME/.cache/yarnfed}/kube/<Version> (as the script builds).
func BinaryDir() string {
	if d := os.Getenv(EnvAssets); d != "" {
		return d
	}
	root := os.Getenv(EnvCache)
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		root = filepath.Join(home, ".cache", "yarnfed")
	}
	return filepath.Join(root, "kube", Version)
}

// User is a static token identity (the API server's --token-auth-file).
type User struct {
	Name   string
	Groups []string
	// Token is filled in by Start when empty.
	Token string
}

// Options tunes Start.
type Options struct {
	// Users get static tokens in addition to the admin (system:masters).
	Users []User
}

// Cluster is a running etcd + kube-apiserver.
type Cluster struct {
	// URL is the API server's https address on 127.0.0.1.
	URL string
	// CAData verifies the API server's self-signed serving certificate.
	CAData []byte
	// AdminToken authenticates as a member of system:masters.
	AdminToken string
	// Users are Options.Users with their tokens.
	Users map[string]User

	dir string
}

// Start runs a cluster for the duration of the test; it is stopped and its
// files removed at cleanup.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	bin := BinaryDir()
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			msg := fmt.Sprintf("real Kubernetes API server test needs %s in %s (run `make kube-binaries`, or set %s): %v", name, bin, EnvAssets, err)
			if os.Getenv(EnvRequired) == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	dir := t.TempDir()
	c := &Cluster{dir: dir, AdminToken: token(t), Users: map[string]User{}}

	// Ports are picked free and handed over; another process could grab one
	// in between, so a start that fails is retried on fresh ports.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var etcdURL string
		if etcdURL, err = c.startEtcd(t, bin, attempt); err != nil {
			continue
		}
		if err = c.startAPIServer(t, bin, etcdURL, opts, attempt); err == nil {
			return c
		}
	}
	t.Fatalf("kubetest: %v", err)
	return nil
}

func token(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startProcess(t testing.TB, logPath, path string, args ...string) (*Process, error) {
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = sysProcAttr()
	p, err := StartProcess(cmd, logPath, (*exec.Cmd).Start)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	return p, nil
}

func (c *Cluster) startEtcd(t testing.TB, bin string, attempt int) (string, error) {
	client, peer := freePort(t), freePort(t)
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	p, err := startProcess(t, filepath.Join(c.dir, fmt.Sprintf("etcd-%d.log", attempt)), filepath.Join(bin, "etcd"),
		"--name", "kubetest",
		"--data-dir", filepath.Join(c.dir, fmt.Sprintf("etcd-%d", attempt)),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "kubetest="+peerURL,
		"--unsafe-no-fsync", // a test's data need not survive a power cut
		"--log-level", "warn")
	if err != nil {
		return "", err
	}
	if err := waitHTTP(p, clientURL+"/health", nil, ""); err != nil {
		return "", fmt.Errorf("etcd: %w\n%s", err, p.Tail(4000))
	}
	return clientURL, nil
}

func (c *Cluster) startAPIServer(t testing.TB, bin, etcdURL string, opts Options, attempt int) error {
	// Service-account signing key (required flags, even if unused here).
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	saKey, saPub := filepath.Join(c.dir, "sa.key"), filepath.Join(c.dir, "sa.pub")
	if err := os.WriteFile(saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return err
	}

	// Static tokens: token,user,uid,"group1,group2".
	var tokens bytes.Buffer
	fmt.Fprintf(&tokens, "%s,kubetest-admin,kubetest-admin,\"system:masters\"\n", c.AdminToken)
	for _, u := range opts.Users {
		if u.Token == "" {
			u.Token = token(t)
		}
		c.Users[u.Name] = u
		fmt.Fprintf(&tokens, "%s,%s,%s,\"%s\"\n", u.Token, u.Name, u.Name, strings.Join(u.Groups, ","))
	}
	tokenFile := filepath.Join(c.dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, tokens.Bytes(), 0o600); err != nil {
		return err
	}

	port := freePort(t)
	certDir := filepath.Join(c.dir, fmt.Sprintf("certs-%d", attempt))
	p, err := startProcess(t, filepath.Join(c.dir, fmt.Sprintf("kube-apiserver-%d.log", attempt)), filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port), "--cert-dir", certDir,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--authorization-mode", "RBAC",
		"--token-auth-file", tokenFile,
		// No controller-manager creates the default ServiceAccount, so pods
		// could not be admitted with this plugin on.
		"--disable-admission-plugins", "ServiceAccount")
	if err != nil {
		return err
	}
	c.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
	// The serving certificate is self-signed and written once the server
	// starts; it is its own CA.
	if err := waitHTTP(p, c.URL+"/readyz", func() ([]byte, error) {
		return os.ReadFile(filepath.Join(certDir, "apiserver.crt"))
	}, c.AdminToken); err != nil {
		return fmt.Errorf("kube-apiserver: %w\n%s", err, p.Tail(4000))
	}
	c.CAData, err = os.ReadFile(filepath.Join(certDir, "apiserver.crt"))
	return err
}

// waitHTTP polls url until it answers 200, the process exits, or a minute
// passes. ca, if set, supplies the CA once it exists.
func waitHTTP(p *Process, url string, ca func() ([]byte, error), bearer string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last error
	for {
		if p.Exited() {
			return fmt.Errorf("exited before %s answered (last error: %v)", url, last)
		}
		last = probe(ctx, url, ca, bearer)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %v)", url, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func probe(ctx context.Context, url string, ca func() ([]byte, error), bearer string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	if ca != nil {
		pemCA, err := ca()
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemCA) {
			return errors.New("no certificate in the CA file yet")
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// RESTConfig connects with a bearer token (AdminToken or a User's).
func (c *Cluster) RESTConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            c.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData},
	}
}

// WriteKubeconfig writes a kubeconfig file for the token and returns its
// path, for code under test that loads one as an operator would give it.
func (c *Cluster) WriteKubeconfig(t testing.TB, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "user"}
	cfg.CurrentContext = "kubetest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
