// Package krbtest runs a real MIT Kerberos KDC for tests: Debian's krb5kdc
// with a fresh realm in a temporary directory, listening on 127.0.0.1 on a
// free port (TCP and UDP), principals created and keytabs exported with
// kadmin.local. The krb5.conf it writes is read by both gokrb5
// (Config/LoadConfig) and the JDK (-Djava.security.krb5.conf=ConfPath).
//
// Without the binaries (apt-get install krb5-kdc krb5-admin-server) a test
// skips with the reason, unless YARNFED_KRB_REQUIRED=1 (CI), where it fails.
//
// Typical use:
//
//	kdc := krbtest.Start(t, krbtest.Options{})
//	rmKeytab := kdc.AddService(t, "rm/localhost")     // random key, keytab file
//	alice := kdc.AddUser(t, "alice")                    // keytab too, plus a password
//	cfg := kdc.Config(t)                                // *gokrb5 config.Config
//
// `make deadcode` lists most of this package: the bench binary links it
// through router/routertest (krb.go), so functions only tests call show
// as unreachable there; they are test support, kept on purpose.
package krbtest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/yarnfed/yarnfed/internal/testenv"
)

// Environment variables.
const (
	// EnvRequired=1 turns missing KDC binaries from a skip into a failure.
	EnvRequired = "YARNFED_KRB_REQUIRED"
	// EnvBinDir overrides where krb5kdc, kdb5_util and kadmin.local are
	// looked for (default: PATH, then /usr/sbin).
	EnvBinDir = "YARNFED_KRB_BIN"
)

// DefaultRealm is the realm Start creates when Options.Realm is empty.
const DefaultRealm = "YARNFED.TEST"

// Options tunes Start.
type Options struct {
	// Realm defaults to DefaultRealm. Upper case by convention.
	Realm string
	// TicketLifetime defaults to 1h (max_life of the realm and the
	// krb5.conf ticket_lifetime).
	TicketLifetime time.Duration
}

// KDC is a running krb5kdc with its realm's database.
type KDC struct {
	// Realm is the realm name, e.g. YARNFED.TEST.
	Realm string
	// Addr is the KDC's host:port on 127.0.0.1 (TCP and UDP).
	Addr string
	// ConfPath is the krb5.conf for clients: gokrb5's config.Load and the
	// JDK's -Djava.security.krb5.conf.
	ConfPath string
	// Dir holds the database, configuration, logs and exported keytabs.
	Dir string

	bin     binaries
	env     []string
	mu      sync.Mutex
	secrets map[string]string // user principal -> password
}

type binaries struct{ kdc, kdbUtil, kadminLocal string }

func findBinaries() (binaries, error) {
	look := func(name string) (string, error) {
		if d := os.Getenv(EnvBinDir); d != "" {
			p := filepath.Join(d, name)
			if _, err := os.Stat(p); err != nil {
				return "", err
			}
			return p, nil
		}
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		// Debian puts them in /usr/sbin, which a non-root PATH often lacks.
		p := filepath.Join("/usr/sbin", name)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s not found in PATH or /usr/sbin", name)
		}
		return p, nil
	}
	var b binaries
	var err error
	if b.kdc, err = look("krb5kdc"); err != nil {
		return b, err
	}
	if b.kdbUtil, err = look("kdb5_util"); err != nil {
		return b, err
	}
	if b.kadminLocal, err = look("kadmin.local"); err != nil {
		return b, err
	}
	return b, nil
}

// Available reports whether the KDC binaries are installed, and why not.
func Available() error {
	_, err := findBinaries()
	return err
}

