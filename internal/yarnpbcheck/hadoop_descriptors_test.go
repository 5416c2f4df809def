package yarnpbcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"

	"github.com/yarnfed/yarnfed/internal/testenv"
)

// ourFiles is every file of the schema we claim matches Hadoop.
var ourFiles = []protoreflect.FileDescriptor{
	yarnpb.File_yarn_protos_proto,
	yarnpb.File_yarn_service_protos_proto,
	yarnpb.File_applicationclient_protocol_proto,
	yarnpb.File_applicationmaster_protocol_proto,
	yarnpb.File_resourcemanager_administration_protocol_proto,
	yarnpb.File_yarn_server_resourcemanager_service_protos_proto,
	yarnpb.File_yarn_security_token_proto,
	yarnpb.File_yarn_server_federation_protos_proto,
	commonpb.File_commonpb_RpcHeader_proto,
	commonpb.File_commonpb_IpcConnectionContext_proto,
	commonpb.File_commonpb_ProtobufRpcEngine2_proto,
	commonpb.File_commonpb_Security_proto,
}

// notCarried lists Hadoop files the dump pulls in as imports but we leave
// out: yarn_server_federation_protos.proto imports it without using any of
// its types, and its NodeActionProto.NORMAL would clash with
// DecommissionTypeProto.NORMAL once both live in one protoc run.
var notCarried = map[string]bool{"yarn_server_common_protos.proto": true}

// definitions flattens files into "kind full.name" -> canonical text of the
// definition. File names, imports, file options and json_name are left out:
// they do not reach the wire, and our layout differs from Hadoop's on purpose.
func definitions(files []*descriptorpb.FileDescriptorProto) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		if notCarried[f.GetName()] {
			continue
		}
		pkg := f.GetPackage()
		enum := func(prefix string, e *descriptorpb.EnumDescriptorProto) {
			out["enum "+prefix+"."+e.GetName()] = prototext.Format(e)
		}
		var msg func(prefix string, m *descriptorpb.DescriptorProto)
		msg = func(prefix string, m *descriptorpb.DescriptorProto) {
			name := prefix + "." + m.GetName()
			for _, n := range m.GetNestedType() {
				msg(name, n)
			}
			for _, e := range m.GetEnumType() {
				enum(name, e)
			}
			c := proto.Clone(m).(*descriptorpb.DescriptorProto)
			c.NestedType, c.EnumType = nil, nil
			for _, fd := range c.Field {
				fd.JsonName = nil
			}
			out["message "+name] = prototext.Format(c)
		}
		for _, m := range f.GetMessageType() {
			msg(pkg, m)
		}
		for _, e := range f.GetEnumType() {
			enum(pkg, e)
		}
		for _, s := range f.GetService() {
			out["service "+pkg+"."+s.GetName()] = prototext.Format(s)
		}
	}
	return out
}

// TestMatchesHadoopDescriptors compares every message, field (number, label,
// scalar type, type name, default), enum value and rpc with the descriptors
// compiled into Hadoop's jars. YARNPB_HADOOP_DESCRIPTORS may name a set
// written earlier by testdata/hadoop-descriptors.sh; otherwise the test runs
// the script itself (Maven fetches the jars, a JDK dumps their descriptors),
// and without java, javac or mvn it skips, or fails in CI.
func TestMatchesHadoopDescriptors(t *testing.T) {
	path := os.Getenv("YARNPB_HADOOP_DESCRIPTORS")
	if path == "" {
		for _, tool := range []string{"java", "javac", "mvn"} {
			if _, err := exec.LookPath(tool); err != nil {
				testenv.Missing(t, "YARNFED_INTEROP_REQUIRED", "comparing with Hadoop's jars needs %s (apt-get install openjdk-17-jdk-headless maven)", tool)
			}
		}
		path = filepath.Join(t.TempDir(), "hadoop-descriptors.pb")
		out, err := exec.Command("bash", "testdata/hadoop-descriptors.sh", path).CombinedOutput()
		if err != nil {
			t.Fatalf("testdata/hadoop-descriptors.sh: %v\n%s", err, out)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var hadoop descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &hadoop); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	var ours []*descriptorpb.FileDescriptorProto
	for _, fd := range ourFiles {
		ours = append(ours, protodesc.ToFileDescriptorProto(fd))
	}
	want, got := definitions(hadoop.File), definitions(ours)
	if len(want) == 0 {
		t.Fatalf("%s holds no definitions", path)
	}
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		w, inHadoop := want[k]
		g, inOurs := got[k]
		switch {
		case !inOurs:
			t.Errorf("missing from our schema: %s", k)
		case !inHadoop:
			t.Errorf("not in Hadoop's schema: %s", k)
		case w != g:
			t.Errorf("%s differs\nHadoop:\n%s\nours:\n%s", k, w, g)
		}
	}
	t.Logf("%d definitions compared", len(keys))
}
