package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/testpoll"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// TestEnvironmentExpansionAndPrecedence: the container sees the
// NodeManager's variables (forced: a launch context's CONTAINER_ID is
// ignored), the pod's other variables unless the launch context sets them
// (whitelist semantics), the launch context's variables with {{VAR}},
// <CPS>, <LOG_DIR> and <ADD_OPENS> expanded and ordered after the
// variables they refer to, PWD = the working directory,
// HADOOP_TOKEN_FILE_LOCATION = its container_tokens; commands are expanded
// too and run from the working directory.
func TestEnvironmentExpansionAndPrecedence(t *testing.T) {
	f := newFixture(t)
	code, err := f.run(&yarnpb.ContainerLaunchContextProto{
		Environment: env(
			"CLASSPATH", "{{PWD}}<CPS>{{PWD}}/*<CPS>{{HADOOP_CONF_DIR}}",
			"HADOOP_CONF_DIR", "/app/conf", // replaces the pod's (whitelisted)
			"CONTAINER_ID", "container_forged", // the NodeManager's wins
			"B", "${A}-b", // refers to A, given later
			"A", "a",
			"LOGFILE", "<LOG_DIR>/app.log",
			"OPENS", "<ADD_OPENS>",
		),
		Command: []string{"env", "1><LOG_DIR>/env.out", "2><LOG_DIR>/stderr", "&&", "pwd", "><LOG_DIR>/pwd.out"},
	})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v; prelaunch.err: %s", code, err, f.readLog("prelaunch.err"))
	}
	got := parseEnv(f.readLog("env.out"))
	want := map[string]string{
		"CONTAINER_ID":               testContainerID,
		"NM_HOST":                    "10.0.0.7",
		"NM_PORT":                    "8041",
		"LOCAL_DIRS":                 f.local,
		"LOCAL_USER_DIRS":            f.local,
		"LOG_DIRS":                   f.log,
		"USER":                       "alice",
		"HOME":                       f.work,
		"PWD":                        f.work,
		"HADOOP_TOKEN_FILE_LOCATION": filepath.Join(f.work, TokensFile),
		"HADOOP_CONF_DIR":            "/app/conf",
		"CLASSPATH":                  f.work + ":" + f.work + "/*:/app/conf",
		"B":                          "a-b",
		"LOGFILE":                    f.log + "/app.log",
		"OPENS":                      addOpensJava17,
		"YARNFED_TEST_WHITELISTED":   "from-pod",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if pid := got["JVM_PID"]; pid == "" || strings.Trim(pid, "0123456789") != "" {
		t.Errorf("JVM_PID = %q, want the shell's pid", pid)
	}
	if pwd := strings.TrimSpace(f.readLog("pwd.out")); pwd != f.work {
		t.Errorf("the command ran in %q, want %q", pwd, f.work)
	}
	if !strings.Contains(f.readLog("prelaunch.out"), "Launching container") {
		t.Error("prelaunch.out lacks the script's progress lines")
	}
	if f.readLog(ScriptName) == "" || f.readLog("directory.info") == "" {
		t.Error("no debugging copy of the launch script or directory listing in the log dir")
	}
	for _, d := range []string{filepath.Join(f.work, "tmp"), f.local} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			t.Errorf("%s not created: %v", d, err)
		}
	}
}

func TestExpand(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"{{JAVA_HOME}}/bin/java -Dlog=<LOG_DIR> -cp a<CPS>b", "$JAVA_HOME/bin/java -Dlog=/l -cp a:b"},
		{"<ADD_OPENS> x", "--opens x"},
		{"no markers", "no markers"},
	} {
		if got := Expand(c.in, "/l", "--opens"); got != c.want {
			t.Errorf("Expand(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestJavaMajor: <ADD_OPENS> depends on the container's Java, read from
// $JAVA_HOME/release (old "1.8" numbering too).
func TestJavaMajor(t *testing.T) {
	for v, want := range map[string]int{`JAVA_VERSION="17.0.9"`: 17, `JAVA_VERSION="1.8.0_392"`: 8, `JAVA_VERSION="21"`: 21, `OTHER=1`: 0} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "release"), []byte(v+"\n"))
		if got := javaMajor(dir); got != want {
			t.Errorf("javaMajor(%s) = %d, want %d", v, got, want)
		}
	}
	if javaMajor(filepath.Join(t.TempDir(), "none")) != 0 {
		t.Error("a JAVA_HOME without release is not 0")
	}
}

