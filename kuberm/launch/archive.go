package launch

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Unpacking ARCHIVE and PATTERN resources. Every write goes through an
// os.Root opened on the destination, so no entry name and no symbolic link
// an archive planted earlier can make the launcher write outside it
// ("zip-slip"); names that try are refused outright with ErrUnsafeEntry,
// before the Root would refuse them too. Entries and bytes are bounded
// (Limits.ArchiveEntries, Limits.UnpackedBytes) against archive bombs.

// ErrUnsafeEntry: an archive entry (or a link target in it) that is
// absolute or leaves the directory it is unpacked into.
var ErrUnsafeEntry = errors.New("archive entry escapes its directory")

type unpacker struct {
	root    *os.Root
	lim     Limits
	entries int
	bytes   int64
}

func newUnpacker(dst string, lim Limits) (*unpacker, error) {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return nil, err
	}
	return &unpacker{root: root, lim: lim}, nil
}

// entryName checks an entry's name and returns it cleaned ("" for the
// archive's root directory itself).
func entryName(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 || path.IsAbs(name) || strings.HasPrefix(name, `\`) {
		return "", fmt.Errorf("%w: %q", ErrUnsafeEntry, truncate(name))
	}
	clean := path.Clean(name)
	if clean == "." {
		return "", nil
	}
	if !filepath.IsLocal(clean) {
		return "", fmt.Errorf("%w: %q", ErrUnsafeEntry, truncate(name))
	}
	return clean, nil
}

func (u *unpacker) count() error {
	if u.entries++; u.entries > u.lim.ArchiveEntries {
		return fmt.Errorf("more than %d entries", u.lim.ArchiveEntries)
	}
	return nil
}

func (u *unpacker) mkdir(name string) error {
	if name == "" {
		return nil
	}
	return u.root.MkdirAll(name, 0o700)
}

func (u *unpacker) file(name string, mode os.FileMode, r io.Reader) error {
	if err := u.mkdir(path.Dir(name)); err != nil && path.Dir(name) != "." {
		return err
	}
	f, err := u.root.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600|mode.Perm())
	if err != nil {
		return err
	}
	left := u.lim.UnpackedBytes - u.bytes
	n, err := io.Copy(f, io.LimitReader(r, left+1))
	u.bytes += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > left {
		err = fmt.Errorf("unpacks to more than %d bytes", u.lim.UnpackedBytes)
	}
	return err
}

// link creates a symbolic link whose target, resolved from the link's
// directory, stays inside the destination.
func (u *unpacker) symlink(name, target string) error {
	if target == "" || path.IsAbs(target) || !filepath.IsLocal(path.Join(path.Dir(name), target)) {
		return fmt.Errorf("%w: link %q -> %q", ErrUnsafeEntry, truncate(name), truncate(target))
	}
	if err := u.mkdir(path.Dir(name)); err != nil && path.Dir(name) != "." {
		return err
	}
	return u.root.Symlink(target, name)
}

// unzip unpacks a zip or jar; with match, only the entries whose whole
// name matches (RunJar's PATTERN unpacking).
func unzip(src, dst string, match *regexp.Regexp, lim Limits) error {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return err
	}
	defer zr.Close()
	if len(zr.File) > lim.ArchiveEntries {
		return fmt.Errorf("%d entries, at most %d", len(zr.File), lim.ArchiveEntries)
	}
	u, err := newUnpacker(dst, lim)
	if err != nil {
		return err
	}
	defer u.root.Close()
	for _, f := range zr.File {
		name, err := entryName(f.Name)
		if err != nil {
			return err
		}
		if err := u.count(); err != nil {
			return err
		}
		if name == "" || (match != nil && !match.MatchString(f.Name)) {
			continue
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			err = u.mkdir(name)
		case mode&os.ModeSymlink != 0:
			err = fmt.Errorf("%w: symbolic link %q in a zip archive", ErrUnsafeEntry, truncate(f.Name))
		default:
			err = u.unzipFile(f, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (u *unpacker) unzipFile(f *zip.File, name string) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	return u.file(name, f.Mode(), rc)
}

// untar unpacks a tar (gzipped when gz): files, directories, and links
// that stay inside; device nodes and FIFOs are skipped (a container user
// could not create them either).
func untar(src, dst string, gz bool, lim Limits) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	var in io.Reader = f
	if gz {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		defer zr.Close()
		in = zr
	}
	u, err := newUnpacker(dst, lim)
	if err != nil {
		return err
	}
	defer u.root.Close()
	tr := tar.NewReader(in)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name, err := entryName(h.Name)
		if err != nil {
			return err
		}
		if err := u.count(); err != nil {
			return err
		}
		if name == "" {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = u.mkdir(name)
		case tar.TypeReg: // the reader reports old archives' NUL type as TypeReg too
			err = u.file(name, h.FileInfo().Mode(), tr)
		case tar.TypeSymlink:
			err = u.symlink(name, h.Linkname)
		case tar.TypeLink:
			var old string
			if old, err = entryName(h.Linkname); err == nil {
				if old == "" {
					err = fmt.Errorf("%w: hard link %q to the archive's root", ErrUnsafeEntry, truncate(h.Name))
				} else if err = u.mkdir(path.Dir(name)); err == nil || path.Dir(name) == "." {
					err = u.root.Link(old, name)
				}
			}
		}
		if err != nil {
			return err
		}
	}
}
