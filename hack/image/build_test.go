package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

const dockerfile = `# comment
FROM scratch
COPY yarnfed /yarnfed
USER 65532:65532
ENTRYPOINT ["/yarnfed"]
`

// fixture is a build context holding an ELF executable (this test binary)
// as "yarnfed", and the Dockerfile.
func fixture(t *testing.T) options {
	t.Helper()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "yarnfed"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	df := filepath.Join(dir, "Dockerfile")
	if err := os.WriteFile(df, []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	return options{dockerfile: df, context: dir, name: "yarnfed:latest", out: filepath.Join(dir, "out", "image.tar"), created: time.Unix(0, 0).UTC()}
}

// TestReproducible: building the same input twice gives the same digest and
// the same archive bytes; changing the binary or the time changes the digest.
func TestReproducible(t *testing.T) {
	o := fixture(t)
	d1, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	a1, _ := os.ReadFile(o.out)
	// Touch the input's mtime: it must not leak into the image.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(o.context, "yarnfed"), later, later); err != nil {
		t.Fatal(err)
	}
	d2, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := os.ReadFile(o.out)
	if d1 != d2 || !bytes.Equal(a1, a2) {
		t.Fatalf("same input, different output: %v (%d bytes) vs %v (%d bytes)", d1, len(a1), d2, len(a2))
	}

	o2 := o
	o2.created = time.Unix(1700000000, 0).UTC()
	if d, err := build(o2); err != nil || d == d1 {
		t.Fatalf("SOURCE_DATE_EPOCH changed, digest %v (%v) still %v", d, err, d1)
	}
	f, err := os.OpenFile(filepath.Join(o.context, "yarnfed"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0})
	f.Close()
	if d, err := build(o); err != nil || d == d1 {
		t.Fatalf("binary changed, digest %v (%v) still %v", d, err, d1)
	}
}

// TestArchiveIsAValidOCILayout: the archive unpacks to an image layout that
// go-containerregistry's validator accepts (digests, sizes, diff ids), with
// the config the Dockerfile asks for and the names containerd and skopeo read.
func TestArchiveIsAValidOCILayout(t *testing.T) {
	o := fixture(t)
	o.name = "registry.example.com/team/yarnfed:0.1"
	d, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	idx, im := readArchive(t, o.out)
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != d {
		t.Fatalf("index %+v, want one manifest %v", im.Manifests, d)
	}
	ann := im.Manifests[0].Annotations
	if ann["io.containerd.image.name"] != "registry.example.com/team/yarnfed:0.1" || ann["org.opencontainers.image.ref.name"] != "0.1" {
		t.Errorf("annotations %v", ann)
	}
	img, err := idx.Image(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(img); err != nil {
		t.Fatalf("invalid image: %v", err)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture == "" || cf.Config.User != "65532:65532" ||
		len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/yarnfed" || !cf.Created.Time.Equal(o.created) {
		t.Errorf("config %+v", cf)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "yarnfed" || h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(o.created) {
		t.Errorf("layer entry %+v", h)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("layer has more than the binary: %v", err)
	}
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParseDockerfileRefusesWhatItCannotBuild(t *testing.T) {
	for name, df := range map[string]string{
		"base image":        "FROM debian\nENTRYPOINT [\"/x\"]\n",
		"RUN":               "FROM scratch\nRUN true\nENTRYPOINT [\"/x\"]\n",
		"chown flag":        "FROM scratch\nCOPY --chown=1 x /x\nENTRYPOINT [\"/x\"]\n",
		"relative dst":      "FROM scratch\nCOPY x x\nENTRYPOINT [\"/x\"]\n",
		"src outside":       "FROM scratch\nCOPY ../x /x\nENTRYPOINT [\"/x\"]\n",
		"named user":        "FROM scratch\nUSER nobody\nENTRYPOINT [\"/x\"]\n",
		"shell entrypoint":  "FROM scratch\nENTRYPOINT /x\n",
		"no entrypoint":     "FROM scratch\nCOPY x /x\n",
		"instruction first": "COPY x /x\nFROM scratch\n",
		"continuation":      "FROM scratch\nENTRYPOINT [\"/x\", \\\n \"a\"]\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parseDockerfile(strings.NewReader(df)); !errors.Is(err, ErrUnsupported) {
				t.Fatalf("got %v, want ErrUnsupported", err)
			}
		})
	}
	rc, err := parseDockerfile(strings.NewReader(dockerfile))
	if err != nil || len(rc.copies) != 1 || rc.user != "65532:65532" || rc.entrypoint[0] != "/yarnfed" {
		t.Fatalf("%+v, %v", rc, err)
	}
}

