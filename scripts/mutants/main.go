// Command mutants is the repeatable mutation check behind `make mutants`
// (issue 22): it applies each small bug listed in scripts/mutants/list.txt,
// one at a time, to a scratch copy of the tree, runs the tests named to
// catch it, and reports caught or missed. It exits non-zero when a mutant
// is missed, when an entry no longer applies (its snippet is gone or not
// unique, or the mutant does not compile), or when a named test fails on
// the unmutated tree (a failure there would count as a catch).
//
// The checkout is never written: each worker copies the tracked and
// untracked-but-not-ignored files (git ls-files) to its own directory
// under the system temp dir, at a path fixed per checkout so the Go build
// cache stays warm between runs, and restores each mutated file after its
// run.
//
// Usage: go run ./scripts/mutants [-list file] [-j 2] [-only regexp] [-no-baseline] [-check] [-v]
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// mutant is one entry of the list.
type mutant struct {
	id      string // short name, unique
	why     string // the bug it stands for
	line    int    // line of the entry in the list, for messages
	file    string // path relative to the module root
	find    string // exact snippet; must occur exactly once in file
	repl    string // what the snippet becomes
	pkg     string // go test package, e.g. ./router
	run     string // go test -run regexp
	timeout time.Duration
}

// result of one mutant.
type result struct {
	m       *mutant
	verdict string // caught, MISSED, BROKEN
	detail  string
	took    time.Duration
}

func main() {
	listPath := flag.String("list", "scripts/mutants/list.txt", "the mutation list")
	jobs := flag.Int("j", 2, "mutants run at once (each in its own scratch copy)")
	only := flag.String("only", "", "run only the mutants whose id matches this regexp")
	noBaseline := flag.Bool("no-baseline", false, "skip running the named tests on the unmutated tree first")
	verbose := flag.Bool("v", false, "print the test output of every mutant")
	check := flag.Bool("check", false, "only check that every entry applies to the checkout (no tests run)")
	flag.Parse()
	if err := run(*listPath, *jobs, *only, !*noBaseline, *verbose, *check); err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(1)
	}
}

func run(listPath string, jobs int, only string, baseline, verbose, check bool) error {
	root, err := gitRoot()
	if err != nil {
		return err
	}
	ms, err := parseList(filepath.Join(root, listPath))
	if err != nil {
		return err
	}
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			return fmt.Errorf("-only: %w", err)
		}
		var keep []*mutant
		for _, m := range ms {
			if re.MatchString(m.id) {
				keep = append(keep, m)
			}
		}
		ms = keep
	}
	if len(ms) == 0 {
		return errors.New("no mutants selected")
	}
	// Check every entry against the checkout before spending minutes.
	for _, m := range ms {
		src, err := os.ReadFile(filepath.Join(root, m.file))
		if err != nil {
			return fmt.Errorf("%s (list line %d): %w", m.id, m.line, err)
		}
		if n := strings.Count(string(src), m.find); n != 1 {
			return fmt.Errorf("%s (list line %d): the snippet occurs %d times in %s, want exactly once: %q", m.id, m.line, n, m.file, m.find)
		}
	}
	if check {
		fmt.Printf("mutants: %d entries apply to the checkout\n", len(ms))
		return nil
	}
	files, err := trackedFiles(root)
	if err != nil {
		return err
	}
	jobs = max(1, min(jobs, len(ms)))
	sum := sha256.Sum256([]byte(root))
	base := filepath.Join(os.TempDir(), "yarnfed-mutants-"+hex.EncodeToString(sum[:6]))
	unlock, err := lock(base)
	if err != nil {
		return err
	}
	defer unlock()
	dirs := make([]string, jobs)
	for i := range dirs {
		dirs[i] = filepath.Join(base, fmt.Sprintf("w%d", i))
		if err := copyTree(root, dirs[i], files); err != nil {
			return err
		}
	}
	start := time.Now()
	fmt.Printf("mutants: %d entries, %d at a time, scratch copies under %s\n", len(ms), jobs, base)

	if baseline {
		if err := runBaseline(dirs, ms); err != nil {
			return err
		}
	}

	results := make([]result, len(ms))
	next := make(chan int)
	var wg sync.WaitGroup
	var out sync.Mutex
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func(dir string) {
			defer wg.Done()
			for i := range next {
				r := runMutant(dir, ms[i])
				results[i] = r
				out.Lock()
				fmt.Printf("%-7s %-40s %5.1fs  %s\n", r.verdict, r.m.id, r.took.Seconds(), firstLine(r.detail))
				if verbose || r.verdict != "caught" {
					fmt.Println(indent(r.detail))
				}
				out.Unlock()
			}
		}(dirs[w])
	}
	for i := range ms {
		next <- i
	}
	close(next)
	wg.Wait()

	counts := map[string]int{}
	fmt.Println()
	fmt.Printf("%-7s  %-40s  %-34s  %s\n", "RESULT", "MUTANT", "TESTS", "BUG")
	for _, r := range results {
		counts[r.verdict]++
		fmt.Printf("%-7s  %-40s  %-34s  %s\n", r.verdict, r.m.id, r.m.pkg, r.m.why)
	}
	fmt.Printf("\nmutants: %d caught, %d missed, %d broken of %d in %s\n",
		counts["caught"], counts["MISSED"], counts["BROKEN"], len(ms), time.Since(start).Round(time.Second))
	if counts["MISSED"]+counts["BROKEN"] > 0 {
		return fmt.Errorf("%d missed, %d broken", counts["MISSED"], counts["BROKEN"])
	}
	return nil
}