// Start creates a realm and runs its KDC for the duration of the test; the KDC
// is stopped and its files removed at cleanup.
func Start(t testing.TB, opts Options) *KDC {
	t.Helper()
	bin, err := findBinaries()
	if err != nil {
		msg := fmt.Sprintf("real Kerberos KDC test needs MIT krb5 (apt-get install krb5-kdc krb5-admin-server): %v", err)
		testenv.Missing(t, EnvRequired, "%s", msg)
	}
	if opts.Realm == "" {
		opts.Realm = DefaultRealm
	}
	if opts.TicketLifetime <= 0 {
		opts.TicketLifetime = time.Hour
	}
	dir := t.TempDir()
	k := &KDC{Realm: opts.Realm, Dir: dir, bin: bin, secrets: map[string]string{}}
	k.ConfPath = filepath.Join(dir, "krb5.conf")
	k.env = append(os.Environ(),
		"KRB5_CONFIG="+k.ConfPath,
		"KRB5_KDC_PROFILE="+filepath.Join(dir, "kdc.conf"),
		// Keep the tools away from the machine's own ccache/keytab.
		"KRB5CCNAME=FILE:"+filepath.Join(dir, "ccache"),
		"KRB5_KTNAME=FILE:"+filepath.Join(dir, "default.keytab"),
	)

	// The port is picked free and handed to krb5kdc; another process may
	// take it in between, so a start that fails is retried on a fresh port.
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			lastErr = err
			continue
		}
		if err := k.writeConfig(port, opts); err != nil {
			t.Fatalf("krbtest: %v", err)
		}
		if attempt == 0 {
			if out, err := k.run(nil, bin.kdbUtil, "-r", k.Realm, "create", "-s", "-P", "krbtest-master"); err != nil {
				t.Fatalf("krbtest: kdb5_util create: %v\n%s", err, out)
			}
		}
		if lastErr = k.startKDC(t, port); lastErr == nil {
			return k
		}
	}
	t.Fatalf("krbtest: KDC did not start: %v", lastErr)
	return nil
}

// freePort returns a port free on 127.0.0.1 for both TCP and UDP.
func freePort() (int, error) {
	for i := 0; i < 20; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		l.Close()
		if err != nil {
			continue
		}
		u.Close()
		return port, nil
	}
	return 0, errors.New("no port free for both TCP and UDP")
}

func (k *KDC) writeConfig(port int, opts Options) error {
	k.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	life := fmt.Sprintf("%ds", int(opts.TicketLifetime/time.Second))
	enctypes := "aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96"
	kdcConf := fmt.Sprintf(`[kdcdefaults]
	kdc_listen = 127.0.0.1:%[1]d
	kdc_tcp_listen = 127.0.0.1:%[1]d

[realms]
	%[2]s = {
		database_name = %[3]s/principal
		key_stash_file = %[3]s/stash
		acl_file = %[3]s/kadm5.acl
		admin_keytab = FILE:%[3]s/kadm5.keytab
		max_life = %[4]s
		max_renewable_life = 7d
		master_key_type = aes256-cts-hmac-sha1-96
		supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
		default_principal_flags = +preauth
	}

[logging]
	kdc = FILE:%[3]s/kdc.log
	admin_server = FILE:%[3]s/kadmin.log
	default = FILE:%[3]s/krb5.log
`, port, k.Realm, k.Dir, life)
	// udp_preference_limit = 1: clients use TCP, so a large ticket (or a
	// loaded machine dropping a datagram) cannot make a test flaky.
	// rdns/dns_canonicalize_hostname off: service principals are used as
	// written (rm/localhost), by gokrb5 and the JDK alike.
	krb5Conf := fmt.Sprintf(`[libdefaults]
	default_realm = %[1]s
	dns_lookup_realm = false
	dns_lookup_kdc = false
	dns_canonicalize_hostname = false
	rdns = false
	udp_preference_limit = 1
	ticket_lifetime = %[3]s
	renew_lifetime = 7d
	forwardable = true
	default_tkt_enctypes = %[4]s
	default_tgs_enctypes = %[4]s
	permitted_enctypes = %[4]s

[realms]
	%[1]s = {
		kdc = %[2]s
		admin_server = %[2]s
	}

[domain_realm]
	localhost = %[1]s
	.localhost = %[1]s
	127.0.0.1 = %[1]s
`, k.Realm, k.Addr, life, enctypes)
	if err := os.WriteFile(filepath.Join(k.Dir, "kdc.conf"), []byte(kdcConf), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(k.Dir, "kadm5.acl"), []byte("*/admin@"+k.Realm+" *\n"), 0o600); err != nil {
		return err
	}
	return os.WriteFile(k.ConfPath, []byte(krb5Conf), 0o644)
}

