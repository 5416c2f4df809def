package launch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm/launch/fetchwire"
)

// fakeFetcher stands in for yarnfed-hdfs-fetch: it serves hdfs:// paths
// from a local directory tree (its "namespace"), checks the recorded
// timestamp against its own fixed one as the real fetcher checks the
// NameNode's, and records every request. report, when set, replaces what
// it would report (to fake a lying or failing fetcher).
type fakeFetcher struct {
	root   string // hdfs path /p is root/p
	mtime  int64  // every source's modification time, ms
	report func(req fetchwire.Request) (fetchwire.Report, error)

	mu   sync.Mutex
	reqs []fetchwire.Request
}

func (f *fakeFetcher) Fetch(_ context.Context, req fetchwire.Request) (fetchwire.Report, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if err := req.Check(); err != nil {
		return fetchwire.Report{}, err
	}
	if f.report != nil {
		return f.report(req)
	}
	_, file, _ := fetchwire.SplitURL(req.URL)
	src := filepath.Join(f.root, filepath.FromSlash(file))
	st, err := os.Stat(src)
	if err != nil {
		return fetchwire.Report{Status: fetchwire.StatusFailed, Kind: fetchwire.KindNotFound, Message: "File does not exist: " + file}, nil
	}
	if req.Timestamp != f.mtime {
		return fetchwire.Report{Status: fetchwire.StatusChanged, What: fetchwire.WhatTimestamp, Expected: req.Timestamp, Found: f.mtime}, nil
	}
	if !st.IsDir() && req.Size > 0 && req.Size != st.Size() {
		return fetchwire.Report{Status: fetchwire.StatusChanged, What: fetchwire.WhatSize, Expected: req.Size, Found: st.Size()}, nil
	}
	rep := fetchwire.Report{Status: fetchwire.StatusOK, Dir: st.IsDir(), ModTime: f.mtime}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(req.Dest, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rep.Bytes += int64(len(b))
		rep.Files++
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		return fetchwire.Report{}, err
	}
	return rep, nil
}

func (f *fakeFetcher) requests() []fetchwire.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fetchwire.Request(nil), f.reqs...)
}

const fakeMtime = int64(1_700_000_123_456)

func newFakeFetcher(t *testing.T) *fakeFetcher {
	return &fakeFetcher{root: t.TempDir(), mtime: fakeMtime}
}

func hdfsResource(link, file string, size, ts int64, typ yarnpb.LocalResourceTypeProto) *yarnpb.StringLocalResourceMapProto {
	return &yarnpb.StringLocalResourceMapProto{Key: proto.String(link), Value: &yarnpb.LocalResourceProto{
		Resource: &yarnpb.URLProto{Scheme: proto.String("hdfs"), Host: proto.String("nn.example.com"), Port: proto.Int32(8020), File: proto.String(file)},
		Size:     proto.Int64(size), Timestamp: proto.Int64(ts), Type: typ.Enum(),
		Visibility: yarnpb.LocalResourceVisibilityProto_APPLICATION.Enum()}}
}

// runWith launches lc with fetcher as the HDFS fetcher.
func (f *fixture) runWith(fetcher remoteFetcher, lc *yarnpb.ContainerLaunchContextProto) (int, error) {
	f.t.Helper()
	f.writeContext(lc)
	cfg := f.config()
	cfg.fetcher = fetcher
	return Run(context.Background(), cfg)
}

