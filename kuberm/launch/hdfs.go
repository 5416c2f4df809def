package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/yarnfed/yarnfed/kuberm/launch/fetchwire"
)

// hdfs:// resources are fetched by a second binary, yarnfed-hdfs-fetch
// (cmd/yarnfed-hdfs-fetch), run once per resource: the HDFS client it
// links cannot be linked into this one (DESIGN.md, "Launcher"). The
// launcher keeps every decision it makes for the other schemes (where the
// file goes, the bounds, unpacking, permissions); the fetcher only checks
// FSDownload's rule against the NameNode's status and copies the bytes.

// remoteFetcher fetches one resource described by a fetchwire.Request and
// returns the fetcher's report; an error means no report could be had
// (the fetcher is missing, crashed or printed something else).
type remoteFetcher interface {
	Fetch(ctx context.Context, req fetchwire.Request) (fetchwire.Report, error)
}

// DefaultFetchTimeout bounds one hdfs:// fetch when Limits.FetchTimeout is
// zero: 8 GiB (the default per-resource bound) at ~5 MB/s.
const DefaultFetchTimeout = 30 * time.Minute

// fetcherKillSlack: the fetcher enforces its own --timeout; past it by
// this much the launcher kills it.
const fetcherKillSlack = 30 * time.Second

// execFetcher runs the yarnfed-hdfs-fetch binary.
type execFetcher struct {
	path      string        // the binary; "" = not installed
	env       []string      // the container's environment (HADOOP_CONF_DIR for HA nameservices)
	killSlack time.Duration // 0: fetcherKillSlack
}

// fetcherBeside is the fetcher's path beside the running launcher (both
// are installed into the same directory), or "" when it is not there.
func fetcherBeside() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(self), fetchwire.BinaryName)
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	return p
}

// capped keeps the first n bytes written to it and counts the rest.
type capped struct {
	buf     bytes.Buffer
	n       int
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	keep := min(len(p), c.n-c.buf.Len())
	c.buf.Write(p[:keep])
	c.dropped += len(p) - keep
	return len(p), nil
}

func (e execFetcher) Fetch(ctx context.Context, req fetchwire.Request) (fetchwire.Report, error) {
	if e.path == "" {
		return fetchwire.Report{}, fmt.Errorf("%s is not installed beside the launcher (the image must carry it; DESIGN.md \"Launcher\")", fetchwire.BinaryName)
	}
	slack := e.killSlack
	if slack <= 0 {
		slack = fetcherKillSlack
	}
	ctx, cancel := context.WithTimeout(ctx, req.Timeout+slack)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.path, req.Args()...)
	cmd.Env = e.env
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second // then SIGKILL
	stdout := &capped{n: fetchwire.MaxReportBytes}
	stderr := &capped{n: 4096}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	rep, derr := fetchwire.DecodeReport(stdout.buf.Bytes())
	if stdout.dropped > 0 {
		derr = fmt.Errorf("%w: more than %d bytes", fetchwire.ErrBadReport, fetchwire.MaxReportBytes)
	}
	if derr == nil && (err == nil) == (rep.Status == fetchwire.StatusOK) {
		return rep, nil
	}
	var why string
	switch {
	case ctx.Err() != nil:
		why = fmt.Sprintf("stopped after %v", req.Timeout+slack)
	case err != nil:
		why = err.Error()
	default:
		why = "exited 0"
	}
	if derr == nil {
		derr = fmt.Errorf("%w: status %q", fetchwire.ErrBadReport, rep.Status)
	}
	return fetchwire.Report{}, fmt.Errorf("%s: %s; %v; stderr: %q", fetchwire.BinaryName, why, derr,
		strings.TrimSpace(stderr.buf.String()))
}

// fetchHDFS has an hdfs:// resource fetched to `to` (a file, or a
// directory tree) and turns the fetcher's report into the launcher's
// errors: FSDownload's "changed on src filesystem" as for file://.
func (l *localizer) fetchHDFS(ctx context.Context, r Resource, to string) error {
	if l.user == "" {
		return fmt.Errorf("%w: %s: no user to fetch as (USER is not set in the pod)", ErrLocalize, r.URL)
	}
	timeout := l.lim.FetchTimeout
	if timeout <= 0 {
		timeout = DefaultFetchTimeout
	}
	left := min(l.lim.ResourceBytes, max(l.lim.TotalBytes-l.total, 0))
	if left <= 0 {
		return fmt.Errorf("%w: %s: the launcher's total bound of %d bytes is used up", ErrLocalize, r.URL, l.lim.TotalBytes)
	}
	src := url.URL{Scheme: "hdfs", Host: r.Host, Path: r.File} // escaped: a file name may hold '?', '#' or '%'
	req := fetchwire.Request{URL: src.String(), User: l.user, Dest: to, Size: max(r.Size, 0), Timestamp: r.Timestamp,
		MaxBytes: left, MaxEntries: l.lim.ArchiveEntries, Timeout: timeout}
	if err := req.Check(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrLocalize, r.URL, err)
	}
	rep, err := l.fetcher.Fetch(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrLocalize, r.URL, err)
	}
	switch rep.Status {
	case fetchwire.StatusChanged:
		if rep.What == fetchwire.WhatTimestamp {
			return changed(r, "timestamp", isoMillis(rep.Expected), isoMillis(rep.Found))
		}
		return changed(r, "size", rep.Expected, rep.Found)
	case fetchwire.StatusFailed:
		return fmt.Errorf("%w: %s: %s (%s)", ErrLocalize, r.URL, rep.Message, rep.Kind)
	}
	// What the launcher's bounds depend on is checked on disk, not taken
	// from the report: the bytes and files written, within the bound given.
	n, files, err := diskUsage(to, l.lim.ArchiveEntries)
	if err != nil {
		return fmt.Errorf("%w: %s: after the fetch: %v", ErrLocalize, r.URL, err)
	}
	if n != rep.Bytes || files != rep.Files || n > left {
		return fmt.Errorf("%w: %s: the fetcher reported %d bytes in %d files, %d bytes in %d files are on disk (bound %d)",
			ErrLocalize, r.URL, rep.Bytes, rep.Files, n, files, left)
	}
	l.total += n
	return nil
}

var errNotPlain = errors.New("neither a file nor a directory")

// diskUsage sums the sizes of the regular files under root (root itself
// may be one) and counts them; anything but files and directories, or
// more than maxEntries entries below root, is an error.
func diskUsage(root string, maxEntries int) (int64, int, error) {
	var n int64
	files, entries := 0, 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entries++; entries > maxEntries+1 { // root itself is not an entry
			return fmt.Errorf("more than %d entries", maxEntries)
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: %w", p, errNotPlain)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		files++
		return nil
	})
	return n, files, err
}
