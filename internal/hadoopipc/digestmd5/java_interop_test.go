package digestmd5

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/yarnfed/yarnfed/internal/testenv"
)

// javaPeer is the JDK's DIGEST-MD5 (the mechanism Hadoop uses), driven by
// testdata/JavaSasl.java over a line protocol.
type javaPeer struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

func startJava(t *testing.T) *javaPeer {
	t.Helper()
	if testing.Short() {
		t.Skip("JDK interop test skipped in -short mode")
	}
	javaBin, err := exec.LookPath("java")
	if err != nil {
		testenv.Missing(t, "YARNFED_INTEROP_REQUIRED", "no java on PATH (apt-get install openjdk-17-jdk-headless); JDK interop not checked")
	}
	cmd := exec.Command(javaBin, "testdata/JavaSasl.java")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Logf("java exited: %v\n%s", err, stderr.String())
		}
	})
	sc := bufio.NewScanner(outPipe)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	return &javaPeer{t: t, in: in, out: sc}
}

// do sends one command and returns the reply; "ERR ..." replies fail the
// test unless allowErr.
func (j *javaPeer) do(allowErr bool, args ...string) string {
	j.t.Helper()
	if _, err := fmt.Fprintln(j.in, strings.Join(args, " ")); err != nil {
		j.t.Fatal(err)
	}
	if !j.out.Scan() {
		j.t.Fatalf("java peer died after %q: %v", args, j.out.Err())
	}
	reply := j.out.Text()
	if strings.HasPrefix(reply, "ERR") && !allowErr {
		j.t.Fatalf("java %v: %s", args[0], reply)
	}
	return reply
}

func tok(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return hex.EncodeToString(b)
}

func untok(t *testing.T, s string) []byte {
	t.Helper()
	if s == "-" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad token from java %q: %v", s, err)
	}
	return b
}

// TestJavaInterop runs every qop and cipher against the JDK both ways:
// Go server with Java client, and Java server with Go client, then wraps
// messages in both directions.
func TestJavaInterop(t *testing.T) {
	j := startJava(t)
	user := HadoopUsername([]byte("\x00\x01identifier\xff"))
	pass := string(HadoopPassword([]byte("secret-password-bytes")))
	cases := []struct {
		qop    QOP
		cipher Cipher
	}{
		{QOPAuth, ""}, {QOPAuthInt, ""},
		{QOPAuthConf, Cipher3DES}, {QOPAuthConf, CipherRC4}, {QOPAuthConf, CipherDES},
		{QOPAuthConf, CipherRC4_56}, {QOPAuthConf, CipherRC4_40},
	}
	for _, tc := range cases {
		name := string(tc.qop) + "/" + string(tc.cipher)
		t.Run("go server java client/"+name, func(t *testing.T) {
			j.t = t
			cipherArg := "-"
			if tc.cipher != "" {
				cipherArg = string(tc.cipher)
			}
			srv := NewServer(ServerConfig{
				ServerName: HadoopServerName, QOPs: []QOP{QOPAuth, QOPAuthInt, QOPAuthConf},
				LookupPassword: passwords(map[string]string{user: pass}),
			})
			ch, err := srv.Challenge()
			if err != nil {
				t.Fatal(err)
			}
			j.do(false, "client", string(tc.qop), cipherArg, HadoopServerName, user, pass)
			resp := untok(t, j.do(false, "cchal", tok(ch)))
			rsp, err := srv.Respond(resp)
			if err != nil {
				t.Fatalf("Go server rejected the JDK's response %q: %v", resp, err)
			}
			j.do(false, "cfinal", tok(rsp))
			if srv.NegotiatedQOP() != tc.qop || srv.NegotiatedCipher() != tc.cipher {
				t.Fatalf("negotiated %q/%q", srv.NegotiatedQOP(), srv.NegotiatedCipher())
			}
			if tc.qop != QOPAuth {
				pingPong(t, j, srv.SecurityLayer(), "c")
			}
		})
		t.Run("java server go client/"+name, func(t *testing.T) {
			j.t = t
			ch := untok(t, j.do(false, "server", string(tc.qop), HadoopServerName, user, pass))
			ccfg := ClientConfig{Username: user, Password: []byte(pass), ServerName: HadoopServerName, QOPs: []QOP{tc.qop}}
			if tc.cipher != "" {
				ccfg.Ciphers = []Cipher{tc.cipher}
			}
			cli := NewClient(ccfg)
			resp, err := cli.Respond(ch)
			if err != nil {
				t.Fatalf("Go client rejected the JDK's challenge %q: %v", ch, err)
			}
			rsp := untok(t, j.do(false, "sresp", tok(resp)))
			if err := cli.Verify(rsp); err != nil {
				t.Fatalf("Go client rejected the JDK's rspauth %q: %v", rsp, err)
			}
			if got := j.do(false, "qop", "s"); got != string(tc.qop) {
				t.Fatalf("java negotiated %s", got)
			}
			if tc.qop != QOPAuth {
				pingPong(t, j, cli.SecurityLayer(), "s")
			}
		})
	}
	t.Run("java client wrong password", func(t *testing.T) {
		j.t = t
		srv := NewServer(ServerConfig{ServerName: HadoopServerName, LookupPassword: passwords(map[string]string{user: pass})})
		ch, _ := srv.Challenge()
		j.do(false, "client", "auth", "-", HadoopServerName, user, "wrong")
		resp := untok(t, j.do(false, "cchal", tok(ch)))
		if _, err := srv.Respond(resp); err == nil {
			t.Fatal("wrong password accepted")
		}
	})
	t.Run("java server wrong password", func(t *testing.T) {
		j.t = t
		ch := untok(t, j.do(false, "server", "auth", HadoopServerName, user, pass))
		resp, err := NewClient(ClientConfig{Username: user, Password: []byte("wrong"), ServerName: HadoopServerName}).Respond(ch)
		if err != nil {
			t.Fatal(err)
		}
		if got := j.do(true, "sresp", tok(resp)); !strings.HasPrefix(got, "ERR") {
			t.Fatalf("JDK server accepted a wrong password: %s", got)
		}
	})
}

// pingPong wraps messages on the Go layer for the Java side (javaSide "s" or
// "c") to unwrap, and the other way round, with lengths around block sizes.
func pingPong(t *testing.T, j *javaPeer, l *SecurityLayer, javaSide string) {
	t.Helper()
	for i := 1; i < 40; i += 3 {
		msg := bytes.Repeat([]byte{byte(i)}, i)
		w, err := l.Wrap(msg)
		if err != nil {
			t.Fatal(err)
		}
		if got := untok(t, j.do(false, "unwrap", javaSide, tok(w))); !bytes.Equal(got, msg) {
			t.Fatalf("JDK unwrapped %x, want %x", got, msg)
		}
		jw := untok(t, j.do(false, "wrap", javaSide, tok(msg)))
		got, err := l.Unwrap(jw)
		if err != nil {
			t.Fatalf("Go Unwrap of the JDK's %x: %v", jw, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("Go unwrapped %x, want %x", got, msg)
		}
	}
}
