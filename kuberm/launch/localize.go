package launch

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// Localization, as the NodeManager's FSDownload does it, one container at
// a time: each resource is fetched into <cache>/<n>_tmp/<name>, checked
// against what the launch context recorded, then moved (FILE) or unpacked
// (ARCHIVE, PATTERN) to <cache>/<n>/<name>, made read-only, and linked
// into the working directory under its key. <name> is the last element
// of the source path, so a resource keeps its file name in the cache
// whatever its link is called.

type localizer struct {
	cache   string // <first LOCAL_DIR>/filecache
	lim     Limits
	client  *http.Client
	fetcher remoteFetcher // hdfs://
	user    string        // the container's user (USER): whom the NameNode sees
	log     *slog.Logger
	seq     int
	total   int64 // bytes fetched so far, against lim.TotalBytes
}

// localize fetches r and returns the path its link must point at.
func (l *localizer) localize(ctx context.Context, r Resource) (string, error) {
	l.seq++
	dst := filepath.Join(l.cache, strconv.Itoa(l.seq))
	tmp := dst + "_tmp"
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return "", fmt.Errorf("%w: %v", ErrLocalize, err)
	}
	defer os.RemoveAll(tmp)
	name := path.Base(r.File)
	fetched := filepath.Join(tmp, name)
	var err error
	switch r.Scheme {
	case "file":
		err = l.fetchFile(r, fetched)
	case "http", "https":
		err = l.fetchHTTP(ctx, r, fetched)
	case "hdfs":
		err = l.fetchHDFS(ctx, r, fetched)
	default:
		err = fmt.Errorf("%w: %s (resource %q: %s); the launcher fetches file://, http://, https:// and hdfs:// only",
			ErrUnsupportedScheme, r.Scheme, r.Link, r.URL)
	}
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return "", fmt.Errorf("%w: %v", ErrLocalize, err)
	}
	out := filepath.Join(dst, name)
	if err := l.place(r, fetched, out); err != nil {
		return "", err
	}
	if err := makeReadOnly(out); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrLocalize, r.URL, err)
	}
	return out, nil
}

// archiveKind names how a file is unpacked, by its name as FSDownload
// decides it.
func archiveKind(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".jar"):
		return "jar"
	case strings.HasSuffix(n, ".zip"):
		return "zip"
	case strings.HasSuffix(n, ".tar.gz"), strings.HasSuffix(n, ".tgz"):
		return "tgz"
	case strings.HasSuffix(n, ".tar"):
		return "tar"
	}
	return ""
}

// place moves or unpacks the fetched file to out. A directory is moved
// whatever the resource's type, as FSDownload copies a directory and
// unpacks only files.
func (l *localizer) place(r Resource, fetched, out string) error {
	kind := archiveKind(fetched)
	st, err := os.Lstat(fetched)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrLocalize, err)
	}
	if st.IsDir() {
		return rename(fetched, out)
	}
	if r.Type == yarnpb.LocalResourceTypeProto_FILE || kind == "" {
		if r.Type != yarnpb.LocalResourceTypeProto_FILE {
			l.log.Warn("cannot unpack, localized as a file", "resource", r.URL, "type", r.Type.String())
		}
		return rename(fetched, out)
	}
	var match *regexp.Regexp
	if r.Type == yarnpb.LocalResourceTypeProto_PATTERN {
		if kind == "jar" {
			re, err := regexp.Compile("^(?:" + r.Pattern + ")$")
			if err != nil {
				return fmt.Errorf("%w: resource %q: pattern %q: %v", ErrBadContext, r.Link, r.Pattern, err)
			}
			match = re
		} else {
			l.log.Warn("treating a PATTERN resource as an archive", "resource", r.URL)
		}
	}
	if err := os.Mkdir(out, 0o700); err != nil {
		return fmt.Errorf("%w: %v", ErrLocalize, err)
	}
	switch kind {
	case "jar", "zip":
		err = unzip(fetched, out, match, l.lim)
	default:
		err = untar(fetched, out, kind == "tgz", l.lim)
	}
	if err != nil {
		return fmt.Errorf("%w: unpacking %s: %w", ErrLocalize, r.URL, err)
	}
	if match != nil { // a PATTERN jar is kept beside what it unpacked
		return rename(fetched, filepath.Join(out, filepath.Base(fetched)))
	}
	return nil
}

func rename(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("%w: %v", ErrLocalize, err)
	}
	return nil
}