// TestExitCodePropagates: the container's exit code is the launcher's.
func TestExitCodePropagates(t *testing.T) {
	for _, want := range []int{0, 3, 42} {
		f := newFixture(t)
		code, err := f.run(&yarnpb.ContainerLaunchContextProto{Command: []string{fmt.Sprintf("exit %d", want)}})
		if err != nil || code != want {
			t.Errorf("exit %d: Run = %d, %v", want, code, err)
		}
	}
}

// TestTokensFile: the credentials are written byte for byte to
// container_tokens; with none, an empty token storage Hadoop can read;
// bytes that are not token storage are refused before anything runs.
func TestTokensFile(t *testing.T) {
	tokens := append([]byte("HDTS\x00\x01"), bytes.Repeat([]byte{0xab}, 100)...)
	for _, c := range []struct {
		name string
		in   []byte
		want []byte
	}{{"given", tokens, tokens}, {"none", nil, emptyCredentials}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			code, err := f.run(&yarnpb.ContainerLaunchContextProto{Tokens: c.in,
				Command: []string{`cp "$HADOOP_TOKEN_FILE_LOCATION" <LOG_DIR>/tokens.copy`}})
			if err != nil || code != 0 {
				t.Fatalf("Run = %d, %v", code, err)
			}
			if got := f.readLog("tokens.copy"); got != string(c.want) {
				t.Fatalf("container_tokens = %q, want %q", got, c.want)
			}
			if st, _ := os.Stat(filepath.Join(f.work, TokensFile)); st.Mode().Perm() != 0o600 {
				t.Errorf("container_tokens mode %v, want 0600", st.Mode().Perm())
			}
		})
	}
	f := newFixture(t)
	code, err := f.run(&yarnpb.ContainerLaunchContextProto{Tokens: []byte("not credentials"), Command: []string{"touch ran"}})
	if !errors.Is(err, ErrBadContext) || code != ExitLaunchFailed {
		t.Fatalf("tokens without the HDTS magic: Run = %d, %v", code, err)
	}
	if _, err := os.Stat(filepath.Join(f.work, "ran")); err == nil {
		t.Fatal("the command ran")
	}
}

