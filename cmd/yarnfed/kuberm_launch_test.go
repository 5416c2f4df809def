package main

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/gobuild"
	"github.com/yarnfed/yarnfed/internal/testpoll"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm/launch"
)

// TestKubermLaunchBinary drives the built binary as a container pod does:
// the init container's `yarnfed kuberm launch --install DIR`, then the
// installed copy's `yarnfed kuberm launch` with the NodeManager
// environment kuberm sets, the launch Secret's file and the working
// directory as the pod's. The container's resources are localized and
// linked, its credentials written, its exit code is the process's, a
// SIGTERM to the launcher reaches the container, and a refused launch
// context exits 255 with the reason in the termination log.
func TestKubermLaunchBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the yarnfed binary")
	}
	root := t.TempDir()
	exe := filepath.Join(root, "yarnfed-image")
	if out, err := gobuild.Command(exe, "", "github.com/yarnfed/yarnfed/cmd/yarnfed").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	binDir := filepath.Join(root, "bin")
	os.Mkdir(binDir, 0o755)
	if out, err := exec.Command(exe, "kuberm", "launch", "--install", binDir).CombinedOutput(); err != nil {
		t.Fatalf("--install: %v\n%s", err, out)
	}
	launcher := filepath.Join(binDir, "yarnfed")
	if st, err := os.Stat(launcher); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("installed launcher: %v %v", st, err)
	}

	// Sources the AM names: a configuration file and a zip archive.
	src := filepath.Join(root, "src")
	os.Mkdir(src, 0o755)
	conf := filepath.Join(src, "job.xml")
	os.WriteFile(conf, []byte("<configuration/>"), 0o644)
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("lib/dep.txt")
	w.Write([]byte("dep"))
	zw.Close()
	archive := filepath.Join(src, "deps.zip")
	os.WriteFile(archive, zb.Bytes(), 0o644)
	res := func(link, p string, typ yarnpb.LocalResourceTypeProto) *yarnpb.StringLocalResourceMapProto {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return &yarnpb.StringLocalResourceMapProto{Key: proto.String(link), Value: &yarnpb.LocalResourceProto{
			Resource: &yarnpb.URLProto{Scheme: proto.String("file"), File: proto.String(p), Port: proto.Int32(-1)},
			Size:     proto.Int64(st.Size()), Timestamp: proto.Int64(st.ModTime().UnixMilli()), Type: typ.Enum()}}
	}
	tokens := []byte("HDTS\x00\x01\x02")

	// start runs one container: a fresh pod's directories.
	start := func(t *testing.T, lc *yarnpb.ContainerLaunchContextProto) (cmd *exec.Cmd, logDir, termLog string, stderr *bytes.Buffer) {
		pod := t.TempDir()
		launchDir, work := filepath.Join(pod, "launch"), filepath.Join(pod, "work")
		logDir = filepath.Join(pod, "logs", "application_1_0001", "container_1_0001_01_000002")
		os.Mkdir(launchDir, 0o755)
		os.Mkdir(work, 0o755)
		b, _ := proto.Marshal(lc)
		os.WriteFile(filepath.Join(launchDir, launch.ContextFile), b, 0o644)
		termLog = filepath.Join(pod, "termination-log")
		cmd = exec.Command(launcher, "kuberm", "launch", "--launch-dir", launchDir, "--termination-log", termLog)
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CONTAINER_ID=container_1_0001_01_000002", "NM_HOST=10.0.0.7",
			"NM_PORT=8041", "NM_HTTP_PORT=8042", "LOCAL_DIRS=" + filepath.Join(work, "local"), "LOG_DIRS=" + logDir,
			"USER=alice", "LOGNAME=alice", "HOME=" + work, "HADOOP_USER_NAME=alice"}
		stderr = &bytes.Buffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, logDir, termLog, stderr
	}
	exitCode := func(err error) int {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}

	t.Run("runs localizes and stops on SIGTERM", func(t *testing.T) {
		cmd, logDir, _, stderr := start(t, &yarnpb.ContainerLaunchContextProto{
			LocalResources: []*yarnpb.StringLocalResourceMapProto{
				res("job.xml", conf, yarnpb.LocalResourceTypeProto_FILE), res("deps", archive, yarnpb.LocalResourceTypeProto_ARCHIVE)},
			Environment: []*yarnpb.StringStringMapProto{{Key: proto.String("CP"), Value: proto.String("{{PWD}}/deps/lib<CPS>{{PWD}}")}},
			Tokens:      tokens,
			Command: []string{"cat job.xml deps/lib/dep.txt > <LOG_DIR>/out &&", `cp "$HADOOP_TOKEN_FILE_LOCATION" <LOG_DIR>/tokens &&`,
				`echo "$CP" > <LOG_DIR>/cp &&`, "trap 'exit 9' TERM; echo ready > <LOG_DIR>/ready; while true; do sleep 0.05; done"},
		})
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		testpoll.Poll(t, "the container to start", func() bool {
			select {
			case err := <-exited:
				b, _ := os.ReadFile(filepath.Join(logDir, "prelaunch.err"))
				t.Fatalf("the launcher exited: %v\nstderr:\n%s\nprelaunch.err:\n%s", err, stderr, b)
			default:
			}
			_, err := os.Stat(filepath.Join(logDir, "ready"))
			return err == nil
		})
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := exitCode(<-exited); code != 9 {
			t.Fatalf("exit code %d, want 9 (the container's trap); stderr:\n%s", code, stderr)
		}
		read := func(name string) string { b, _ := os.ReadFile(filepath.Join(logDir, name)); return string(b) }
		if got := read("out"); got != "<configuration/>dep" {
			t.Errorf("the container read %q", got)
		}
		if got := read("tokens"); got != string(tokens) {
			t.Errorf("container_tokens = %q", got)
		}
		work := filepath.Dir(filepath.Dir(filepath.Dir(logDir))) + "/work"
		if got := strings.TrimSpace(read("cp")); got != work+"/deps/lib:"+work {
			t.Errorf("CP = %q", got)
		}
	})
	t.Run("exit code", func(t *testing.T) {
		cmd, _, _, stderr := start(t, &yarnpb.ContainerLaunchContextProto{Command: []string{"exit 3"}})
		if code := exitCode(cmd.Wait()); code != 3 {
			t.Fatalf("exit code %d, want 3; stderr:\n%s", code, stderr)
		}
	})
	t.Run("refused launch context", func(t *testing.T) {
		bad := res("../escape", conf, yarnpb.LocalResourceTypeProto_FILE)
		cmd, _, termLog, stderr := start(t, &yarnpb.ContainerLaunchContextProto{
			LocalResources: []*yarnpb.StringLocalResourceMapProto{bad}, Command: []string{"true"}})
		if code := exitCode(cmd.Wait()); code != launch.ExitLaunchFailed {
			t.Fatalf("exit code %d, want %d; stderr:\n%s", code, launch.ExitLaunchFailed, stderr)
		}
		if msg, err := os.ReadFile(termLog); err != nil || len(msg) == 0 {
			t.Fatalf("termination log %q, %v", msg, err)
		}
	})
}