// changed is FSDownload's refusal of a resource whose source is not what
// the AM recorded when it built the launch context.
func changed(r Resource, what string, want, got any) error {
	return fmt.Errorf("%w: resource %s changed on src filesystem: %s expected %v, was %v",
		ErrLocalize, r.URL, what, want, got)
}

func isoMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// fetchFile copies a file:// resource (a file or a directory tree) after
// checking its modification time (ms, always, as FSDownload does) and,
// for a file, its size when one was given.
func (l *localizer) fetchFile(r Resource, to string) error {
	st, err := os.Stat(r.File)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrLocalize, r.URL, err)
	}
	if got := st.ModTime().UnixMilli(); got != r.Timestamp {
		return changed(r, "timestamp", isoMillis(r.Timestamp), isoMillis(got))
	}
	if !st.IsDir() {
		if r.Size > 0 && st.Size() != r.Size {
			return changed(r, "size", r.Size, st.Size())
		}
		return l.copyFile(r, r.File, to)
	}
	entries := 0
	return filepath.WalkDir(r.File, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrLocalize, r.URL, err)
		}
		if entries++; entries > l.lim.ArchiveEntries {
			return fmt.Errorf("%w: %s: more than %d files", ErrLocalize, r.URL, l.lim.ArchiveEntries)
		}
		rel, _ := filepath.Rel(r.File, p)
		target := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o700)
		case d.Type().IsRegular():
			return l.copyFile(r, p, target)
		}
		return fmt.Errorf("%w: %s: %s is neither a file nor a directory", ErrLocalize, r.URL, rel)
	})
}

func (l *localizer) copyFile(r Resource, from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrLocalize, r.URL, err)
	}
	defer in.Close()
	_, err = l.store(r, in, to, l.lim.ResourceBytes)
	return err
}

// store writes at most limit bytes of in to a new file, against the total
// bound too, and returns how many it wrote.
func (l *localizer) store(r Resource, in io.Reader, to string, limit int64) (int64, error) {
	if left := max(l.lim.TotalBytes-l.total, 0); left < limit {
		limit = left
	}
	f, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrLocalize, err)
	}
	n, err := io.Copy(f, io.LimitReader(in, limit+1))
	l.total += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("%w: %s: %v", ErrLocalize, r.URL, err)
	}
	if n > limit {
		return n, fmt.Errorf("%w: %s: more than %d bytes (the declared size or the launcher's bound)", ErrLocalize, r.URL, limit)
	}
	return n, nil
}

// fetchHTTP downloads an http(s):// resource. Its size, when the launch
// context gives one, bounds the download and must match exactly (so does a
// Content-Length). The timestamp is not compared: Hadoop's HTTP file
// system reports none (0), so there is nothing the AM could have recorded.
func (l *localizer) fetchHTTP(ctx context.Context, r Resource, to string) error {
	u := url.URL{Scheme: r.Scheme, Host: r.Host, Path: r.File}
	if r.UserInfo != "" {
		user, pass, hasPass := strings.Cut(r.UserInfo, ":")
		u.User = url.User(user)
		if hasPass {
			u.User = url.UserPassword(user, pass)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrLocalize, r.URL, err)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrLocalize, r.URL, redact(err, r))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s: HTTP %s", ErrLocalize, r.URL, resp.Status)
	}
	limit := l.lim.ResourceBytes
	if r.Size > 0 {
		if resp.ContentLength >= 0 && resp.ContentLength != r.Size {
			return changed(r, "size", r.Size, resp.ContentLength)
		}
		limit = min(limit, r.Size)
	}
	n, err := l.store(r, resp.Body, to, limit)
	if err != nil {
		return err
	}
	if r.Size > 0 && n != r.Size {
		return changed(r, "size", r.Size, n)
	}
	return nil
}

// redact keeps a password of the URL's user info out of messages.
func redact(err error, r Resource) string {
	s := err.Error()
	if r.UserInfo != "" {
		s = strings.ReplaceAll(s, r.UserInfo, "***")
		if _, pass, ok := strings.Cut(r.UserInfo, ":"); ok && pass != "" {
			s = strings.ReplaceAll(s, url.PathEscape(pass), "***")
		}
	}
	return s
}

// makeReadOnly gives what was localized FSDownload's private permissions:
// files r-x, directories rwx, for the owner only. Links are left alone.
func makeReadOnly(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return nil
		case d.IsDir():
			return os.Chmod(p, 0o700)
		}
		return os.Chmod(p, 0o500)
	})
}