// runBaseline runs each package's named tests, together, on unmutated
// copies: a test failing already would make every mutant "caught".
func runBaseline(dirs []string, ms []*mutant) error {
	byPkg := map[string][]string{}
	timeout := map[string]time.Duration{}
	for _, m := range ms {
		byPkg[m.pkg] = append(byPkg[m.pkg], "(?:"+m.run+")")
		timeout[m.pkg] += m.timeout
	}
	pkgs := make([]string, 0, len(byPkg))
	for p := range byPkg {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	t0 := time.Now()
	next := make(chan string)
	errs := make(chan error, len(pkgs))
	var wg sync.WaitGroup
	for _, dir := range dirs {
		wg.Add(1)
		go func(dir string) {
			defer wg.Done()
			// One go test per package keeps each -run regexp to its package.
			for p := range next {
				re := strings.Join(uniq(byPkg[p]), "|")
				tmo := min(timeout[p], 10*time.Minute)
				outp, err := goTest(dir, []string{"test", "-v", "-count=1", "-vet=off", "-timeout", tmo.String(), "-run", re, p}, tmo+time.Minute)
				switch {
				case err != nil:
					errs <- fmt.Errorf("baseline: the named tests of %s fail on the unmutated tree:\n%s", p, indent(tail(outp, 40)))
				case bytes.Contains(outp, []byte("no tests to run")):
					errs <- fmt.Errorf("baseline: %s: -run %q matches no test", p, re)
				case skipRE.Match(outp):
					// A skipped test passes whatever the code does (issue 22's
					// per-address cap test skipped on any error).
					errs <- fmt.Errorf("baseline: %s: a named test skips here, so it cannot catch a mutant: %s", p, skipRE.Find(outp))
				}
			}
		}(dir)
	}
	for _, p := range pkgs {
		next <- p
	}
	close(next)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if len(all) > 0 {
		return errors.Join(all...)
	}
	fmt.Printf("baseline: the named tests of %d packages pass unmutated (%s)\n", len(pkgs), time.Since(t0).Round(time.Second))
	return nil
}

func runMutant(dir string, m *mutant) result {
	t0 := time.Now()
	r := result{m: m}
	path := filepath.Join(dir, m.file)
	orig, err := os.ReadFile(path)
	if err != nil {
		r.verdict, r.detail = "BROKEN", err.Error()
		return r
	}
	if n := bytes.Count(orig, []byte(m.find)); n != 1 {
		r.verdict, r.detail = "BROKEN", fmt.Sprintf("snippet occurs %d times in %s", n, m.file)
		return r
	}
	mutated := bytes.Replace(orig, []byte(m.find), []byte(m.repl), 1)
	if err := os.WriteFile(path, mutated, 0o644); err != nil {
		r.verdict, r.detail = "BROKEN", err.Error()
		return r
	}
	defer func() {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			// The copy is now wrong for every later mutant: stop.
			fmt.Fprintf(os.Stderr, "mutants: cannot restore %s: %v\n", path, err)
			os.Exit(2)
		}
	}()
	outp, err := goTest(dir, []string{"test", "-count=1", "-vet=off", "-timeout", m.timeout.String(), "-run", m.run, m.pkg}, m.timeout+time.Minute)
	r.took = time.Since(t0)
	s := string(outp)
	switch {
	case strings.Contains(s, "[build failed]") || strings.Contains(s, "[setup failed]"):
		r.verdict, r.detail = "BROKEN", "the mutant does not compile (not a behaviour change):\n"+tail(outp, 15)
	case err == nil && strings.Contains(s, "no tests to run"):
		r.verdict, r.detail = "BROKEN", "-run matches no test"
	case err == nil:
		r.verdict, r.detail = "MISSED", "the tests pass with the mutation"
	case strings.Contains(s, "panic: test timed out"):
		r.verdict, r.detail = "caught", "timeout: "+failedTests(s)
	default:
		r.verdict, r.detail = "caught", failedTests(s)+"\n"+tail(outp, 12)
	}
	return r
}

