package launch

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// FuzzDecodeContext: the launch Secret's bytes come from an AM through the
// NM face; any bytes decode to a context that keeps every rule (bounded
// counts, link names inside the working directory, exportable names) or
// fail with ErrBadContext, never panic.
func FuzzDecodeContext(f *testing.F) {
	good, _ := proto.Marshal(&yarnpb.ContainerLaunchContextProto{
		LocalResources: []*yarnpb.StringLocalResourceMapProto{{Key: proto.String("lib/a.jar"), Value: &yarnpb.LocalResourceProto{
			Resource: &yarnpb.URLProto{Scheme: proto.String("file"), File: proto.String("/x/a.jar")}, Size: proto.Int64(3), Timestamp: proto.Int64(1),
			Type: yarnpb.LocalResourceTypeProto_PATTERN.Enum(), Pattern: proto.String("classes/.*")}}},
		Environment: env("CLASSPATH", "{{PWD}}<CPS>*", "A", "1", "A", "2"),
		Command:     []string{"{{JAVA_HOME}}/bin/java", "1><LOG_DIR>/stdout"},
		Tokens:      []byte("HDTS\x00\x00\x00"),
	})
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x05, 0x0a, 0x03, '.', '.', '/'})
	f.Add([]byte{0x22, 0x03, 0x0a, 0x01, ';'})
	lim := DefaultLimits()
	lim.Resources, lim.EnvVars, lim.Commands = 8, 8, 8
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeContext(b, lim)
		if err != nil {
			if !errors.Is(err, ErrBadContext) {
				t.Fatalf("error %v does not wrap ErrBadContext", err)
			}
			return
		}
		if len(c.Resources) > lim.Resources || len(c.Env) > lim.EnvVars || len(c.Commands) > lim.Commands {
			t.Fatalf("accepted over the bounds: %d resources, %d env, %d commands", len(c.Resources), len(c.Env), len(c.Commands))
		}
		seen := map[string]bool{}
		for _, r := range c.Resources {
			if checkLinkName(r.Link, lim) != nil || seen[r.Link] {
				t.Fatalf("accepted link name %q", r.Link)
			}
			seen[r.Link] = true
			if !strings.HasPrefix(r.File, "/") || r.Scheme == "" {
				t.Fatalf("accepted URL %+v", r)
			}
		}
		for _, e := range c.Env {
			if !validEnvName(e.Name) || strings.IndexByte(e.Value, 0) >= 0 {
				t.Fatalf("accepted variable %q", e.Name)
			}
		}
		if len(c.Tokens) > 0 && !strings.HasPrefix(string(c.Tokens), "HDTS") {
			t.Fatal("accepted tokens that are not token storage")
		}
	})
}
