package reconstruction

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func writeTree(t *testing.T, root string, mtime time.Time, umaskedMode os.FileMode) {
	t.Helper()
	files := map[string]string{
		"layers/00-base/etc/os-release":        "ID=debian\n",
		"layers/30-scripts/scripts/profile.sh": "export A=1\n",
		"layers/30-scripts/scripts/entry.sh":   "#!/bin/sh\n",
		"image.json":                           `{"entrypoint": ["/scripts/entry.sh"], "description": "tcpxogen reconstruction under test"}`,
		"layers/10-lib/lib/libnccl.so.2.28.7":  "placeholder\n",
	}
	for p, body := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		mode := umaskedMode
		if filepath.Base(p) == "entry.sh" {
			mode |= 0o100
		}
		if err := os.WriteFile(full, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(full, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("libnccl.so.2.28.7", filepath.Join(root, "layers/10-lib/lib/libnccl.so.2")); err != nil {
		t.Fatal(err)
	}
}

// The digest must not depend on the checkout: not on mtimes, permission
// bits other than executable, or the directory the tree sits in.
func TestBuildIsReproducible(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeTree(t, a, time.Unix(1, 0), 0o644)
	writeTree(t, b, time.Now(), 0o600)
	imgA, err := Build(a)
	if err != nil {
		t.Fatal(err)
	}
	imgB, err := Build(b)
	if err != nil {
		t.Fatal(err)
	}
	da, err := imgA.Digest()
	if err != nil {
		t.Fatal(err)
	}
	db, err := imgB.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if da != db {
		t.Fatalf("same tree, different digests: %s vs %s", da, db)
	}
	layers, err := imgA.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 3 {
		t.Fatalf("want 3 layers (one per layers/ child), got %d", len(layers))
	}
}

func TestBuildNormalisesEntries(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, time.Now(), 0o640)
	img, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	seen := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[h.Name] = h
		if !h.ModTime.Equal(Epoch) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: mtime %v uid %d gid %d, want epoch and root", h.Name, h.ModTime, h.Uid, h.Gid)
		}
	}
	if h := seen["scripts/entry.sh"]; h == nil || h.Mode != 0o755 {
		t.Errorf("executable file mode: %+v, want 0755", h)
	}
	if h := seen["scripts/profile.sh"]; h == nil || h.Mode != 0o644 {
		t.Errorf("plain file mode: %+v, want 0644", h)
	}
	if h := seen["lib/libnccl.so.2"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "libnccl.so.2.28.7" {
		t.Errorf("symlink not preserved: %+v", h)
	}
	cfg, _ := img.ConfigFile()
	if !cfg.Created.Time.Equal(Epoch) || cfg.Config.Entrypoint[0] != "/scripts/entry.sh" {
		t.Errorf("config: created %v entrypoint %v", cfg.Created, cfg.Config.Entrypoint)
	}
}

func TestBuildRejectsTreeWithoutLayers(t *testing.T) {
	if _, err := Build(t.TempDir()); err == nil {
		t.Fatal("a tree without layers/ built an image")
	}
}

func TestSyntheticBaseIsDeterministicAndSized(t *testing.T) {
	const size = 3<<20 + 17
	a, err := SyntheticBase(size, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, err := SyntheticBase(size, 7)
	if err != nil {
		t.Fatal(err)
	}
	c, err := SyntheticBase(size, 8)
	if err != nil {
		t.Fatal(err)
	}
	da, db, dc := layerDigest(t, a), layerDigest(t, b), layerDigest(t, c)
	if da != db || da == dc {
		t.Fatalf("digests: seed7 %s, seed7 again %s, seed8 %s", da, db, dc)
	}
	n, err := a.Size()
	if err != nil {
		t.Fatal(err)
	}
	if n < size {
		t.Fatalf("compressed size %d < content %d: content is not incompressible", n, size)
	}
}

func TestSyntheticBaseFileCompressesLikeLibraries(t *testing.T) {
	const size = 8 << 20
	l, err := SyntheticBaseFile(t.TempDir(), size, 3)
	if err != nil {
		t.Fatal(err)
	}
	n, err := l.Size()
	if err != nil {
		t.Fatal(err)
	}
	if ratio := float64(n) / size; ratio < 0.4 || ratio > 0.75 {
		t.Fatalf("compressed/uncompressed = %.2f, want about one half", ratio)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var total int64
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		total += h.Size
	}
	if total != size {
		t.Fatalf("file content %d bytes, want %d", total, size)
	}
}

// layerDigest is l's digest; a failure fails the test rather than comparing
// two zero digests as equal.
func layerDigest(t *testing.T, l v1.Layer) v1.Hash {
	t.Helper()
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
