// Package gobuild builds this repository's commands for the tests that run
// them as processes, with the flags `make image` builds the image's binaries
// with: cgo off and paths trimmed (the Makefile's STATIC and STATIC_FLAGS).
//
// Two reasons. A test then runs the binary the image ships, not a variant of
// it. And a build cache holds one compiled copy of a package per build
// configuration: every other non-race build in CI (the e2e test binary, the
// image, the tools) uses this one too, so a cold CI run compiles the
// dependency graph twice (this and -race) instead of three or four times
// (deploy/DESIGN.md, "CI").
package gobuild

import (
	"os"
	"os/exec"
)

// Flags are the Makefile's STATIC_FLAGS; TestFlagsMatchMakefile keeps the
// two equal.
var Flags = []string{"-trimpath", "-buildvcs=false", "-gcflags=all=-dwarf=false"}

// Env is the Makefile's STATIC: the environment the flags go with.
const Env = "CGO_ENABLED=0"

// Command returns `go build` of pkgs into out (a file, or a directory when
// out ends in a path separator) with Flags, and tags when not empty. The
// caller sets Dir when pkgs are relative; the linker's -s -w leaves out
// the symbol table and DWARF, which no test reads and which make the link
// slower.
func Command(out, tags string, pkgs ...string) *exec.Cmd {
	args := append([]string{"build"}, Flags...)
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, "-ldflags", "-s -w", "-o", out)
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Env = append(os.Environ(), Env)
	return cmd
}
