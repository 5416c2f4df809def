package launch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// What the launcher reads, and what it accepts of it. The launch Secret is
// written by kuberm's NM face from an AM's startContainers; the AM is not
// trusted beyond its own container, so everything here is bounded before
// it is used: the launcher must never write outside the pod's working and
// log directories nor hold more than the limits say.

const (
	// DefaultLaunchDir and ContextFile are kuberm.LaunchMountPath and
	// kuberm.DataLaunchContext (kuberm/container.go). They are repeated
	// here, not imported, because package kuberm brings client-go into the
	// launcher; kuberm's TestLaunchContractConstants keeps them equal.
	DefaultLaunchDir = "/var/run/yarnfed/launch"
	ContextFile      = "launch-context"

	// ScriptName and TokensFile are the NodeManager's names in the
	// container's working directory (launch_container.sh, container_tokens).
	ScriptName = "launch_container.sh"
	TokensFile = "container_tokens"
)

// Limits bound what one launch context can make the launcher do.
type Limits struct {
	ContextBytes    int64 // the encoded launch context
	Resources       int   // local resources
	EnvVars         int   // environment entries
	Commands        int   // command words
	TextBytes       int   // one environment value, command word or link name
	ResourceBytes   int64 // one downloaded or copied resource
	TotalBytes      int64 // all resources, before unpacking
	UnpackedBytes   int64 // everything one archive unpacks to
	ArchiveEntries  int   // entries of one archive (or files of a copied directory)
	TokensBytes     int   // the credentials
	PatternBytes    int   // a PATTERN resource's regular expression
	LinkNameBytes   int   // a local resource's link name
	CommandLineByte int   // the commands joined
	// FetchTimeout bounds one hdfs:// fetch (yarnfed-hdfs-fetch's
	// --timeout); zero means DefaultFetchTimeout.
	FetchTimeout time.Duration
}

// DefaultLimits are generous for real frameworks (Spark ships a few hundred
// jars, a MapReduce job a handful) and still bounded: the pod's
// ephemeral-storage limit bounds the disk on top of these.
func DefaultLimits() Limits {
	return Limits{
		ContextBytes:    4 << 20, // a Secret holds at most 1 MiB
		Resources:       4096,
		EnvVars:         4096,
		Commands:        4096,
		TextBytes:       256 << 10,
		ResourceBytes:   8 << 30,
		TotalBytes:      32 << 30,
		UnpackedBytes:   32 << 30,
		ArchiveEntries:  1 << 20,
		TokensBytes:     1 << 20,
		PatternBytes:    4096,
		LinkNameBytes:   1024,
		CommandLineByte: 1 << 20,
		FetchTimeout:    DefaultFetchTimeout,
	}
}

// Sentinel errors. Each failure wraps exactly one of them.
var (
	// ErrBadContext: the launch context is missing, too large, not a
	// ContainerLaunchContextProto, or breaks a rule (a bad link name, an
	// environment name bash cannot export, a NUL byte, a bound).
	ErrBadContext = errors.New("bad container launch context")
	// ErrLocalize: a local resource could not be localized (unreachable,
	// changed on its source, larger than declared, an unsafe archive).
	ErrLocalize = errors.New("localization failed")
	// ErrUnsupportedScheme: a resource URL whose scheme the launcher does
	// not fetch (s3a://, viewfs://, ...; DESIGN.md "Launcher").
	ErrUnsupportedScheme = errors.New("unsupported resource scheme")
	// ErrLaunch: the environment, the script or the process could not be
	// set up.
	ErrLaunch = errors.New("launch failed")
)

// Resource is one local resource as the launcher uses it.
type Resource struct {
	Link       string // the key: a relative path in the working directory
	URL        string // scheme://host[:port]/file, for messages (no user info)
	Scheme     string // lower case
	Host       string // host[:port]
	UserInfo   string
	File       string // the absolute path on the source
	Size       int64  // -1 or 0: unknown
	Timestamp  int64  // ms since the epoch; 0: not given
	Type       yarnpb.LocalResourceTypeProto
	Visibility yarnpb.LocalResourceVisibilityProto
	Pattern    string
}