// TestLocalizeFileAndHTTP: a file:// resource and an http:// one are
// localized into LOCAL_DIRS' file cache, read-only, and linked into the
// working directory under their keys (a nested key gets its directory).
func TestLocalizeFileAndHTTP(t *testing.T) {
	f := newFixture(t)
	src := writeFile(t, filepath.Join(t.TempDir(), "conf.xml"), []byte("<configuration/>"))
	body := []byte("#!/bin/sh\necho from-http\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/jobs/run.sh" {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	httpRes := &yarnpb.StringLocalResourceMapProto{Key: proto.String("bin/run.sh"), Value: &yarnpb.LocalResourceProto{
		Resource: &yarnpb.URLProto{Scheme: proto.String("http"), Host: proto.String(strings.Split(host, ":")[0]),
			Port: proto.Int32(int32(mustAtoi(t, strings.Split(host, ":")[1]))), File: proto.String("/jobs/run.sh")},
		Size: proto.Int64(int64(len(body))), Type: yarnpb.LocalResourceTypeProto_FILE.Enum(),
	}}
	code, err := f.run(&yarnpb.ContainerLaunchContextProto{
		LocalResources: []*yarnpb.StringLocalResourceMapProto{fileResource(t, "job.xml", src, yarnpb.LocalResourceTypeProto_FILE), httpRes},
		Command:        []string{"cat job.xml >", "<LOG_DIR>/out", "&&", "./bin/run.sh", ">><LOG_DIR>/out"},
	})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v; prelaunch.err: %s", code, err, f.readLog("prelaunch.err"))
	}
	if got := f.readLog("out"); got != "<configuration/>from-http\n" {
		t.Fatalf("the container read %q", got)
	}
	for _, link := range []string{"job.xml", "bin/run.sh"} {
		target, err := os.Readlink(filepath.Join(f.work, link))
		if err != nil {
			t.Fatalf("%s is not a link: %v", link, err)
		}
		if !strings.HasPrefix(target, filepath.Join(f.local, "filecache")+"/") {
			t.Errorf("%s -> %s, not into the file cache", link, target)
		}
		if st, err := os.Stat(target); err != nil || st.Mode().Perm() != 0o500 {
			t.Errorf("%s: localized mode %v (%v), want 0500", link, st.Mode().Perm(), err)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestArchivesUnpacked: ARCHIVE zip and tar.gz resources are unpacked into
// a directory the link names (tar links inside kept), a PATTERN jar
// unpacks only the matching entries and keeps the jar beside them, and an
// ARCHIVE of an unknown kind is localized as a file.
func TestArchivesUnpacked(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	zipPath := writeFile(t, filepath.Join(dir, "deps.zip"), zipBytes(t, entry{name: "x/y.txt", body: "zip-y"}))
	tgzPath := writeFile(t, filepath.Join(dir, "env.tar.gz"), tgzBytes(t,
		entry{name: "lib/", dir: true}, entry{name: "lib/z.txt", body: "tgz-z"},
		entry{name: "lib/l", link: "z.txt"}, entry{name: "lib/h", link: "lib/z.txt", hard: true}))
	jarPath := writeFile(t, filepath.Join(dir, "job.jar"), zipBytes(t,
		entry{name: "classes/A.class", body: "A"}, entry{name: "other/B.class", body: "B"}))
	odd := writeFile(t, filepath.Join(dir, "data.bin"), []byte("raw"))
	pattern := fileResource(t, "job.jar", jarPath, yarnpb.LocalResourceTypeProto_PATTERN)
	pattern.Value.Pattern = proto.String("(?:classes/|lib/).*")
	code, err := f.run(&yarnpb.ContainerLaunchContextProto{
		LocalResources: []*yarnpb.StringLocalResourceMapProto{
			fileResource(t, "deps", zipPath, yarnpb.LocalResourceTypeProto_ARCHIVE),
			fileResource(t, "env", tgzPath, yarnpb.LocalResourceTypeProto_ARCHIVE),
			pattern,
			fileResource(t, "data", odd, yarnpb.LocalResourceTypeProto_ARCHIVE),
		},
		Command: []string{"cat deps/x/y.txt env/lib/l env/lib/h job.jar/classes/A.class data > <LOG_DIR>/out",
			"&& test ! -e job.jar/other/B.class && test -f job.jar/job.jar"},
	})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v; prelaunch.err: %s", code, err, f.readLog("prelaunch.err"))
	}
	if got := f.readLog("out"); got != "zip-ytgz-ztgz-zAraw" {
		t.Fatalf("the container read %q", got)
	}
}

// TestChangedResourceRefused: FSDownload's check: a file whose
// modification time is not the recorded one, or whose size is not, and an
// HTTP resource whose length is not the recorded size (declared or
// streamed) fail localization (exit ExitLocalizationFailed, reason in the
// termination log); the command never runs.
func TestChangedResourceRefused(t *testing.T) {
	src := writeFile(t, filepath.Join(t.TempDir(), "a.jar"), []byte("twelve bytes"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" { // no Content-Length: more than declared arrives
			w.(http.Flusher).Flush()
		}
		w.Write(bytes.Repeat([]byte("x"), 64))
	}))
	defer srv.Close()
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	httpRes := func(file string, size int64) *yarnpb.StringLocalResourceMapProto {
		return &yarnpb.StringLocalResourceMapProto{Key: proto.String("r"), Value: &yarnpb.LocalResourceProto{
			Resource: &yarnpb.URLProto{Scheme: proto.String("http"), Host: proto.String(host), Port: proto.Int32(int32(mustAtoi(t, port))), File: proto.String(file)},
			Size:     proto.Int64(size), Type: yarnpb.LocalResourceTypeProto_FILE.Enum()}}
	}
	for _, c := range []struct {
		name string
		res  *yarnpb.StringLocalResourceMapProto
	}{
		{"timestamp", func() *yarnpb.StringLocalResourceMapProto {
			r := fileResource(t, "r", src, yarnpb.LocalResourceTypeProto_FILE)
			r.Value.Timestamp = proto.Int64(r.Value.GetTimestamp() - 1000)
			return r
		}()},
		{"file size", func() *yarnpb.StringLocalResourceMapProto {
			r := fileResource(t, "r", src, yarnpb.LocalResourceTypeProto_FILE)
			r.Value.Size = proto.Int64(11)
			return r
		}()},
		{"http content length", httpRes("/fixed", 10)},
		{"http streamed", httpRes("/stream", 10)},
		{"http unreachable", func() *yarnpb.StringLocalResourceMapProto {
			r := httpRes("/fixed", 0)
			r.Value.Resource.Host = proto.String("127.0.0.1")
			r.Value.Resource.Port = proto.Int32(1) // nothing listens
			return r
		}()},
		{"s3a", &yarnpb.StringLocalResourceMapProto{Key: proto.String("r"), Value: &yarnpb.LocalResourceProto{
			Resource: &yarnpb.URLProto{Scheme: proto.String("s3a"), Host: proto.String("bucket"), Port: proto.Int32(-1), File: proto.String("/user/a/x.jar")}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			code, err := f.run(&yarnpb.ContainerLaunchContextProto{
				LocalResources: []*yarnpb.StringLocalResourceMapProto{c.res}, Command: []string{"touch ran"}})
			if !errors.Is(err, ErrLocalize) && !errors.Is(err, ErrUnsupportedScheme) || code != ExitLocalizationFailed {
				t.Fatalf("Run = %d, %v; want %d and a localization error", code, err, ExitLocalizationFailed)
			}
			if _, serr := os.Stat(filepath.Join(f.work, "ran")); serr == nil {
				t.Fatal("the command ran")
			}
			msg, _ := os.ReadFile(f.config().TerminationLog)
			if string(msg) != err.Error() {
				t.Errorf("termination log %q, want the error %q", msg, err)
			}
		})
	}
}

// TestUnsafeLaunchContextRefused: link names that leave the working
// directory or replace the launcher's files, environment names bash
// cannot export, and archives whose entries (or links) leave their
// directory are refused; nothing is written outside.
func TestUnsafeLaunchContextRefused(t *testing.T) {
	dir := t.TempDir()
	ok := writeFile(t, filepath.Join(dir, "ok.txt"), []byte("ok"))
	archive := func(name string, b []byte) *yarnpb.StringLocalResourceMapProto {
		return fileResource(t, "a", writeFile(t, filepath.Join(t.TempDir(), name), b), yarnpb.LocalResourceTypeProto_ARCHIVE)
	}
	link := func(name string) *yarnpb.StringLocalResourceMapProto {
		r := fileResource(t, "x", ok, yarnpb.LocalResourceTypeProto_FILE)
		r.Key = proto.String(name)
		return r
	}
	cases := []struct {
		name string
		lc   *yarnpb.ContainerLaunchContextProto
		want error
	}{
		{"link ..", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{link("../escape")}}, ErrBadContext},
		{"link inner ..", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{link("a/../../escape")}}, ErrBadContext},
		{"link absolute", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{link(dir + "/escape")}}, ErrBadContext},
		{"link empty", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{link("")}}, ErrBadContext},
		{"link newline", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{link("a\nb")}}, ErrBadContext},
		{"link over tokens", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{link(TokensFile)}}, ErrBadContext},
		{"link twice", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{link("x"), link("x")}}, ErrBadContext},
		{"env name", &yarnpb.ContainerLaunchContextProto{Environment: env("A;touch /tmp/x", "1")}, ErrBadContext},
		{"zip slip", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{
			archive("evil.zip", zipBytes(t, entry{name: "../../../../escape", body: "x"}))}}, ErrUnsafeEntry},
		{"zip absolute", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{
			archive("evil.zip", zipBytes(t, entry{name: dir + "/escape", body: "x"}))}}, ErrUnsafeEntry},
		{"zip symlink", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{
			archive("evil.zip", zipBytes(t, entry{name: "l", link: dir}))}}, ErrUnsafeEntry},
		{"tar slip", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{
			archive("evil.tgz", tgzBytes(t, entry{name: "a/../../escape", body: "x"}))}}, ErrUnsafeEntry},
		{"tar symlink out", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{
			archive("evil.tgz", tgzBytes(t, entry{name: "l", link: "../../../.."}, entry{name: "l/escape", body: "x"}))}}, ErrUnsafeEntry},
		{"tar symlink absolute", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{
			archive("evil.tgz", tgzBytes(t, entry{name: "l", link: dir}, entry{name: "l/escape", body: "x"}))}}, ErrUnsafeEntry},
		{"tar hard link out", &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{
			archive("evil.tar.gz", tgzBytes(t, entry{name: "h", link: "../../../escape", hard: true}))}}, ErrUnsafeEntry},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			c.lc.Command = []string{"touch ran"}
			code, err := f.run(c.lc)
			if !errors.Is(err, c.want) || code == 0 {
				t.Fatalf("Run = %d, %v; want an error wrapping %v", code, err, c.want)
			}
			if _, serr := os.Stat(filepath.Join(f.work, "ran")); serr == nil {
				t.Fatal("the command ran")
			}
			for _, p := range []string{filepath.Join(dir, "escape"), filepath.Join(filepath.Dir(f.work), "escape"), filepath.Join(f.local, "escape")} {
				if _, serr := os.Lstat(p); serr == nil {
					t.Fatalf("%s was written", p)
				}
			}
		})
	}
}

