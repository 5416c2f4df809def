// Package launch is what runs inside every YARN container pod under kuberm
// (`yarnfed kuberm launch`): it does what a NodeManager does between
// startContainers and the container's exit. It reads the launch context
// kuberm's NM face stored in the pod's launch Secret, localizes the local
// resources, writes the credentials, builds the environment and
// launch_container.sh, runs it with bash in its own session, forwards a
// stop to it, and exits with its exit code. It reads files and the
// environment only: no Kubernetes client, no credentials of its own.
package launch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Exit codes of the launcher, for kuberm's NM face (container statuses).
const (
	// ExitLocalizationFailed: a local resource could not be localized; a
	// NodeManager reports such a container with ContainerExitStatus
	// INVALID (-1000) and the reason in its diagnostics.
	ExitLocalizationFailed = 254
	// ExitLaunchFailed: the launch context, the environment or the script
	// was refused or could not be set up: the NodeManager's -1 ("Failed
	// to launch container"), as a process exit status byte.
	ExitLaunchFailed = 255
	// ExitTerminated: stopped before the command ran (the NodeManager's
	// ExitCode.TERMINATED). A command stopped by the forwarded SIGTERM
	// exits 143 by itself, as bash reports 128+signal.
	ExitTerminated = 143
)

// Config is one launch. Zero values take the defaults named.
type Config struct {
	LaunchDir string   // DefaultLaunchDir
	WorkDir   string   // the current directory (the pod's workingDir)
	Env       []string // the pod's environment (os.Environ())
	Shell     string   // /bin/bash
	Limits    Limits   // DefaultLimits()
	// KillDelay: after forwarding SIGTERM, SIGKILL follows this late (the
	// NodeManager's yarn.nodemanager.sleep-delay-before-sigkill.ms, 250ms).
	KillDelay time.Duration
	// TerminationLog receives the reason of a launcher failure (the pod's
	// terminationMessagePath; "" = none).
	TerminationLog string
	HTTPClient     *http.Client
	// HDFSFetcher is the yarnfed-hdfs-fetch binary hdfs:// resources are
	// fetched with (default: the file of that name beside the launcher's
	// own executable, where --install puts it).
	HDFSFetcher string
	Logger      *slog.Logger
	// ReapAll makes the launcher reap every child it inherits, as PID 1 of
	// a container must (orphans of the command are reparented to it).
	// Default: only when the launcher is PID 1.
	ReapAll bool

	fetcher remoteFetcher // tests: replaces the HDFSFetcher process
}

func (c *Config) defaults() error {
	if c.LaunchDir == "" {
		c.LaunchDir = DefaultLaunchDir
	}
	if c.WorkDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		c.WorkDir = wd
	}
	abs, err := filepath.Abs(c.WorkDir)
	if err != nil {
		return err
	}
	c.WorkDir = abs
	if c.Shell == "" {
		c.Shell = "/bin/bash"
	}
	if c.Limits == (Limits{}) {
		c.Limits = DefaultLimits()
	}
	if c.KillDelay == 0 {
		c.KillDelay = 250 * time.Millisecond
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   30 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
		}}
	}
	if c.HDFSFetcher == "" {
		c.HDFSFetcher = fetcherBeside()
	}
	if c.fetcher == nil {
		c.fetcher = execFetcher{path: c.HDFSFetcher, env: c.Env}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if !c.ReapAll {
		c.ReapAll = os.Getpid() == 1
	}
	return nil
}

// Run launches the container and returns its exit code. A failure before
// the command runs returns ExitLocalizationFailed, ExitLaunchFailed or
// ExitTerminated with the error (also written to TerminationLog).
// Canceling ctx stops the command as a NodeManager does: SIGTERM to its
// process group, SIGKILL KillDelay later.
func Run(ctx context.Context, cfg Config) (int, error) {
	if err := cfg.defaults(); err != nil {
		return ExitLaunchFailed, fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	p, err := prepare(ctx, &cfg)
	if err != nil {
		code := ExitLaunchFailed
		switch {
		case ctx.Err() != nil:
			code = ExitTerminated
		case errors.Is(err, ErrLocalize), errors.Is(err, ErrUnsupportedScheme):
			code = ExitLocalizationFailed
		}
		cfg.terminationMessage(err)
		return code, err
	}
	code, err := execute(ctx, &cfg, p)
	if err != nil {
		cfg.terminationMessage(err)
	}
	return code, err
}

func (c *Config) terminationMessage(err error) {
	if c.TerminationLog == "" {
		return
	}
	msg := err.Error()
	if len(msg) > 4000 { // the kubelet keeps 4096 bytes
		msg = msg[:4000]
	}
	if werr := os.WriteFile(c.TerminationLog, []byte(msg), 0o644); werr != nil {
		c.Logger.Warn("cannot write the termination message", "path", c.TerminationLog, "err", werr)
	}
}

// prepared is a container ready to run.
type prepared struct {
	scriptPath string
	env        []string
}

func splitDirs(s string) []string {
	var out []string
	for _, d := range strings.Split(s, ",") {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, d)
		}
	}
	return out
}

