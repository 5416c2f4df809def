// Package hdfsfetch is yarnfed-hdfs-fetch's work: fetch one hdfs:// local
// resource (a file, or a directory tree as YARN localizes directories) with
// colinmarc/hdfs, after FSDownload's check that the source is what the
// launch context recorded, within a byte, entry and time bound. It must
// never be linked into the yarnfed binary (colinmarc/hdfs's hadoop.common
// protos conflict with internal/yarnpb's at init); the launcher runs it as
// a process and reads its fetchwire.Report.
package hdfsfetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"strings"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/colinmarc/hdfs/v2/hadoopconf"

	"github.com/yarnfed/yarnfed/kuberm/launch/fetchwire"
)

// DefaultPort is the NameNode's RPC port when the URL names none and no
// HA nameservice of that name is configured (Hadoop's 8020).
const DefaultPort = "8020"

// listBatch is how many directory entries one listing call asks for (the
// NameNode answers at most dfs.ls.limit, 1000 by default, anyway).
const listBatch = 1000

// failure is a fetch that ends with a report other than ok.
type failure struct{ rep fetchwire.Report }

func (f *failure) Error() string { return f.rep.Kind + ": " + f.rep.Message }

func fail(kind, format string, a ...any) error {
	return &failure{fetchwire.Report{Status: fetchwire.StatusFailed, Kind: kind, Message: fmt.Sprintf(format, a...)}}
}

