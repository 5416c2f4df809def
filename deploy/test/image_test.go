package test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestImageContract: what deploy/Dockerfile promises the manifests holds —
// the entrypoint is the command every container runs, the image's user is
// the one the pods run as (or root where a manifest says so), and a
// CGO_ENABLED=0 build (as `make image` does) is static, so it runs FROM
// scratch. The drift test runs that same static build.
func TestImageContract(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	for _, want := range []string{`(?m)^FROM scratch$`, `(?m)^ENTRYPOINT \["/yarnfed"\]$`, `(?m)^COPY yarnfed /yarnfed$`} {
		if !regexp.MustCompile(want).MatchString(df) {
			t.Errorf("deploy/Dockerfile: no line matching %s", want)
		}
	}
	m := regexp.MustCompile(`(?m)^USER ([0-9]+):([0-9]+)$`).FindStringSubmatch(df)
	if m == nil {
		t.Fatal("deploy/Dockerfile: no numeric USER uid:gid")
	}
	uid, _ := strconv.ParseInt(m[1], 10, 64)
	for _, o := range overlays {
		r := render(t, o)
		for _, p := range r.pods() {
			sc := p.template.Spec.SecurityContext
			if sc == nil || sc.RunAsUser == nil {
				t.Errorf("%s %s: no runAsUser", p.kind, p.owner)
				continue
			}
			if *sc.RunAsUser != uid && *sc.RunAsUser != 0 {
				t.Errorf("%s %s: runAsUser %d, the image's user is %d", p.kind, p.owner, *sc.RunAsUser, uid)
			}
			for _, c := range p.template.Spec.Containers {
				if len(c.Command) != 1 || c.Command[0] != "/yarnfed" || c.Image == "" {
					t.Errorf("%s %s: container %s runs %v from %q, want /yarnfed from the yarnfed image", p.kind, p.owner, c.Name, c.Command, c.Image)
				}
			}
		}
	}
	bin := buildYarnfed(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("%s has a dynamic loader: it would not start FROM scratch", bin)
		}
	}
}

// TestMakeStampsVersion: every yarnfed binary the Makefile builds, the
// image's included, carries the version `yarnfed version` prints, and the
// variable the linker sets is the one cmd/yarnfed declares (an unknown -X
// name is silently ignored, which would leave every image saying "dev").
func TestMakeStampsVersion(t *testing.T) {
	root := repoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "cmd", "yarnfed", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^var version = "dev"$`).Match(src) {
		t.Fatal(`cmd/yarnfed/main.go: no package-level "var version", the variable -X main.version sets`)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make: %v", err)
	}
	out, err := exec.Command("make", "-n", "-C", root, "build", "image", "VERSION=v9.9.9-stamp").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build image: %v\n%s", err, out)
	}
	builds := 0
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, " build ") || !strings.Contains(line, "./cmd/") {
			continue
		}
		builds++
		if !strings.Contains(line, "-X main.version=v9.9.9-stamp") {
			t.Errorf("a build without the version: %s", line)
		}
	}
	if builds < 3 {
		t.Errorf("found %d go build lines in make -n build image, want the three (bin/, yarnfed-bench, the image's):\n%s", builds, out)
	}
}
