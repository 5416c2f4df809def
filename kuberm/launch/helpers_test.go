package launch

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// fixture is one container's directories as a pod has them: the launch
// Secret's mount, the working directory, LOCAL_DIRS and LOG_DIRS, with the
// NodeManager environment kuberm puts in the pod spec.
type fixture struct {
	t                           *testing.T
	launchDir, work, local, log string
	env                         []string
	killDelay                   time.Duration
}

const testContainerID = "container_e7_1700000000000_0001_01_000002"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{t: t, launchDir: filepath.Join(root, "launch"), work: filepath.Join(root, "work"),
		local: filepath.Join(root, "work", "local"), log: filepath.Join(root, "logs", "application_1700000000000_0001", testContainerID)}
	for _, d := range []string{f.launchDir, f.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	jdk := filepath.Join(root, "jdk")
	if err := os.MkdirAll(jdk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jdk, "release"), []byte("IMPLEMENTOR=\"x\"\nJAVA_VERSION=\"17.0.9\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"CONTAINER_ID=" + testContainerID,
		"NM_HOST=10.0.0.7", "NM_PORT=8041", "NM_HTTP_PORT=8042",
		"LOCAL_DIRS=" + f.local, "LOG_DIRS=" + f.log,
		"USER=alice", "LOGNAME=alice", "HOME=" + f.work, "HADOOP_USER_NAME=alice",
		"JAVA_HOME=" + jdk, "HADOOP_CONF_DIR=/etc/hadoop/conf", "YARNFED_TEST_WHITELISTED=from-pod",
	}
	return f
}

func (f *fixture) writeContext(lc *yarnpb.ContainerLaunchContextProto) {
	f.t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(lc)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.launchDir, ContextFile), b, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) config() Config {
	return Config{LaunchDir: f.launchDir, WorkDir: f.work, Env: f.env, KillDelay: f.killDelay,
		TerminationLog: filepath.Join(f.launchDir, "..", "termination-log"),
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// run launches lc and returns the exit code and error.
func (f *fixture) run(lc *yarnpb.ContainerLaunchContextProto) (int, error) {
	f.t.Helper()
	f.writeContext(lc)
	return Run(context.Background(), f.config())
}

func (f *fixture) readLog(name string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.log, name))
	if err != nil {
		f.t.Fatalf("reading %s from the log dir: %v", name, err)
	}
	return string(b)
}

func env(kv ...string) []*yarnpb.StringStringMapProto {
	var out []*yarnpb.StringStringMapProto
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, &yarnpb.StringStringMapProto{Key: proto.String(kv[i]), Value: proto.String(kv[i+1])})
	}
	return out
}

// fileResource is a file:// local resource of an existing path, with its
// real size and modification time (as an AM records them).
func fileResource(t *testing.T, link, p string, typ yarnpb.LocalResourceTypeProto) *yarnpb.StringLocalResourceMapProto {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return &yarnpb.StringLocalResourceMapProto{Key: proto.String(link), Value: &yarnpb.LocalResourceProto{
		Resource: &yarnpb.URLProto{Scheme: proto.String("file"), File: proto.String(p), Port: proto.Int32(-1)},
		Size:     proto.Int64(st.Size()), Timestamp: proto.Int64(st.ModTime().UnixMilli()),
		Type: typ.Enum(), Visibility: yarnpb.LocalResourceVisibilityProto_APPLICATION.Enum(),
	}}
}

func writeFile(t *testing.T, p string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type entry struct {
	name, body, link string // link: a symlink target (tar) ; hard: a hard link
	hard             bool
	dir              bool
}

func zipBytes(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		if e.link != "" {
			h := &zip.FileHeader{Name: e.name}
			h.SetMode(os.ModeSymlink | 0o777)
			w, err := zw.CreateHeader(h)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(w, e.link)
			continue
		}
		w, err := zw.Create(e.name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, e.body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func tgzBytes(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		switch {
		case e.dir:
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		case e.hard:
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, e.link, 0
		case e.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			io.WriteString(tw, e.body)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	return b.Bytes()
}

// parseEnv reads `env` output (NAME=value lines; values here have no
// newlines).
func parseEnv(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}