// TestBounds: the launcher's limits refuse what exceeds them.
func TestBounds(t *testing.T) {
	small := DefaultLimits()
	small.Resources, small.EnvVars, small.ContextBytes, small.ArchiveEntries, small.UnpackedBytes = 1, 1, 200, 2, 10
	lc := &yarnpb.ContainerLaunchContextProto{Environment: env("A", "1", "B", "2")}
	b, _ := proto.Marshal(lc)
	if _, err := DecodeContext(b, small); !errors.Is(err, ErrBadContext) {
		t.Errorf("two environment entries over a bound of one: %v", err)
	}
	if _, err := DecodeContext(make([]byte, 201), small); !errors.Is(err, ErrBadContext) {
		t.Errorf("a context over the size bound: %v", err)
	}
	for name, b := range map[string][]byte{
		"entries": zipBytes(t, entry{name: "a", body: "1"}, entry{name: "b", body: "2"}, entry{name: "c", body: "3"}),
		"bytes":   zipBytes(t, entry{name: "a", body: "0123456789x"}),
	} {
		src := writeFile(t, filepath.Join(t.TempDir(), "a.zip"), b)
		if err := unzip(src, t.TempDir(), nil, small); err == nil {
			t.Errorf("a zip over the %s bound unpacked", name)
		}
	}
	for name, b := range map[string][]byte{
		"entries": tgzBytes(t, entry{name: "a", body: "1"}, entry{name: "b", body: "2"}, entry{name: "c", body: "3"}),
		"bytes":   tgzBytes(t, entry{name: "a", body: "0123456789x"}),
	} {
		src := writeFile(t, filepath.Join(t.TempDir(), "a.tgz"), b)
		if err := untar(src, t.TempDir(), true, small); err == nil {
			t.Errorf("a tar.gz over the %s bound unpacked", name)
		}
	}
}