// The entrypoint must be the file a COPY put in the image: FROM scratch has
// nothing else to run.
func TestEntrypointMustBeCopied(t *testing.T) {
	o := fixture(t)
	if err := os.WriteFile(o.dockerfile, []byte("FROM scratch\nCOPY yarnfed /yarnfed\nENTRYPOINT [\"/bin/sh\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := build(o); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("got %v, want ErrUnsupported", err)
	}
}

func TestNormalizeRef(t *testing.T) {
	for in, want := range map[string][2]string{
		"yarnfed":                               {"docker.io/library/yarnfed:latest", "latest"},
		"yarnfed:0.1.0":                         {"docker.io/library/yarnfed:0.1.0", "0.1.0"},
		"team/yarnfed":                          {"docker.io/team/yarnfed:latest", "latest"},
		"registry.example.com/yarnfed:0.1.0":    {"registry.example.com/yarnfed:0.1.0", "0.1.0"},
		"localhost:5000/a/b:c":                  {"localhost:5000/a/b:c", "c"},
		"localhost/yarnfed":                     {"localhost/yarnfed:latest", "latest"},
		"registry.example.com:443/x/yarnfed:v1": {"registry.example.com:443/x/yarnfed:v1", "v1"},
	} {
		full, tag, err := normalizeRef(in)
		if err != nil || full != want[0] || tag != want[1] {
			t.Errorf("normalizeRef(%q) = %q, %q, %v; want %q, %q", in, full, tag, err, want[0], want[1])
		}
	}
	for _, bad := range []string{"Yarnfed", "yarnfed@sha256:00", "yarnfed:", "a//b", ""} {
		if _, _, err := normalizeRef(bad); err == nil {
			t.Errorf("normalizeRef(%q) accepted", bad)
		}
	}
}

// TestDeployDockerfileCarriesTheHDFSFetcher: the repository's own
// deploy/Dockerfile builds, and its image holds /yarnfed (the entrypoint)
// and /yarnfed-hdfs-fetch beside it, both executable: the launcher's
// --install copies the fetcher from beside its own executable, so an image
// without it localizes no hdfs:// resource (kuberm/DESIGN.md, "Launcher").
func TestDeployDockerfileCarriesTheHDFSFetcher(t *testing.T) {
	o := fixture(t)
	o.dockerfile = filepath.Join("..", "..", "deploy", "Dockerfile")
	exe, _ := os.ReadFile(filepath.Join(o.context, "yarnfed"))
	if err := os.WriteFile(filepath.Join(o.context, "yarnfed-hdfs-fetch"), exe, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := build(o); err != nil {
		t.Fatal(err)
	}
	idx, im := readArchive(t, o.out)
	if len(im.Manifests) != 1 {
		t.Fatalf("index %+v, want one manifest", im)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/yarnfed" {
		t.Fatalf("config %+v, %v", cf, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]int64{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Typeflag == tar.TypeReg {
				files[h.Name] = h.Mode
			}
		}
		rc.Close()
	}
	for _, name := range []string{"yarnfed", "yarnfed-hdfs-fetch"} {
		if mode, ok := files[name]; !ok || mode&0o111 == 0 {
			t.Errorf("the image has no executable /%s (files: %v)", name, files)
		}
	}
}

// readArchive unpacks an OCI archive and reads its image index.
func readArchive(t *testing.T, archive string) (v1.ImageIndex, *v1.IndexManifest) {
	t.Helper()
	dir := t.TempDir()
	untar(t, archive, dir)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return idx, im
}