func (k *KDC) startKDC(t testing.TB, port int) error {
	logPath := filepath.Join(k.Dir, "krb5kdc.stderr")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	// -n: stay in the foreground, so the process is ours to stop.
	cmd := exec.Command(k.bin.kdc, "-n", "-r", k.Realm, "-P", filepath.Join(k.Dir, "krb5kdc.pid"))
	cmd.Env = k.env
	cmd.Stdout = logf
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			out, _ := os.ReadFile(logPath)
			log, _ := os.ReadFile(filepath.Join(k.Dir, "kdc.log"))
			return fmt.Errorf("krb5kdc exited on port %d: %v\n%s%s", port, err, out, tail(log, 2048))
		default:
		}
		c, err := net.DialTimeout("tcp", k.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			t.Cleanup(stop)
			return nil
		}
		if time.Now().After(deadline) {
			stop()
			return fmt.Errorf("krb5kdc not listening on %s after 15s", k.Addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (k *KDC) run(stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = k.env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return cmd.CombinedOutput()
}

// kadmin runs kadmin.local queries against the realm's database (no kadmind
// is needed: kadmin.local opens the database directly).
func (k *KDC) kadmin(t testing.TB, queries ...string) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, q := range queries {
		out, err := k.run(nil, k.bin.kadminLocal, "-r", k.Realm, "-q", q)
		if err != nil || bytes.Contains(out, []byte("while ")) {
			// kadmin.local exits 0 on most query failures; its messages say
			// "... while <doing something>".
			t.Fatalf("krbtest: kadmin.local %q: %v\n%s", q, err, out)
		}
	}
}

// Principal qualifies name with the realm unless it already has one.
func (k *KDC) Principal(name string) string {
	if strings.Contains(name, "@") {
		return name
	}
	return name + "@" + k.Realm
}

// AddService creates a principal with a random key (a service, e.g.
// "rm/localhost" or "yarnfed/localhost") and exports its keytab; it returns the
// keytab's path.
func (k *KDC) AddService(t testing.TB, name string) string {
	t.Helper()
	k.kadmin(t, "addprinc -randkey "+k.Principal(name))
	return k.ExportKeytab(t, name)
}

// AddUser creates a user principal (e.g. "alice") with a random password,
// exports its keytab and returns the keytab's path; Password gives the
// password (for kinit-style logins).
func (k *KDC) AddUser(t testing.TB, name string) string {
	t.Helper()
	pw := "pw-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strings.ReplaceAll(name, "/", "_")
	k.kadmin(t, fmt.Sprintf("addprinc -pw %s %s", pw, k.Principal(name)))
	k.mu.Lock()
	k.secrets[k.Principal(name)] = pw
	k.mu.Unlock()
	return k.ExportKeytab(t, name)
}

// Password returns the password AddUser set for name.
func (k *KDC) Password(name string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.secrets[k.Principal(name)]
}

// ExportKeytab writes the current keys of the named principals into a new
// keytab file and returns its path. Keys are exported as they are
// (-norandkey), so exporting again never invalidates an earlier keytab.
func (k *KDC) ExportKeytab(t testing.TB, names ...string) string {
	t.Helper()
	if len(names) == 0 {
		t.Fatal("krbtest: ExportKeytab needs a principal")
	}
	file := strings.NewReplacer("/", "_", "@", "_").Replace(strings.Join(names, "+"))
	path := filepath.Join(k.Dir, "keytabs", file+".keytab")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(path)
	q := "ktadd -k " + path + " -norandkey"
	for _, n := range names {
		q += " " + k.Principal(n)
	}
	k.kadmin(t, q)
	return path
}

// Keytab loads a keytab file written by ExportKeytab.
func (k *KDC) Keytab(t testing.TB, path string) *keytab.Keytab {
	t.Helper()
	kt, err := keytab.Load(path)
	if err != nil {
		t.Fatalf("krbtest: load keytab %s: %v", path, err)
	}
	return kt
}

// Config parses ConfPath with gokrb5.
func (k *KDC) Config(t testing.TB) *config.Config {
	t.Helper()
	c, err := config.Load(k.ConfPath)
	if err != nil {
		t.Fatalf("krbtest: gokrb5 cannot read %s: %v", k.ConfPath, err)
	}
	return c
}

// JavaOpts are the JVM flags that make the JDK use this realm.
func (k *KDC) JavaOpts() []string {
	return []string{
		"-Djava.security.krb5.conf=" + k.ConfPath,
		"-Dsun.security.krb5.disableReferrals=true",
	}
}

// Log returns the KDC's log so far (for a failing test's message).
func (k *KDC) Log() string {
	b, _ := os.ReadFile(filepath.Join(k.Dir, "kdc.log"))
	return string(b)
}
