//go:build interop

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm/launch"
)

// probeJava runs inside the launched container: Hadoop's own code reads
// what the launcher set up (the container id from CONTAINER_ID, the login
// user and the credentials from HADOOP_TOKEN_FILE_LOCATION through
// UserGroupInformation, as every YARN container does at start).
const probeJava = `import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.yarn.api.ApplicationConstants.Environment;
import org.apache.hadoop.yarn.api.records.ContainerId;
public class Probe {
  public static void main(String[] a) throws Exception {
    ContainerId cid = ContainerId.fromString(System.getenv(Environment.CONTAINER_ID.name()));
    System.out.println("attempt=" + cid.getApplicationAttemptId());
    UserGroupInformation u = UserGroupInformation.getCurrentUser();
    System.out.println("user=" + u.getShortUserName());
    for (Token<?> t : u.getTokens()) System.out.println("token=" + t.getKind() + "@" + t.getService());
    System.out.println("cwd=" + new java.io.File(".").getCanonicalPath());
    System.out.println("tmpdir=" + System.getProperty("java.io.tmpdir"));
  }
}
`

// writableCredentials encodes Hadoop's Credentials token storage (format 0,
// Writable) with one token and no secret key; every length here is below
// 128, so each WritableUtils vint is one byte.
func writableCredentials(t *testing.T, alias, id, password, kind, service string) []byte {
	b := []byte("HDTS\x00\x01")
	for _, s := range []string{alias, id, password, kind, service} {
		if len(s) >= 128 {
			t.Fatalf("%q too long for a one-byte vint", s)
		}
		b = append(append(b, byte(len(s))), s...)
	}
	return append(b, 0) // no secret keys
}

// TestLauncherRunsHadoopContainer: the built `yarnfed kuberm launch` runs a
// Java container the way a NodeManager does, and Hadoop 3.4's own classes
// in it find its container id, its user and its credentials, with the
// classpath given through {{PWD}} and <CPS> and the Java source file
// localized as a FILE resource.
func TestLauncherRunsHadoopContainer(t *testing.T) {
	j := needJava(t)
	yarnfed, _ := yarnfedBinaries(t)
	javaHome := filepath.Dir(filepath.Dir(mustEvalSymlinks(t, j.java)))
	pod := t.TempDir()
	launchDir, work, logDir := filepath.Join(pod, "launch"), filepath.Join(pod, "work"), filepath.Join(pod, "logs", "c")
	for _, d := range []string{launchDir, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(t.TempDir(), "Probe.java")
	if err := os.WriteFile(src, []byte(probeJava), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(src)
	const cid = "container_e3_1700000000000_0042_01_000007"
	lc := &yarnpb.ContainerLaunchContextProto{
		Tokens: writableCredentials(t, "amrm", "id", "pw", "YARN_AM_RM_TOKEN", "10.0.0.1:8030"),
		LocalResources: []*yarnpb.StringLocalResourceMapProto{{Key: proto.String("Probe.java"), Value: &yarnpb.LocalResourceProto{
			Resource: &yarnpb.URLProto{Scheme: proto.String("file"), File: proto.String(src), Port: proto.Int32(-1)},
			Size:     proto.Int64(st.Size()), Timestamp: proto.Int64(st.ModTime().UnixMilli()), Type: yarnpb.LocalResourceTypeProto_FILE.Enum()}}},
		Environment: []*yarnpb.StringStringMapProto{{Key: proto.String("CLASSPATH"),
			Value: proto.String("{{PWD}}<CPS>" + strings.ReplaceAll(j.classpath, string(os.PathListSeparator), "<CPS>"))}},
		Command: []string{"{{JAVA_HOME}}/bin/java", "-Djava.io.tmpdir={{PWD}}/tmp", "<ADD_OPENS>", "Probe.java",
			"1><LOG_DIR>/stdout", "2><LOG_DIR>/stderr"},
	}
	b, err := proto.Marshal(lc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(launchDir, launch.ContextFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(yarnfed, "kuberm", "launch", "--launch-dir", launchDir, "--termination-log", filepath.Join(pod, "termination-log"))
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "JAVA_HOME=" + javaHome, "CONTAINER_ID=" + cid,
		"NM_HOST=127.0.0.1", "NM_PORT=8041", "NM_HTTP_PORT=8042", "LOCAL_DIRS=" + filepath.Join(work, "local"),
		"LOG_DIRS=" + logDir, "USER=alice", "LOGNAME=alice", "HOME=" + work, "HADOOP_USER_NAME=alice"}
	out, err := cmd.CombinedOutput()
	stdout, _ := os.ReadFile(filepath.Join(logDir, "stdout"))
	stderr, _ := os.ReadFile(filepath.Join(logDir, "stderr"))
	if err != nil {
		t.Fatalf("launcher: %v\n%s\ncontainer stdout:\n%s\ncontainer stderr:\n%s", err, out, stdout, tail(string(stderr), 4000))
	}
	for _, want := range []string{
		"attempt=appattempt_1700000000000_0042_000001",
		"user=alice",
		"token=YARN_AM_RM_TOKEN@10.0.0.1:8030",
		"cwd=" + mustEvalSymlinks(t, work),
		"tmpdir=" + work + "/tmp",
	} {
		if !strings.Contains(string(stdout), want+"\n") {
			t.Errorf("the container printed no %q:\n%s\nstderr:\n%s", want, stdout, tail(string(stderr), 4000))
		}
	}
}

func mustEvalSymlinks(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
