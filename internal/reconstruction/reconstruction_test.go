package reconstruction

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
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
		"image.json":                           `{"entrypoint": ["/scripts/entry.sh"], "description": "tcpxogen reconstruction under test", "layers": ["layers/00-base", "layers/10-lib", "layers/30-scripts"]}`,
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

// A release that shares a sibling's layer references it: the shared layer
// is the same blob in both images, the release's own layers sit where its
// declared order puts them, and LayerFile reads the topmost copy.
func TestBuildSharesLayersBetweenReleases(t *testing.T) {
	root := t.TempDir()
	older := filepath.Join(root, "v1")
	writeTree(t, older, time.Now(), 0o644)
	newer := filepath.Join(root, "v2")
	for p, body := range map[string]string{
		"layers/40-new/scripts/profile.sh": "export A=2\n",
		"image.json": `{"entrypoint": ["/scripts/entry.sh"], "description": "tcpxogen reconstruction v2",
			"layers": ["../v1/layers/00-base", "../v1/layers/10-lib", "../v1/layers/30-scripts", "layers/40-new"]}`,
	} {
		full := filepath.Join(newer, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := TreeLayers(older)
	if err != nil {
		t.Fatal(err)
	}
	b, err := TreeLayers(newer)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4 {
		t.Fatalf("v2 has %d layers, want the 4 it declares", len(b))
	}
	for i := range a {
		da, _ := a[i].Digest()
		db, _ := b[i].Digest()
		if da != db {
			t.Errorf("shared layer %d: digest %s in v1, %s in v2; want the same blob", i, da, db)
		}
	}
	got, err := LayerFile(newer, "scripts/profile.sh")
	if err != nil || got != filepath.Join(newer, "layers/40-new/scripts/profile.sh") {
		t.Errorf("LayerFile = %q, %v; want v2's own (topmost) copy", got, err)
	}
	got, err = LayerFile(newer, "scripts/entry.sh")
	if err != nil || got != filepath.Join(newer, "../v1/layers/30-scripts/scripts/entry.sh") {
		t.Errorf("LayerFile = %q, %v; want the shared layer's file", got, err)
	}
	if _, err := LayerFile(newer, "scripts/absent.sh"); err == nil {
		t.Error("LayerFile found a file no layer holds")
	}
}

// Every malformed layer order is refused with the file and what to write.
func TestLayerDirsRefusesBadOrders(t *testing.T) {
	for name, tc := range map[string]struct{ layers, want string }{
		"none declared":      {`[]`, `declare the image's layer order`},
		"escapes the trees":  {`["layers/00-base", "layers/10-lib", "layers/30-scripts", "../../etc"]`, `write "layers/NAME"`},
		"absolute":           {`["/layers/00-base"]`, `write "layers/NAME"`},
		"nested path":        {`["layers/00-base/etc", "layers/10-lib", "layers/30-scripts"]`, `write "layers/NAME"`},
		"missing own":        {`["layers/00-base", "layers/10-lib", "layers/30-scripts", "layers/99-gone"]`, `names no directory`},
		"missing shared":     {`["../v0/layers/00-base", "layers/00-base", "layers/10-lib", "layers/30-scripts"]`, `not a directory of the sibling`},
		"listed twice":       {`["layers/00-base", "layers/00-base", "layers/10-lib", "layers/30-scripts"]`, `listed twice`},
		"own layer unlisted": {`["layers/00-base", "layers/30-scripts"]`, `10-lib is not in "layers"`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, time.Now(), 0o644)
			cfg := `{"entrypoint": ["/scripts/entry.sh"], "description": "tcpxogen reconstruction under test", "layers": ` + tc.layers + `}`
			if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LayerDirs(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ConfigFile) {
				t.Fatalf("err = %v, want one naming %s and %q", err, ConfigFile, tc.want)
			}
		})
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

// The bundled trees: every release declares its order, and a layer two
// releases share lives once (a copy would be the same blob twice in the
// tree, and the two copies would drift apart unseen).
func TestBundledTreesShareRatherThanCopy(t *testing.T) {
	seen := map[v1.Hash]string{}
	for _, kind := range []string{"installer", "daemon"} {
		trees, err := filepath.Glob(filepath.Join("..", "..", "testdata", kind, "v*"))
		if err != nil || len(trees) < 2 {
			t.Fatalf("%s trees: %v (%v)", kind, trees, err)
		}
		for _, tree := range trees {
			if _, err := LayerDirs(tree); err != nil {
				t.Error(err)
				continue
			}
			own, err := ownLayers(tree)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range own {
				dir := filepath.Join(tree, LayersDir, name)
				l, err := LayerFromDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				d, err := l.DiffID()
				if err != nil {
					t.Fatal(err)
				}
				if prev, ok := seen[d]; ok {
					t.Errorf("%s copies %s: reference it from %s instead", dir, prev, filepath.Join(tree, ConfigFile))
				}
				seen[d] = dir
			}
		}
	}
}