// TestDeclaredSizeBoundsDownload: an HTTP source streaming far more than
// the size the launch context declares is cut off after that size: the
// launcher does not read (nor store) the rest.
func TestDeclaredSizeBoundsDownload(t *testing.T) {
	completed := make(chan bool, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for i := 0; i < 1024; i++ { // 64 MiB, no Content-Length
			if _, err := w.Write(chunk); err != nil {
				completed <- false
				return
			}
			w.(http.Flusher).Flush()
		}
		completed <- true
	}))
	defer srv.Close()
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	f := newFixture(t)
	code, err := f.run(&yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{{
		Key: proto.String("big"), Value: &yarnpb.LocalResourceProto{
			Resource: &yarnpb.URLProto{Scheme: proto.String("http"), Host: proto.String(host), Port: proto.Int32(int32(mustAtoi(t, port))), File: proto.String("/big")},
			Size:     proto.Int64(10), Type: yarnpb.LocalResourceTypeProto_FILE.Enum()}}}})
	if !errors.Is(err, ErrLocalize) || code != ExitLocalizationFailed {
		t.Fatalf("Run = %d, %v", code, err)
	}
	if <-completed {
		t.Fatal("the launcher read the whole 64 MiB stream for a resource declared as 10 bytes")
	}
}

// TestSIGTERMForwarded: a stop (the kubelet's SIGTERM, here ctx) reaches
// the container's process group: a command that traps it exits with its
// own code; one that ignores it is killed KillDelay later (137).
func TestSIGTERMForwarded(t *testing.T) {
	for _, c := range []struct {
		name      string
		trap      string
		killDelay time.Duration
		want      int
	}{
		{"trapped", `trap 'echo term > <LOG_DIR>/term; exit 7' TERM;`, time.Hour, 7},
		{"ignored", `trap '' TERM;`, 50 * time.Millisecond, 137},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.killDelay = c.killDelay
			f.writeContext(&yarnpb.ContainerLaunchContextProto{Command: []string{
				c.trap, "echo ready > <LOG_DIR>/ready;", "while true; do sleep 0.05; done"}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				code int
				err  error
			}
			done := make(chan result, 1)
			go func() { code, err := Run(ctx, f.config()); done <- result{code, err} }()
			testpoll.Poll(t, "the container to start", func() bool {
				_, err := os.Stat(filepath.Join(f.log, "ready"))
				return err == nil
			})
			cancel()
			r := <-done
			if r.err != nil || r.code != c.want {
				t.Fatalf("Run = %d, %v; want %d", r.code, r.err, c.want)
			}
			if c.want == 7 && f.readLog("term") != "term\n" {
				t.Fatal("the trap did not run")
			}
		})
	}
}

