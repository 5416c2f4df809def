package gobuild

import (
	"bufio"
	"debug/elf"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestFlagsMatchMakefile: the tests' binaries and the image's are built
// alike only while Flags and Env say what the Makefile's STATIC_FLAGS and
// STATIC say (the image target, test-interop and the tools use those).
func TestFlagsMatchMakefile(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":=")
		if ok {
			vars[strings.TrimSpace(name)] = strings.TrimSpace(value)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := vars["STATIC_FLAGS"], strings.Join(Flags, " "); got != want {
		t.Errorf("Makefile STATIC_FLAGS = %q, gobuild.Flags = %q", got, want)
	}
	if got := vars["STATIC"]; got != Env {
		t.Errorf("Makefile STATIC = %q, gobuild.Env = %q", got, Env)
	}
}

// TestCommandBuildsStatic: the binary Command builds needs no dynamic
// loader (no PT_INTERP), as FROM scratch needs, although it imports the
// standard packages that link libc when cgo is on.
func TestCommandBuildsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	if runtime.GOOS != "linux" {
		t.Skip("checks an ELF binary: linux only")
	}
	out := filepath.Join(t.TempDir(), "hello")
	cmd := Command(out, "", "./testdata/hello")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, b)
	}
	bin, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	for _, p := range bin.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("%s has a dynamic loader (PT_INTERP): built with cgo on", out)
		}
	}
}

// TestNoOtherGoBuild: a test that runs `go build` or `go run` with flags of
// its own compiles the dependency graph in one more configuration in every
// cold CI run (minutes on two cores), and runs a binary the image does not
// ship. Every Go file of the repository (the nested modules too) must go
// through Command instead.
func TestNoOtherGoBuild(t *testing.T) {
	root := filepath.Join("..", "..")
	bad := regexp.MustCompile(`"go",\s*"(build|run|install)"`)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "third_party", "testdata", "node_modules", "target":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if loc := bad.FindIndex(b); loc != nil {
			line := 1 + strings.Count(string(b[:loc[0]]), "\n")
			t.Errorf("%s:%d runs go build/run itself: use gobuild.Command (the image's flags)", p, line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
