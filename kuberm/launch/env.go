package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The container's environment and launch script, as a NodeManager writes
// launch_container.sh: the variables the NodeManager sets (forced: a launch
// context cannot replace them), then the launch context's own in an order
// where each comes after the variables it refers to, then
// `exec /bin/bash -c "<commands joined by spaces>"`. The pod's environment
// (the runtime image's, kuberm's NodeManager variables and the operator's
// whitelist) is the script's inherited environment, so a launch context
// variable of the same name replaces a whitelisted one, as the
// NodeManager's `export X=${X:-...}` lets it.

// nmVars are the variables a NodeManager forces, in the order it writes
// them (ContainerLaunch.sanitizeEnv, after HADOOP_TOKEN_FILE_LOCATION).
var nmVars = []string{
	"HADOOP_TOKEN_FILE_LOCATION", "CONTAINER_ID", "NM_PORT", "NM_HOST", "NM_HTTP_PORT", "LOCAL_DIRS",
	"LOCAL_USER_DIRS", "LOG_DIRS", "USER", "LOGNAME", "HOME", "PWD", "JVM_PID",
}

var isNMVar = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range nmVars {
		m[v] = true
	}
	return m
}()

// addOpensJava17 is what <ADD_OPENS> becomes when the container's Java is
// 17 or later (Hadoop 3.4's NodeManager, for its own Java version).
const addOpensJava17 = "--add-opens=java.base/java.lang=ALL-UNNAMED " +
	"--add-exports=java.base/sun.net.dns=ALL-UNNAMED --add-exports=java.base/sun.net.util=ALL-UNNAMED"

// Expand applies the NodeManager's expansions to a command word or an
// environment value: <LOG_DIR> -> the container's log directory, <CPS> ->
// ':', <ADD_OPENS> -> addOpens, and {{VAR}} -> $VAR (the script's shell
// then expands it).
func Expand(s, logDir, addOpens string) string {
	s = strings.ReplaceAll(s, "<LOG_DIR>", logDir)
	s = strings.ReplaceAll(s, "<CPS>", ":")
	s = strings.ReplaceAll(s, "<ADD_OPENS>", addOpens)
	s = strings.ReplaceAll(s, "{{", "$")
	return strings.ReplaceAll(s, "}}", "")
}

// javaMajor reads the major version from $JAVA_HOME/release
// (JAVA_VERSION="17.0.9", or "1.8.0_392" for Java 8); 0 if unknown.
func javaMajor(javaHome string) int {
	if javaHome == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(javaHome, "release"))
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`(?m)^JAVA_VERSION="(\d+)(?:\.(\d+))?`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	var major, minor int
	fmt.Sscan(string(m[1]), &major)
	if major == 1 && len(m[2]) > 0 {
		fmt.Sscan(string(m[2]), &minor)
		return minor
	}
	return major
}

var varRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

// orderByDependencies puts each variable after the launch context's
// variables its value refers to ($X or ${X}), keeping the given order
// otherwise; a cycle keeps the given order for its members.
func orderByDependencies(env []EnvVar) []EnvVar {
	index := map[string]int{}
	for i, e := range env {
		index[e.Name] = i
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := make([]int, len(env))
	out := make([]EnvVar, 0, len(env))
	var visit func(i int)
	visit = func(i int) {
		if state[i] != unseen {
			return
		}
		state[i] = visiting
		for _, m := range varRef.FindAllStringSubmatch(env[i].Value, -1) {
			if j, ok := index[m[1]]; ok && j != i {
				visit(j)
			}
		}
		state[i] = done
		out = append(out, env[i])
	}
	for i := range env {
		visit(i)
	}
	return out
}

// quoteLiteral makes a value the launcher computed safe inside double
// quotes (the launch context's own values are not quoted: their $VAR must
// expand, as on a NodeManager).
func quoteLiteral(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`")
	return `"` + r.Replace(s) + `"`
}

// script is what the launcher writes to launch_container.sh.
type script struct {
	logDir   string      // PRELAUNCH_OUT/ERR go there
	nm       []EnvVar    // forced, literal values
	app      []EnvVar    // the launch context's, expanded, ordered
	commands []string    // expanded
	links    [][2]string // link -> target, for the record (already made)
}

func (s *script) String() string {
	var b strings.Builder
	line := func(parts ...string) { b.WriteString(strings.Join(parts, "") + "\n") }
	line("#!/bin/bash")
	line()
	line("set -o pipefail -e")
	line("export PRELAUNCH_OUT=", quoteLiteral(filepath.Join(s.logDir, "prelaunch.out")))
	line(`exec >"${PRELAUNCH_OUT}"`)
	line("export PRELAUNCH_ERR=", quoteLiteral(filepath.Join(s.logDir, "prelaunch.err")))
	line(`exec 2>"${PRELAUNCH_ERR}"`)
	line(`echo "Setting up env variables"`)
	for _, e := range s.nm {
		if e.Name == "JVM_PID" {
			line(`export JVM_PID="$$"`)
			continue
		}
		line("export ", e.Name, "=", quoteLiteral(e.Value))
	}
	for _, e := range s.app {
		line("export ", e.Name, `="`, e.Value, `"`)
	}
	line(`echo "Setting up job resources"`)
	for _, l := range s.links {
		line("# linked by yarnfed kuberm launch: ", quoteLiteral(l[0]), " -> ", quoteLiteral(l[1]))
	}
	line(`echo "Launching container"`)
	line(`exec /bin/bash -c "`, strings.Join(s.commands, " "), `"`)
	return b.String()
}
