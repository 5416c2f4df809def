package launch

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/yarnfed/yarnfed/kuberm/launch/fetchwire"
)

// InstallName is the launcher's file name in the install directory.
const InstallName = "yarnfed"

// Install copies the running executable to dir/yarnfed with mode 0755, and
// the HDFS fetcher (yarnfed-hdfs-fetch) beside it to dir/yarnfed-hdfs-fetch
// when the image carries one: the init container's job, so the runtime
// image (the operator's, with a JDK and a shell) runs the launcher from the
// shared emptyDir. Each copy is written under a temporary name and renamed,
// so the main container never sees half a binary. It returns the installed
// paths; without a fetcher, hdfs:// resources fail to localize with a
// message saying so.
func Install(dir string) ([]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: locating the launcher's executable: %v", ErrLaunch, err)
	}
	return installBeside(self, dir)
}

// installBeside installs self as the launcher and the fetcher found beside
// self, if any.
func installBeside(self, dir string) ([]string, error) {
	dst, err := InstallFrom(self, dir)
	if err != nil {
		return nil, err
	}
	out := []string{dst}
	if fetcher := filepath.Join(filepath.Dir(self), fetchwire.BinaryName); fileExists(fetcher) {
		if dst, err = installFile(fetcher, filepath.Join(dir, fetchwire.BinaryName)); err != nil {
			return nil, err
		}
		out = append(out, dst)
	}
	return out, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// InstallFrom copies src to dir/yarnfed (0755).
func InstallFrom(src, dir string) (string, error) {
	return installFile(src, filepath.Join(dir, InstallName))
}

// installFile copies src to dst (0755) through a temporary file and a rename.
func installFile(src, dst string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	defer in.Close()
	dir := filepath.Dir(dst)
	tmp, err := os.CreateTemp(dir, ".yarnfed-*")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing to remove
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return "", fmt.Errorf("%w: copying %s: %v", ErrLaunch, src, err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return "", fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	return dst, nil
}