func prepare(ctx context.Context, cfg *Config) (*prepared, error) {
	log := cfg.Logger
	env := map[string]string{}
	for _, kv := range cfg.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for _, k := range []string{"CONTAINER_ID", "LOCAL_DIRS", "LOG_DIRS"} {
		if env[k] == "" {
			return nil, fmt.Errorf("%w: %s is not set (the pod's NodeManager environment)", ErrLaunch, k)
		}
	}
	localDirs, logDirs := splitDirs(env["LOCAL_DIRS"]), splitDirs(env["LOG_DIRS"])
	for _, d := range append(append([]string{}, localDirs...), logDirs...) {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("%w: LOCAL_DIRS and LOG_DIRS must be absolute, got %q", ErrLaunch, d)
		}
	}
	lc, err := ReadContext(filepath.Join(cfg.LaunchDir, ContextFile), cfg.Limits)
	if err != nil {
		return nil, err
	}
	for _, d := range append(append(append([]string{}, localDirs...), logDirs...), filepath.Join(cfg.WorkDir, "tmp")) {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrLaunch, err)
		}
	}
	logDir := logDirs[0]

	// Local resources, into the first local dir's file cache, linked into
	// the working directory under their keys.
	loc := &localizer{cache: filepath.Join(localDirs[0], "filecache"), lim: cfg.Limits, client: cfg.HTTPClient,
		fetcher: cfg.fetcher, user: env["USER"], log: log}
	work, err := os.OpenRoot(cfg.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	defer work.Close()
	var links [][2]string
	for _, r := range lc.Resources {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: stopped during localization", ErrLaunch)
		}
		start := time.Now()
		target, err := loc.localize(ctx, r)
		if err != nil {
			return nil, err
		}
		if dir := filepath.Dir(r.Link); dir != "." {
			if err := work.MkdirAll(dir, 0o750); err != nil {
				return nil, fmt.Errorf("%w: link %q: %v", ErrLaunch, r.Link, err)
			}
		}
		if err := work.Symlink(target, r.Link); err != nil {
			return nil, fmt.Errorf("%w: link %q: %v", ErrLaunch, r.Link, err)
		}
		links = append(links, [2]string{r.Link, target})
		log.Info("localized", "resource", r.URL, "type", r.Type.String(), "link", r.Link, "seconds", time.Since(start).Seconds())
	}

	// Credentials: the token storage as given, or an empty one (a Hadoop
	// client fails to log in on an empty file).
	tokens := lc.Tokens
	if len(tokens) == 0 {
		tokens = emptyCredentials
	}
	tokensPath := filepath.Join(cfg.WorkDir, TokensFile)
	if err := os.WriteFile(tokensPath, tokens, 0o600); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLaunch, err)
	}

	// The environment: forced NodeManager variables, then the launch
	// context's, expanded.
	nmValues := map[string]string{
		"HADOOP_TOKEN_FILE_LOCATION": tokensPath,
		"PWD":                        cfg.WorkDir,
		"LOCAL_USER_DIRS":            env["LOCAL_DIRS"],
	}
	var nm []EnvVar
	for _, name := range nmVars {
		v, ok := env[name]
		if fixed, set := nmValues[name]; set && (name != "LOCAL_USER_DIRS" || !ok) {
			v, ok = fixed, true
		}
		if ok || name == "JVM_PID" {
			nm = append(nm, EnvVar{name, v})
		}
	}
	addOpens := ""
	if javaMajor(env["JAVA_HOME"]) >= 17 {
		addOpens = addOpensJava17
	}
	var app []EnvVar
	for _, e := range lc.Env {
		if isNMVar[e.Name] {
			log.Info("launch context variable ignored: the NodeManager sets it", "name", e.Name)
			continue
		}
		app = append(app, EnvVar{e.Name, Expand(e.Value, logDir, addOpens)})
	}
	cmds := make([]string, len(lc.Commands))
	for i, c := range lc.Commands {
		cmds[i] = Expand(c, logDir, addOpens)
	}
	sc := &script{logDir: logDir, nm: nm, app: orderByDependencies(app), commands: cmds, links: links}
	text := sc.String()
	scriptPath := filepath.Join(cfg.WorkDir, ScriptName)
	if err := os.WriteFile(scriptPath, []byte(text), 0o700); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	// Debugging information, as the NodeManager copies it into the log
	// directory (yarn.nodemanager.log-container-debug-info.enabled).
	if err := os.WriteFile(filepath.Join(logDir, ScriptName), []byte(text), 0o640); err != nil {
		log.Warn("cannot copy the launch script to the log directory", "err", err)
	}
	if err := writeDirectoryInfo(filepath.Join(logDir, "directory.info"), cfg.WorkDir); err != nil {
		log.Warn("cannot write directory.info", "err", err)
	}
	return &prepared{scriptPath: scriptPath, env: cfg.Env}, nil
}

