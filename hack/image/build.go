package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ErrUnsupported is a Dockerfile this builder cannot build exactly as Docker
// would; it refuses rather than build something else.
var ErrUnsupported = errors.New("unsupported Dockerfile")

type options struct {
	dockerfile, context, name, out string
	created                        time.Time
}

// recipe is a parsed Dockerfile: the subset a FROM scratch image of static
// binaries needs.
type recipe struct {
	copies     []copyStep
	user       string
	entrypoint []string
}

type copyStep struct{ src, dst, line string }

var (
	userRE = regexp.MustCompile(`^[0-9]+(:[0-9]+)?$`)
	srcRE  = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

func parseDockerfile(r io.Reader) (recipe, error) {
	var rc recipe
	sc := bufio.NewScanner(r)
	n, sawFrom := 0, false
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			return rc, fmt.Errorf("%w: line %d: continuation lines", ErrUnsupported, n)
		}
		instr, args, _ := strings.Cut(line, " ")
		args = strings.TrimSpace(args)
		instr = strings.ToUpper(instr)
		if !sawFrom && instr != "FROM" {
			return rc, fmt.Errorf("%w: line %d: %s before FROM", ErrUnsupported, n, instr)
		}
		switch instr {
		case "FROM":
			if sawFrom || args != "scratch" {
				return rc, fmt.Errorf("%w: line %d: only one FROM scratch (no base image is pulled here)", ErrUnsupported, n)
			}
			sawFrom = true
		case "COPY":
			f := strings.Fields(args)
			if len(f) != 2 || !srcRE.MatchString(f[0]) || !path.IsAbs(f[1]) || path.Clean(f[1]) != f[1] || f[1] == "/" {
				return rc, fmt.Errorf("%w: line %d: COPY takes one file of the context and an absolute, clean destination (no flags, globs or directories): %q", ErrUnsupported, n, args)
			}
			rc.copies = append(rc.copies, copyStep{src: f[0], dst: f[1], line: line})
		case "USER":
			if !userRE.MatchString(args) {
				return rc, fmt.Errorf("%w: line %d: USER must be numeric uid[:gid] (a FROM scratch image has no /etc/passwd): %q", ErrUnsupported, n, args)
			}
			rc.user = args
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(args), &rc.entrypoint); err != nil || len(rc.entrypoint) == 0 {
				return rc, fmt.Errorf("%w: line %d: ENTRYPOINT must be a non-empty JSON array (there is no shell): %q", ErrUnsupported, n, args)
			}
		default:
			return rc, fmt.Errorf("%w: line %d: instruction %s (this builder knows FROM scratch, COPY, USER, ENTRYPOINT)", ErrUnsupported, n, instr)
		}
	}
	if err := sc.Err(); err != nil {
		return rc, err
	}
	if !sawFrom {
		return rc, fmt.Errorf("%w: no FROM", ErrUnsupported)
	}
	if len(rc.entrypoint) == 0 {
		return rc, fmt.Errorf("%w: no ENTRYPOINT", ErrUnsupported)
	}
	return rc, nil
}