// Fetch does req and reports how it went. hadoopConfDir, when not empty,
// is read for HA nameservices (dfs.ha.namenodes.*) and the security
// setting; env HADOOP_CONF_DIR is what the container sees.
func Fetch(ctx context.Context, req fetchwire.Request, hadoopConfDir string) fetchwire.Report {
	if err := req.Check(); err != nil {
		return fetchwire.Report{Status: fetchwire.StatusFailed, Kind: fetchwire.KindUsage, Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	f := &fetcher{req: req, ctx: ctx}
	f.deadline, _ = ctx.Deadline()
	rep, err := f.run(hadoopConfDir)
	if err != nil {
		if f.created {
			os.RemoveAll(req.Dest) // a half fetch is no result; never what was there before
		}
		var fl *failure
		switch {
		case errors.As(err, &fl):
			return fl.rep
		case errors.Is(ctx.Err(), context.Canceled):
			return fetchwire.Report{Status: fetchwire.StatusFailed, Kind: fetchwire.KindIO, Message: fmt.Sprintf("%s: stopped: %v", req.URL, err)}
		case f.timedOut(err):
			return fetchwire.Report{Status: fetchwire.StatusFailed, Kind: fetchwire.KindTimeout,
				Message: fmt.Sprintf("%s: not done after %v: %v", req.URL, req.Timeout, err)}
		}
		return fetchwire.Report{Status: fetchwire.StatusFailed, Kind: fetchwire.KindIO, Message: err.Error()}
	}
	return rep
}

type fetcher struct {
	req      fetchwire.Request
	ctx      context.Context
	deadline time.Time
	client   *hdfs.Client
	created  bool // Dest was created by this fetch
	bytes    int64
	files    int
	entries  int
}

// timedOut: the fetch's deadline has passed (the connections' deadlines
// are the context's, so a read may fail on it a moment before ctx says).
func (f *fetcher) timedOut(err error) bool {
	var ne net.Error
	return f.ctx.Err() != nil || !time.Now().Before(f.deadline) || (errors.As(err, &ne) && ne.Timeout())
}

// dial connects within the fetch's context and puts its deadline on the
// connection, so no NameNode or DataNode read outlives the timeout.
func (f *fetcher) dial(_ context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(f.ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if err := c.SetDeadline(f.deadline); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// namenodes resolves the URL's authority: host:port as given; a bare name
// that the Hadoop configuration declares as an HA nameservice, its
// NameNodes' RPC addresses; else host:8020.
func namenodes(authority string, conf hadoopconf.HadoopConf) []string {
	if _, _, err := net.SplitHostPort(authority); err == nil {
		return []string{authority}
	}
	if ids := conf["dfs.ha.namenodes."+authority]; ids != "" {
		var out []string
		for _, id := range strings.Split(ids, ",") {
			if a := conf["dfs.namenode.rpc-address."+authority+"."+strings.TrimSpace(id)]; a != "" {
				out = append(out, a)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return []string{net.JoinHostPort(authority, DefaultPort)}
}

func (f *fetcher) run(hadoopConfDir string) (fetchwire.Report, error) {
	authority, file, err := fetchwire.SplitURL(f.req.URL)
	if err != nil {
		return fetchwire.Report{}, fail(fetchwire.KindUsage, "%v", err)
	}
	conf := hadoopconf.HadoopConf{}
	if hadoopConfDir != "" {
		if conf, err = hadoopconf.Load(hadoopConfDir); err != nil {
			return fetchwire.Report{}, fail(fetchwire.KindUsage, "reading the Hadoop configuration in %s: %v", hadoopConfDir, err)
		}
	}
	if auth := strings.ToLower(conf["hadoop.security.authentication"]); auth != "" && auth != "simple" {
		return fetchwire.Report{}, fail(fetchwire.KindPermission,
			"hadoop.security.authentication is %q in %s: %s fetches with SIMPLE authentication only (no Kerberos login or HDFS delegation token in a container; kuberm/DESIGN.md)",
			auth, hadoopConfDir, fetchwire.BinaryName)
	}
	addrs := namenodes(authority, conf)
	f.client, err = hdfs.NewClient(hdfs.ClientOptions{
		Addresses:           addrs,
		User:                f.req.User,
		UseDatanodeHostname: conf["dfs.client.use.datanode.hostname"] == "true",
		NamenodeDialFunc:    f.dial,
		DatanodeDialFunc:    f.dial,
	})
	if err != nil {
		if f.timedOut(err) {
			return fetchwire.Report{}, err // reported as the timeout
		}
		return fetchwire.Report{}, fail(fetchwire.KindUnreachable, "no NameNode reachable at %s for %s: %v", strings.Join(addrs, ","), f.req.URL, err)
	}
	defer f.client.Close()

	st, err := f.client.Stat(file)
	if err != nil {
		return fetchwire.Report{}, f.remote(err, "getFileInfo", file)
	}
	mtime := st.ModTime().UnixMilli()
	if mtime != f.req.Timestamp {
		return fetchwire.Report{Status: fetchwire.StatusChanged, What: fetchwire.WhatTimestamp, Expected: f.req.Timestamp, Found: mtime}, nil
	}
	if st.IsDir() {
		if err := os.Mkdir(f.req.Dest, 0o700); err != nil {
			return fetchwire.Report{}, err
		}
		f.created = true
		root, err := os.OpenRoot(f.req.Dest)
		if err != nil {
			return fetchwire.Report{}, err
		}
		defer root.Close()
		if err := f.copyDir(root, file, "."); err != nil {
			return fetchwire.Report{}, err
		}
		return fetchwire.Report{Status: fetchwire.StatusOK, Bytes: f.bytes, Files: f.files, Dir: true, ModTime: mtime}, nil
	}
	if !st.Mode().IsRegular() {
		return fetchwire.Report{}, fail(fetchwire.KindUnsupported, "%s is neither a file nor a directory", f.req.URL)
	}
	if f.req.Size > 0 && st.Size() != f.req.Size {
		return fetchwire.Report{Status: fetchwire.StatusChanged, What: fetchwire.WhatSize, Expected: f.req.Size, Found: st.Size()}, nil
	}
	out, err := os.OpenFile(f.req.Dest, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fetchwire.Report{}, err
	}
	f.created = true
	if err := f.copyFile(out, file, st.Size()); err != nil {
		return fetchwire.Report{}, err
	}
	return fetchwire.Report{Status: fetchwire.StatusOK, Bytes: f.bytes, Files: f.files, ModTime: mtime}, nil
}

// remote turns an HDFS client error into a failure in HDFS's terms.
func (f *fetcher) remote(err error, op, file string) error {
	var ne net.Error
	switch {
	case f.timedOut(err):
		return err // the timeout
	case errors.Is(err, os.ErrNotExist):
		return fail(fetchwire.KindNotFound, "java.io.FileNotFoundException: File does not exist: %s (%s)", file, op)
	case errors.Is(err, os.ErrPermission):
		return fail(fetchwire.KindPermission, "org.apache.hadoop.security.AccessControlException: %s %s as user %s: permission denied (or the NameNode refused SIMPLE authentication)",
			op, file, f.req.User)
	case errors.As(err, &ne):
		return fail(fetchwire.KindUnreachable, "%s %s: %v", op, file, err)
	}
	var he hdfs.Error
	if errors.As(err, &he) {
		return fail(fetchwire.KindIO, "%s: %s", he.Exception(), firstLine(he.Message()))
	}
	return fail(fetchwire.KindIO, "%s %s: %v", op, file, err)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// copyFile reads the HDFS file into out (closed here), at most the bytes
// left of MaxBytes, and insists on exactly size bytes.
func (f *fetcher) copyFile(out *os.File, file string, size int64) error {
	defer out.Close()
	left := f.req.MaxBytes - f.bytes
	if size > left {
		return fail(fetchwire.KindTooLarge, "%s: %d bytes, more than the %d allowed (the launcher's bound)", file, size, left)
	}
	in, err := f.client.Open(file)
	if err != nil {
		return f.remote(err, "open", file)
	}
	defer in.Close()
	if err := in.SetDeadline(f.deadline); err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(in, left+1))
	f.bytes += n
	if err != nil {
		return f.remote(err, "read", file)
	}
	if n > left {
		return fail(fetchwire.KindTooLarge, "%s: more than the %d bytes allowed (it grew while read)", file, left)
	}
	if n != size {
		return fail(fetchwire.KindIO, "%s: read %d bytes of %d (changed while read)", file, n, size)
	}
	f.files++
	return out.Close()
}

// copyDir copies the HDFS directory dir into root at rel, recursively.
func (f *fetcher) copyDir(root *os.Root, dir, rel string) error {
	d, err := f.client.Open(dir)
	if err != nil {
		return f.remote(err, "open", dir)
	}
	defer d.Close()
	for {
		batch, err := d.Readdir(listBatch)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return f.remote(err, "getListing", dir)
		}
		for _, fi := range batch {
			name := fi.Name()
			if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
				return fail(fetchwire.KindIO, "%s: the NameNode listed an entry named %q", dir, name)
			}
			if f.entries++; f.entries > f.req.MaxEntries {
				return fail(fetchwire.KindTooLarge, "%s: more than %d files and directories (the launcher's bound)", f.req.URL, f.req.MaxEntries)
			}
			src, dst := path.Join(dir, name), path.Join(rel, name)
			switch {
			case fi.IsDir():
				if err := root.Mkdir(dst, 0o700); err != nil {
					return err
				}
				if err := f.copyDir(root, src, dst); err != nil {
					return err
				}
			case fi.Mode().IsRegular() && !isSymlink(fi):
				out, err := root.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
				if err != nil {
					return err
				}
				if err := f.copyFile(out, src, fi.Size()); err != nil {
					return err
				}
			default:
				return fail(fetchwire.KindUnsupported, "%s: %s is a symbolic link or special file (not localized)", f.req.URL, dst)
			}
		}
	}
}

// isSymlink: colinmarc/hdfs reports a symbolic link with a regular mode;
// the NameNode's status says IS_SYMLINK.
func isSymlink(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*hdfs.FileStatus)
	return ok && st.GetFileType().String() == "IS_SYMLINK"
}