// TestHDFSResourcesThroughTheFetcher: hdfs:// resources are handed to the
// fetcher with the container's user, the recorded timestamp and size, the
// launcher's bounds and an escaped URL, into the file cache; what it
// fetched is then placed as for the other schemes: a FILE linked, a
// .tar.gz ARCHIVE unpacked, a directory (even typed ARCHIVE and named
// like a zip: FSDownload copies directories, unpacks only files) linked as
// a tree, all made read-only.
func TestHDFSResourcesThroughTheFetcher(t *testing.T) {
	f := newFixture(t)
	fake := newFakeFetcher(t)
	writeFile(t, filepath.Join(fake.root, "user/alice/app/job #1.xml"), []byte("<configuration/>"))
	tgz := tgzBytes(t, entry{name: "lib/", dir: true}, entry{name: "lib/z.txt", body: "tgz-z"})
	writeFile(t, filepath.Join(fake.root, "user/alice/app/env.tar.gz"), tgz)
	writeFile(t, filepath.Join(fake.root, "user/alice/app/conf.zip/core-site.xml"), []byte("core"))
	writeFile(t, filepath.Join(fake.root, "user/alice/app/conf.zip/sub/x.txt"), []byte("x"))
	lim := DefaultLimits()
	lim.ResourceBytes, lim.TotalBytes, lim.ArchiveEntries, lim.FetchTimeout = 1<<20, 200, 77, time.Minute
	f.writeContext(&yarnpb.ContainerLaunchContextProto{
		LocalResources: []*yarnpb.StringLocalResourceMapProto{
			hdfsResource("job.xml", "/user/alice/app/job #1.xml", 16, fakeMtime, yarnpb.LocalResourceTypeProto_FILE),
			hdfsResource("env", "/user/alice/app/env.tar.gz", int64(len(tgz)), fakeMtime, yarnpb.LocalResourceTypeProto_ARCHIVE),
			hdfsResource("conf", "/user/alice/app/conf.zip", 0, fakeMtime, yarnpb.LocalResourceTypeProto_ARCHIVE),
		},
		Command: []string{"cat job.xml env/lib/z.txt conf/core-site.xml conf/sub/x.txt > <LOG_DIR>/out"},
	})
	cfg := f.config()
	cfg.fetcher, cfg.Limits = fake, lim
	code, err := Run(context.Background(), cfg)
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	if got := f.readLog("out"); got != "<configuration/>tgz-zcorex" {
		t.Fatalf("the container read %q", got)
	}
	reqs := fake.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d fetches, want 3", len(reqs))
	}
	cache := filepath.Join(f.local, "filecache") + "/"
	for i, want := range []struct {
		url, name string
		size      int64
		maxBytes  int64
	}{
		// Each fetch is bounded by what is left of the total after the ones before.
		{"hdfs://nn.example.com:8020/user/alice/app/job%20%231.xml", "job #1.xml", 16, 200},
		{"hdfs://nn.example.com:8020/user/alice/app/env.tar.gz", "env.tar.gz", int64(len(tgz)), 200 - 16},
		{"hdfs://nn.example.com:8020/user/alice/app/conf.zip", "conf.zip", 0, 200 - 16 - int64(len(tgz))},
	} {
		r := reqs[i]
		if r.URL != want.url || r.User != "alice" || r.Timestamp != fakeMtime || r.Size != want.size ||
			r.MaxBytes != want.maxBytes || r.MaxEntries != 77 || r.Timeout != time.Minute ||
			!strings.HasPrefix(r.Dest, cache) || filepath.Base(r.Dest) != want.name || !strings.HasSuffix(filepath.Dir(r.Dest), "_tmp") {
			t.Errorf("fetch %d: %+v; want %s as alice, ts %d, size %d, max %d bytes, 77 entries, 1m, into %s*_tmp/%s",
				i, r, want.url, fakeMtime, want.size, want.maxBytes, cache, want.name)
		}
	}
	for link, mode := range map[string]fs.FileMode{"job.xml": 0o500, "env": 0o700, "env/lib/z.txt": 0o500, "conf": 0o700, "conf/sub": 0o700, "conf/sub/x.txt": 0o500} {
		st, err := os.Stat(filepath.Join(f.work, link))
		if err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v (%v), want %v", link, st.Mode().Perm(), err, mode)
		}
	}
}

// TestHDFSChangedRefused: the fetcher's "changed" report is FSDownload's
// refusal, worded as for file:// (ISO times for a timestamp); the
// container exits ExitLocalizationFailed with the reason in the
// termination log and its command never runs.
func TestHDFSChangedRefused(t *testing.T) {
	for _, c := range []struct {
		name     string
		ts, size int64
		want     string
	}{
		{"timestamp", fakeMtime - 1000, 4,
			"resource hdfs://nn.example.com:8020/a/b.jar changed on src filesystem: timestamp expected 2023-11-14T22:15:22.456Z, was 2023-11-14T22:15:23.456Z"},
		{"size", fakeMtime, 5, "resource hdfs://nn.example.com:8020/a/b.jar changed on src filesystem: size expected 5, was 4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			fake := newFakeFetcher(t)
			writeFile(t, filepath.Join(fake.root, "a/b.jar"), []byte("four"))
			code, err := f.runWith(fake, &yarnpb.ContainerLaunchContextProto{
				LocalResources: []*yarnpb.StringLocalResourceMapProto{hdfsResource("b.jar", "/a/b.jar", c.size, c.ts, yarnpb.LocalResourceTypeProto_FILE)},
				Command:        []string{"touch ran"}})
			if !errors.Is(err, ErrLocalize) || code != ExitLocalizationFailed || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Run = %d, %v; want %d and %q", code, err, ExitLocalizationFailed, c.want)
			}
			if _, serr := os.Stat(filepath.Join(f.work, "ran")); serr == nil {
				t.Fatal("the command ran")
			}
			if msg, _ := os.ReadFile(f.config().TerminationLog); string(msg) != err.Error() {
				t.Errorf("termination log %q, want %q", msg, err)
			}
		})
	}
}

