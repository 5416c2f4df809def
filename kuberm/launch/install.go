package launch

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// InstallName is the launcher's file name in the install directory.
const InstallName = "yarnfed"

// Install copies the running executable to dir/yarnfed with mode 0755: the
// init container's job, so the runtime image (the operator's, with a JDK
// and a shell) runs the launcher from the shared emptyDir. The copy is
// written under a temporary name and renamed, so the main container never
// sees half a binary.
func Install(dir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("%w: locating the launcher's executable: %v", ErrLaunch, err)
	}
	return InstallFrom(self, dir)
}

// InstallFrom copies src to dir/yarnfed (0755).
func InstallFrom(src, dir string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	defer in.Close()
	dst := filepath.Join(dir, InstallName)
	tmp, err := os.CreateTemp(dir, ".yarnfed-*")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing to remove
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return "", fmt.Errorf("%w: copying the launcher: %v", ErrLaunch, err)
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