// TestInstall: --install copies the executable, mode 0755.
func TestInstall(t *testing.T) {
	src := writeFile(t, filepath.Join(t.TempDir(), "bin"), []byte("\x7fELF pretend"))
	dir := t.TempDir()
	dst, err := InstallFrom(src, dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dst)
	if err != nil || st.Mode().Perm() != 0o755 || filepath.Base(dst) != InstallName {
		t.Fatalf("installed %s: %v %v", dst, st.Mode(), err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "\x7fELF pretend" {
		t.Fatalf("installed %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("install left %d files", len(entries))
	}
}

// TestMissingNodeManagerEnvironment: a pod without the NodeManager
// variables kuberm sets is a launch failure, not a guess.
func TestMissingNodeManagerEnvironment(t *testing.T) {
	f := newFixture(t)
	f.env = []string{"PATH=" + os.Getenv("PATH")}
	code, err := f.run(&yarnpb.ContainerLaunchContextProto{Command: []string{"true"}})
	if !errors.Is(err, ErrLaunch) || code != ExitLaunchFailed {
		t.Fatalf("Run = %d, %v", code, err)
	}
}

// TestReapsOrphansAsPID1: as PID 1 of its container the launcher reaps
// the orphans the command leaves while it waits for the command. The test
// process stands in for PID 1 by becoming a child subreaper: the
// command's orphan is reparented to it, and the command waits until the
// orphan is gone (a zombie still answers kill -0), so it ends only if the
// launcher reaped the orphan.
func TestReapsOrphansAsPID1(t *testing.T) {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
	f := newFixture(t)
	// The command words sit inside the script's double quotes, as on a
	// NodeManager: what the command's own shell must expand is escaped.
	f.writeContext(&yarnpb.ContainerLaunchContextProto{Command: []string{
		`( sleep 0.01 & echo \$! > orphan.pid );`, `p=\$(cat orphan.pid); test \${#p} -gt 0 || exit 9;`,
		`while kill -0 \$p 2>/dev/null; do sleep 0.01; done;`, "exit 4"}})
	cfg := f.config()
	cfg.ReapAll = true
	ctx, cancel := context.WithTimeout(context.Background(), testpoll.Timeout)
	defer cancel()
	if code, err := Run(ctx, cfg); err != nil || code != 4 {
		t.Fatalf("Run = %d, %v; want 4 (a stop at the timeout means the orphan was never reaped)", code, err)
	}
}