// TestHDFSFetcherFailures: whatever goes wrong with the fetch is a
// localization failure naming the resource and the reason: the fetcher's
// own failure report, a report that does not match what is on disk (a
// fetcher is trusted for nothing the bounds depend on), no fetcher
// installed, no user to fetch as, the total bound used up.
func TestHDFSFetcherFailures(t *testing.T) {
	res := hdfsResource("b.jar", "/a/b.jar", 4, fakeMtime, yarnpb.LocalResourceTypeProto_FILE)
	lc := &yarnpb.ContainerLaunchContextProto{LocalResources: []*yarnpb.StringLocalResourceMapProto{res}, Command: []string{"touch ran"}}
	for _, c := range []struct {
		name    string
		fetcher func(t *testing.T) remoteFetcher
		env     func([]string) []string
		lim     func(*Limits)
		want    string
	}{
		{"unreachable", func(t *testing.T) remoteFetcher {
			return &fakeFetcher{report: func(fetchwire.Request) (fetchwire.Report, error) {
				return fetchwire.Report{Status: fetchwire.StatusFailed, Kind: fetchwire.KindUnreachable,
					Message: "no NameNode reachable at nn.example.com:8020: connection refused"}, nil
			}}
		}, nil, nil, "hdfs://nn.example.com:8020/a/b.jar: no NameNode reachable at nn.example.com:8020: connection refused (unreachable)"},
		{"report larger than the disk", func(t *testing.T) remoteFetcher {
			return &fakeFetcher{report: func(req fetchwire.Request) (fetchwire.Report, error) {
				return fetchwire.Report{Status: fetchwire.StatusOK, Bytes: 3, Files: 1}, os.WriteFile(req.Dest, []byte("fiver"), 0o600)
			}}
		}, nil, nil, "the fetcher reported 3 bytes in 1 files, 5 bytes in 1 files are on disk"},
		{"wrote past the bound", func(t *testing.T) remoteFetcher {
			return &fakeFetcher{report: func(req fetchwire.Request) (fetchwire.Report, error) {
				b := make([]byte, req.MaxBytes+1)
				return fetchwire.Report{Status: fetchwire.StatusOK, Bytes: int64(len(b)), Files: 1}, os.WriteFile(req.Dest, b, 0o600)
			}}
		}, nil, func(l *Limits) { l.ResourceBytes = 10 }, "the fetcher reported 11 bytes in 1 files, 11 bytes in 1 files are on disk (bound 10)"},
		{"a link on disk", func(t *testing.T) remoteFetcher {
			return &fakeFetcher{report: func(req fetchwire.Request) (fetchwire.Report, error) {
				return fetchwire.Report{Status: fetchwire.StatusOK}, os.Symlink("/etc/passwd", req.Dest)
			}}
		}, nil, nil, errNotPlain.Error()},
		{"no report", func(t *testing.T) remoteFetcher {
			return &fakeFetcher{report: func(fetchwire.Request) (fetchwire.Report, error) {
				return fetchwire.Report{}, fmt.Errorf("%w: unexpected EOF", fetchwire.ErrBadReport)
			}}
		}, nil, nil, "bad fetch report: unexpected EOF"},
		{"not installed", func(t *testing.T) remoteFetcher { return execFetcher{} }, nil, nil,
			"yarnfed-hdfs-fetch is not installed beside the launcher"},
		{"no user", func(t *testing.T) remoteFetcher { return newFakeFetcher(t) }, func(env []string) []string {
			var out []string
			for _, kv := range env {
				if !strings.HasPrefix(kv, "USER=") {
					out = append(out, kv)
				}
			}
			return out
		}, nil, "no user to fetch as"},
		{"total bound used up", func(t *testing.T) remoteFetcher { return newFakeFetcher(t) }, nil,
			func(l *Limits) { l.TotalBytes = 0 }, "the launcher's total bound of 0 bytes is used up"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if c.env != nil {
				f.env = c.env(f.env)
			}
			f.writeContext(lc)
			cfg := f.config()
			cfg.fetcher = c.fetcher(t)
			if c.lim != nil {
				cfg.Limits = DefaultLimits()
				c.lim(&cfg.Limits)
			}
			code, err := Run(context.Background(), cfg)
			if !errors.Is(err, ErrLocalize) || code != ExitLocalizationFailed || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Run = %d, %v; want %d and %q", code, err, ExitLocalizationFailed, c.want)
			}
			if _, serr := os.Stat(filepath.Join(f.work, "ran")); serr == nil {
				t.Fatal("the command ran")
			}
		})
	}
}

// fakeFetcherScript writes a shell script standing in for the
// yarnfed-hdfs-fetch binary: it records its arguments, then runs body.
func fakeFetcherScript(t *testing.T, body string) (path, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	path = filepath.Join(dir, "fake-hdfs-fetch")
	script := "#!/bin/bash\nprintf '%s\\n' \"$@\" > " + argsFile + "\n" + body + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, argsFile
}

