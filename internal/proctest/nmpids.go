package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NMContainerPids maps each live container under a NodeManager's local
// dir to its pid, by the pid files the NodeManager writes
// (nmPrivate/<app>/<container>/<container>.pid). DefaultContainerExecutor
// starts each container in a session of its own, so the pid is also the
// process group. A pid counts only while its process's environment names
// that container (CONTAINER_ID): a process that is gone, or a pid reused
// by another process, is not the container. Linux only (/proc).
func NMContainerPids(dir string) map[string]int {
	out := map[string]int{}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".pid") || !strings.Contains(p, "nmPrivate") {
			return nil
		}
		container := strings.TrimSuffix(d.Name(), ".pid")
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			return nil
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !strings.Contains(string(env), "CONTAINER_ID="+container+"\x00") {
			return nil
		}
		out[container] = pid
		return nil
	})
	return out
}