// EnvVar is one environment entry of the launch context, in its order.
type EnvVar struct{ Name, Value string }

// Context is a decoded and checked launch context.
type Context struct {
	Resources []Resource
	Env       []EnvVar
	Commands  []string
	Tokens    []byte // Hadoop Credentials token storage ("HDTS" ...), or nil
}

// tokenStorageMagic starts Hadoop's Credentials token storage stream.
var tokenStorageMagic = []byte("HDTS")

// ReadContext reads the launch context file at most lim.ContextBytes long.
func ReadContext(file string, lim Limits) (*Context, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (is the launch Secret mounted?)", ErrBadContext, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, lim.ContextBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %v", ErrBadContext, file, err)
	}
	return DecodeContext(b, lim)
}

// DecodeContext parses and checks a ContainerLaunchContextProto.
func DecodeContext(b []byte, lim Limits) (*Context, error) {
	if int64(len(b)) > lim.ContextBytes {
		return nil, fmt.Errorf("%w: %d bytes or more, at most %d", ErrBadContext, len(b), lim.ContextBytes)
	}
	var pb yarnpb.ContainerLaunchContextProto
	if err := proto.Unmarshal(b, &pb); err != nil {
		return nil, fmt.Errorf("%w: not a ContainerLaunchContextProto: %v", ErrBadContext, err)
	}
	return checkContext(&pb, lim)
}

func checkContext(pb *yarnpb.ContainerLaunchContextProto, lim Limits) (*Context, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadContext}, a...)...)
	}
	c := &Context{}
	if n := len(pb.GetLocalResources()); n > lim.Resources {
		return nil, bad("%d local resources, at most %d", n, lim.Resources)
	}
	if n := len(pb.GetEnvironment()); n > lim.EnvVars {
		return nil, bad("%d environment entries, at most %d", n, lim.EnvVars)
	}
	if n := len(pb.GetCommand()); n > lim.Commands {
		return nil, bad("%d command words, at most %d", n, lim.Commands)
	}
	if t := pb.GetTokens(); len(t) > 0 {
		if len(t) > lim.TokensBytes {
			return nil, bad("credentials of %d bytes, at most %d", len(t), lim.TokensBytes)
		}
		if !bytes.HasPrefix(t, tokenStorageMagic) {
			return nil, bad("tokens are not Hadoop Credentials token storage (no HDTS magic)")
		}
		c.Tokens = t
	}
	links := map[string]bool{}
	for _, e := range pb.GetLocalResources() {
		link := e.GetKey()
		if err := checkLinkName(link, lim); err != nil {
			return nil, err
		}
		if links[link] {
			return nil, bad("local resource %q given twice", link)
		}
		links[link] = true
		r, err := checkResource(link, e.GetValue(), lim)
		if err != nil {
			return nil, err
		}
		c.Resources = append(c.Resources, r)
	}
	names := map[string]int{}
	for _, e := range pb.GetEnvironment() {
		name, value := e.GetKey(), e.GetValue()
		if !validEnvName(name) {
			return nil, bad("environment name %q is not a shell variable name", truncate(name))
		}
		if len(value) > lim.TextBytes || strings.IndexByte(value, 0) >= 0 {
			return nil, bad("environment %s: value of %d bytes (at most %d) or with a NUL byte", name, len(value), lim.TextBytes)
		}
		if i, ok := names[name]; ok { // a later entry replaces an earlier one, as in a Java map
			c.Env[i].Value = value
			continue
		}
		names[name] = len(c.Env)
		c.Env = append(c.Env, EnvVar{name, value})
	}
	total := 0
	for _, w := range pb.GetCommand() {
		if len(w) > lim.TextBytes || strings.IndexByte(w, 0) >= 0 {
			return nil, bad("a command word of %d bytes (at most %d) or with a NUL byte", len(w), lim.TextBytes)
		}
		total += len(w) + 1
		c.Commands = append(c.Commands, w)
	}
	if total > lim.CommandLineByte {
		return nil, bad("commands of %d bytes, at most %d", total, lim.CommandLineByte)
	}
	return c, nil
}