// goTest runs go with args in dir; err is non-nil when it fails.
func goTest(dir string, args []string, limit time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	cmd.WaitDelay = 10 * time.Second
	return cmd.CombinedOutput()
}

var skipRE = regexp.MustCompile(`(?m)^\s*--- SKIP: \S+`)

var failRE = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

func failedTests(s string) string {
	var names []string
	for _, m := range failRE.FindAllStringSubmatch(s, -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		return "FAIL"
	}
	return "FAIL " + strings.Join(uniq(names), " ")
}

// parseList reads the list. Entries are blocks of "key: value" lines,
// each starting with "== id: what the bug is"; '#' starts a comment line.
// A value that is a whole Go string literal in double quotes is unquoted
// (for tabs, newlines and leading or trailing spaces); otherwise it is the
// rest of the line as written (so "x": y is a snippet, not a literal).
func parseList(path string) ([]*mutant, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []*mutant
	var cur *mutant
	seen := map[string]bool{}
	hasRepl := false
	finish := func() error {
		if cur == nil {
			return nil
		}
		if cur.file == "" || cur.find == "" || !hasRepl || cur.pkg == "" || cur.run == "" {
			return fmt.Errorf("%s:%d: %s needs file, find, repl, pkg and run", path, cur.line, cur.id)
		}
		if cur.find == cur.repl {
			return fmt.Errorf("%s:%d: %s: repl equals find", path, cur.line, cur.id)
		}
		if _, err := regexp.Compile(cur.run); err != nil {
			return fmt.Errorf("%s:%d: %s: run: %w", path, cur.line, cur.id, err)
		}
		ms = append(ms, cur)
		return nil
	}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "== "); ok {
			if err := finish(); err != nil {
				return nil, err
			}
			id, why, _ := strings.Cut(rest, ":")
			id = strings.TrimSpace(id)
			if id == "" || seen[id] {
				return nil, fmt.Errorf("%s:%d: empty or repeated id %q", path, n, id)
			}
			seen[id] = true
			cur = &mutant{id: id, why: strings.TrimSpace(why), line: n, timeout: 3 * time.Minute}
			hasRepl = false
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("%s:%d: a key before the first '== id:' line", path, n)
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want 'key: value'", path, n)
		}
		val = strings.TrimPrefix(val, " ")
		if u, err := strconv.Unquote(val); err == nil && strings.HasPrefix(val, `"`) {
			val = u
		}
		switch strings.TrimSpace(key) {
		case "file":
			cur.file = val
		case "find":
			cur.find = val
		case "repl":
			cur.repl, hasRepl = val, true
		case "pkg":
			cur.pkg = val
		case "run":
			cur.run = val
		case "timeout":
			d, err := time.ParseDuration(val)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: timeout: %w", path, n, err)
			}
			cur.timeout = d
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q", path, n, key)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return ms, nil
}

func gitRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse: %w (run inside the checkout)", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// trackedFiles lists the files a build can see: tracked, and untracked
// but not ignored (work in progress is checked too).
func trackedFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// copyTree makes dst hold exactly files from src, rewriting only what
// differs (so file times, and with them the build cache, stay stable).
func copyTree(src, dst string, files []string) error {
	want := map[string]bool{}
	for _, f := range files {
		want[filepath.Clean(f)] = true
		s, d := filepath.Join(src, f), filepath.Join(dst, f)
		data, err := os.ReadFile(s)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the checkout, not yet in the index
		}
		if err != nil {
			if fi, serr := os.Stat(s); serr == nil && fi.IsDir() {
				continue // a submodule or nested repository
			}
			return err
		}
		if old, err := os.ReadFile(d); err == nil && bytes.Equal(old, data) {
			continue
		}
		fi, err := os.Stat(s)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(d, data, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	// Remove files the checkout no longer has.
	return filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dst, p)
		if !want[rel] {
			return os.Remove(p)
		}
		return nil
	})
}

// lock keeps two runs from one checkout out of each other's scratch
// copies: base/lock holds the running one's pid; a lock whose process is
// gone is taken over.
func lock(base string) (func(), error) {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(base, "lock")
	for range 2 {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		b, _ := os.ReadFile(path)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			if p, err := os.FindProcess(pid); err == nil && p.Signal(syscall.Signal(0)) == nil {
				return nil, fmt.Errorf("another run (pid %d) is using %s", pid, base)
			}
		}
		os.Remove(path) // stale: its process is gone
	}
	return nil, fmt.Errorf("cannot take %s", path)
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func indent(s string) string {
	if s == "" {
		return s
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