// TestExecFetcher: the launcher runs the fetcher binary with the request
// as its command line and the container's environment, and takes its
// report only when it is one valid JSON report that agrees with the exit
// status; anything else (garbage, an oversized report, a failure report
// with exit 0, a fetcher past its timeout) is an error quoting stderr.
func TestExecFetcher(t *testing.T) {
	req := fetchwire.Request{URL: "hdfs://nn:8020/a/b.jar", User: "alice", Dest: "/tmp/x/b.jar", Size: 4, Timestamp: 7,
		MaxBytes: 100, MaxEntries: 10, Timeout: time.Minute}
	for _, c := range []struct {
		name, body string
		timeout    time.Duration
		want       fetchwire.Report
		wantErr    string
	}{
		{name: "ok", body: `[ "$HADOOP_CONF_DIR" = /etc/hadoop/conf ] || exit 9; echo '{"status":"ok","bytes":4,"files":1,"mtime":7}'`,
			want: fetchwire.Report{Status: fetchwire.StatusOK, Bytes: 4, Files: 1, ModTime: 7}},
		{name: "changed", body: `echo '{"status":"changed","what":"timestamp","expected":7,"found":8}'; exit 3`,
			want: fetchwire.Report{Status: fetchwire.StatusChanged, What: fetchwire.WhatTimestamp, Expected: 7, Found: 8}},
		{name: "failed", body: `echo '{"status":"failed","kind":"not_found","message":"File does not exist: /a/b.jar"}'; exit 1`,
			want: fetchwire.Report{Status: fetchwire.StatusFailed, Kind: fetchwire.KindNotFound, Message: "File does not exist: /a/b.jar"}},
		{name: "garbage", body: `echo 'panic: oops' >&2; echo 'not json'; exit 2`, wantErr: `bad fetch report`},
		{name: "crash without a report", body: `echo 'panic: proto: duplicate registration' >&2; exit 2`, wantErr: `stderr: "panic: proto: duplicate registration"`},
		{name: "failure with exit 0", body: `echo '{"status":"failed","kind":"io","message":"x"}'`, wantErr: `exited 0`},
		{name: "ok with exit 1", body: `echo '{"status":"ok"}'; exit 1`, wantErr: `exit status 1`},
		{name: "oversized report", body: `head -c 70000 /dev/zero | tr '\0' ' '; echo '{"status":"ok"}'`, wantErr: `more than 65536 bytes`},
		{name: "past its timeout", body: `echo started >&2; exec sleep 60`, timeout: time.Millisecond, wantErr: `stopped after`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, argsFile := fakeFetcherScript(t, c.body)
			e := execFetcher{path: path, env: []string{"PATH=" + os.Getenv("PATH"), "HADOOP_CONF_DIR=/etc/hadoop/conf"}}
			r := req
			if c.timeout > 0 {
				r.Timeout, e.killSlack = c.timeout, 50*time.Millisecond
			}
			rep, err := e.Fetch(context.Background(), r)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Fetch = %+v, %v; want an error with %q", rep, err, c.wantErr)
				}
				return
			}
			if err != nil || rep != c.want {
				t.Fatalf("Fetch = %+v, %v; want %+v", rep, err, c.want)
			}
			args, _ := os.ReadFile(argsFile)
			if got, want := string(args), strings.Join(r.Args(), "\n")+"\n"; got != want {
				t.Errorf("the fetcher got arguments\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestInstallCopiesTheFetcher: --install copies the fetcher from beside
// the launcher's executable into the install directory, and installs the
// launcher alone when there is none.
func TestInstallCopiesTheFetcher(t *testing.T) {
	src := t.TempDir()
	self := writeFile(t, filepath.Join(src, "yarnfed"), []byte("launcher"))
	dir := t.TempDir()
	got, err := installBeside(self, dir)
	if err != nil || len(got) != 1 || got[0] != filepath.Join(dir, InstallName) {
		t.Fatalf("without a fetcher: installed %v, %v", got, err)
	}
	writeFile(t, filepath.Join(src, fetchwire.BinaryName), []byte("fetcher"))
	dir = t.TempDir()
	got, err = installBeside(self, dir)
	if err != nil || len(got) != 2 || got[1] != filepath.Join(dir, fetchwire.BinaryName) {
		t.Fatalf("installed %v, %v", got, err)
	}
	for name, body := range map[string]string{InstallName: "launcher", fetchwire.BinaryName: "fetcher"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		st, serr := os.Stat(filepath.Join(dir, name))
		if err != nil || string(b) != body || serr != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("%s: %q %v %v", name, b, err, serr)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("install left %d files", len(entries))
	}
}