// reservedNames are the working directory entries the launcher itself
// writes: a resource linked there would replace them.
var reservedNames = map[string]bool{ScriptName: true, TokensFile: true, "tmp": true}

// checkLinkName: a link name is a relative path below the working
// directory, as the NodeManager requires ("Destination must be relative"):
// no absolute path, no "." or ".." element, no empty element, no
// control character, and not one of the files the launcher writes.
func checkLinkName(link string, lim Limits) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: local resource link name %q %s", ErrBadContext, truncate(link), why)
	}
	switch {
	case link == "":
		return bad("is empty")
	case len(link) > lim.LinkNameBytes:
		return bad(fmt.Sprintf("is longer than %d bytes", lim.LinkNameBytes))
	case strings.IndexFunc(link, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return bad("has a control character")
	case strings.HasPrefix(link, "/"):
		return bad("is absolute")
	}
	for _, el := range strings.Split(link, "/") {
		if el == "" || el == "." || el == ".." {
			return bad("has an empty, \".\" or \"..\" element")
		}
	}
	if reservedNames[strings.SplitN(link, "/", 2)[0]] {
		return bad("names a file the launcher writes")
	}
	return nil
}

func checkResource(link string, lr *yarnpb.LocalResourceProto, lim Limits) (Resource, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: local resource %q: "+format, append([]any{ErrBadContext, link}, a...)...)
	}
	u := lr.GetResource()
	if u == nil {
		return Resource{}, bad("no URL")
	}
	r := Resource{
		Link: link, Scheme: strings.ToLower(u.GetScheme()), Size: lr.GetSize(), Timestamp: lr.GetTimestamp(),
		Type: lr.GetType(), Visibility: lr.GetVisibility(), Pattern: lr.GetPattern(),
	}
	if lr.Type == nil {
		r.Type = yarnpb.LocalResourceTypeProto_FILE
	}
	if _, ok := yarnpb.LocalResourceTypeProto_name[int32(r.Type)]; !ok {
		return Resource{}, bad("unknown type %d", r.Type)
	}
	file := u.GetFile()
	for _, s := range []string{u.GetScheme(), u.GetHost(), file, u.GetUserInfo(), r.Pattern} {
		if len(s) > lim.TextBytes || strings.IndexByte(s, 0) >= 0 {
			return Resource{}, bad("a URL part or pattern of %d bytes or with a NUL byte", len(s))
		}
	}
	if len(r.Pattern) > lim.PatternBytes {
		return Resource{}, bad("pattern of %d bytes, at most %d", len(r.Pattern), lim.PatternBytes)
	}
	if r.Scheme == "" {
		return Resource{}, bad("URL without a scheme")
	}
	if !strings.HasPrefix(file, "/") {
		return Resource{}, bad("URL file %q is not an absolute path", truncate(file))
	}
	if base := path.Base(file); base == "/" || base == "." || base == ".." {
		return Resource{}, bad("URL file %q names no file", truncate(file))
	}
	r.Host, r.UserInfo, r.File = u.GetHost(), u.GetUserInfo(), file
	if p := u.GetPort(); p > 0 {
		r.Host = fmt.Sprintf("%s:%d", r.Host, p)
	}
	r.URL = r.Scheme + "://" + r.Host + file

	return r, nil
}

func validEnvName(s string) bool {
	if s == "" || len(s) > 1024 {
		return false
	}
	for i, c := range s {
		alpha := c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !alpha && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