// emptyCredentials is a Credentials token storage with no token and no
// secret key: "HDTS", format 0 (Writable), vint 0, vint 0.
var emptyCredentials = []byte{'H', 'D', 'T', 'S', 0, 0, 0}

// writeDirectoryInfo lists the working directory (what the NodeManager's
// `ls -l` and `find -L . -maxdepth 5 -ls` record), links with targets.
func writeDirectoryInfo(file, root string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "directory of %s (yarnfed kuberm launch):\n", root)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // listed as far as readable: this file is for humans
		}
		rel, _ := filepath.Rel(root, p)
		if strings.Count(rel, string(filepath.Separator)) >= 5 {
			return filepath.SkipDir
		}
		info, ierr := d.Info()
		if ierr != nil {
			return nil
		}
		fmt.Fprintf(&b, "%s %12d %s", info.Mode(), info.Size(), rel)
		if d.Type()&os.ModeSymlink != 0 {
			t, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", t)
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		return err
	}
	return os.WriteFile(file, []byte(b.String()), 0o640)
}

// execute runs the script in its own session and waits for it, turning a
// stop (ctx) into SIGTERM to its process group and SIGKILL KillDelay later.
func execute(ctx context.Context, cfg *Config, p *prepared) (int, error) {
	proc, err := os.StartProcess(cfg.Shell, []string{cfg.Shell, p.scriptPath}, &os.ProcAttr{
		Dir: cfg.WorkDir, Env: p.env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return ExitLaunchFailed, fmt.Errorf("%w: starting %s: %v", ErrLaunch, cfg.Shell, err)
	}
	pid := proc.Pid
	cfg.Logger.Info("container launched", "pid", pid, "script", p.scriptPath)
	type result struct {
		ws  syscall.WaitStatus
		err error
	}
	done := make(chan result, 1)
	go func() {
		ws, err := waitFor(pid, cfg.ReapAll)
		done <- result{ws, err}
	}()
	stop := ctx.Done()
	var kill <-chan time.Time
	for {
		select {
		case <-stop:
			stop = nil
			cfg.Logger.Info("stopping the container: SIGTERM to its process group", "pgid", pid, "kill_after", cfg.KillDelay)
			_ = syscall.Kill(-pid, syscall.SIGTERM) // ESRCH: already gone, the wait below tells
			t := time.NewTimer(cfg.KillDelay)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		case r := <-done:
			_ = proc.Release()
			if r.err != nil {
				return ExitLaunchFailed, fmt.Errorf("%w: waiting for the container: %v", ErrLaunch, r.err)
			}
			code := exitCode(r.ws)
			cfg.Logger.Info("container exited", "exit_code", code)
			return code, nil
		}
	}
}

// waitFor waits for pid; with reapAll it reaps every other child meanwhile
// (the launcher is PID 1 of the pod's container).
func waitFor(pid int, reapAll bool) (syscall.WaitStatus, error) {
	target := pid
	if reapAll {
		target = -1
	}
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(target, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if got == pid {
			return ws, nil
		}
	}
}

// exitCode is the status bash would report: the exit status, or 128+n for
// a process killed by signal n (137 for SIGKILL, 143 for SIGTERM, the
// NodeManager's FORCE_KILLED and TERMINATED).
func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