// normalizeRef turns a reference as an operator writes it (yarnfed,
// yarnfed:0.1, registry.example.com/team/yarnfed:0.1) into the full name
// containerd and the kubelet use (docker.io/library/yarnfed:latest), and its tag.
func normalizeRef(ref string) (full, tag string, err error) {
	if strings.Contains(ref, "@") {
		return "", "", fmt.Errorf("image name %q: a digest cannot be chosen, it is computed", ref)
	}
	repo, tag := ref, "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`).MatchString(tag) {
		return "", "", fmt.Errorf("image name %q: bad tag %q", ref, tag)
	}
	first, _, hasSlash := strings.Cut(repo, "/")
	if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		if !hasSlash {
			repo = "library/" + repo
		}
		repo = "docker.io/" + repo
	}
	domain, rest, _ := strings.Cut(repo, "/")
	if !regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*$`).MatchString(rest) || domain == "" {
		return "", "", fmt.Errorf("image name %q: bad repository %q", ref, repo)
	}
	return repo + ":" + tag, tag, nil
}

// goarch names the architecture of an ELF executable as an OCI config does.
func goarch(file string) (string, error) {
	f, err := elf.Open(file)
	if err != nil {
		return "", fmt.Errorf("%s: the entrypoint must be a Linux executable: %w", file, err)
	}
	defer f.Close()
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	case elf.EM_RISCV:
		return "riscv64", nil
	case elf.EM_PPC64:
		return "ppc64le", nil
	case elf.EM_S390:
		return "s390x", nil
	}
	return "", fmt.Errorf("%s: unknown ELF machine %v", file, f.Machine)
}

// layerTar is the uncompressed layer of one COPY: the destination's parent
// directories and the file, owned by root (as COPY without --chown), with
// the source's permission bits and the fixed time.
func layerTar(c copyStep, srcPath string, created time.Time) ([]byte, error) {
	src, err := os.Open(srcPath)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: COPY %s: not a regular file", ErrUnsupported, c.src)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	rel := strings.TrimPrefix(c.dst, "/")
	var dirs []string
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: created, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: int64(st.Mode().Perm()), Size: st.Size(), ModTime: created, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if n, err := io.Copy(tw, src); err != nil {
		return nil, err
	} else if n != st.Size() {
		return nil, fmt.Errorf("COPY %s: file changed while read (%d of %d bytes)", c.src, n, st.Size())
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// assemble builds the image the recipe describes.
func assemble(rc recipe, contextDir string, created time.Time) (v1.Image, error) {
	var entry string
	for _, c := range rc.copies {
		if c.dst == rc.entrypoint[0] {
			entry = filepath.Join(contextDir, c.src)
		}
	}
	if entry == "" {
		return nil, fmt.Errorf("%w: ENTRYPOINT %s is not a file a COPY puts there (a FROM scratch image has nothing else)", ErrUnsupported, rc.entrypoint[0])
	}
	arch, err := goarch(entry)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config.User = rc.user
	cf.Config.Entrypoint = rc.entrypoint
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	for _, c := range rc.copies {
		b, err := layerTar(c, filepath.Join(contextDir, c.src), created)
		if err != nil {
			return nil, err
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
			tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
		if err != nil {
			return nil, err
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:     layer,
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: c.line},
		})
		if err != nil {
			return nil, err
		}
	}
	return mutate.CreatedAt(img, v1.Time{Time: created})
}

// archiveWriter writes an OCI image layout as a tar stream with fixed
// headers, so equal images give equal bytes.
type archiveWriter struct {
	tw      *tar.Writer
	created time.Time
}

func (a archiveWriter) dir(name string) error {
	return a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: a.created, Format: tar.FormatPAX})
}

func (a archiveWriter) file(name string, b []byte) error {
	if err := a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: a.created, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := a.tw.Write(b)
	return err
}

func writeArchive(w io.Writer, img v1.Image, fullName, tag string, created time.Time) (v1.Hash, error) {
	blobs := map[string][]byte{}
	add := func(b []byte) v1.Hash {
		h, _, _ := v1.SHA256(bytes.NewReader(b))
		blobs[h.Hex] = b
		return h
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	add(cfg)
	layers, err := img.Layers()
	if err != nil {
		return v1.Hash{}, err
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return v1.Hash{}, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return v1.Hash{}, err
		}
		add(b)
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	digest := add(manifest)
	if d, err := img.Digest(); err != nil || d != digest {
		return v1.Hash{}, fmt.Errorf("manifest digest %v, image says %v (%v)", digest, d, err)
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: types.OCIManifestSchema1,
			Size:      int64(len(manifest)),
			Digest:    digest,
			// containerd names the imported image after the first; skopeo
			// selects by the second (oci-archive:FILE:TAG).
			Annotations: map[string]string{
				"io.containerd.image.name":          fullName,
				"org.opencontainers.image.ref.name": tag,
			},
		}},
	})
	if err != nil {
		return v1.Hash{}, err
	}
	a := archiveWriter{tw: tar.NewWriter(w), created: created}
	if err := a.file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return v1.Hash{}, err
	}
	if err := a.file("index.json", index); err != nil {
		return v1.Hash{}, err
	}
	if err := a.dir("blobs"); err != nil {
		return v1.Hash{}, err
	}
	if err := a.dir("blobs/sha256"); err != nil {
		return v1.Hash{}, err
	}
	hexes := make([]string, 0, len(blobs))
	for h := range blobs {
		hexes = append(hexes, h)
	}
	sort.Strings(hexes)
	for _, h := range hexes {
		if err := a.file("blobs/sha256/"+h, blobs[h]); err != nil {
			return v1.Hash{}, err
		}
	}
	return digest, a.tw.Close()
}

// build reads the Dockerfile and context, writes the archive (atomically:
// a reader never sees half of one) and returns the image digest.
func build(o options) (v1.Hash, error) {
	full, tag, err := normalizeRef(o.name)
	if err != nil {
		return v1.Hash{}, err
	}
	f, err := os.Open(o.dockerfile)
	if err != nil {
		return v1.Hash{}, err
	}
	rc, err := parseDockerfile(f)
	f.Close()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("%s: %w", o.dockerfile, err)
	}
	img, err := assemble(rc, o.context, o.created)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return v1.Hash{}, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(o.out), ".image-*")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.Remove(tmp.Name())
	d, err := writeArchive(tmp, img, full, tag, o.created)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return v1.Hash{}, err
	}
	return d, os.Rename(tmp.Name(), o.out)
}
