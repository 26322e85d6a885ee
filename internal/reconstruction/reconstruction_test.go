package reconstruction

import (
	"archive/tar"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"maps"
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

// bundledKinds are the directories under testdata/ holding the bundled
// reconstruction trees, one tree per release, each with the fewest trees
// it holds (a glob finding fewer is broken): TCPXO's installer and daemon,
// and gIB's installer and diagnostic image.
var bundledKinds = []struct {
	kind     string
	minTrees int
}{{"installer", 2}, {"daemon", 2}, {"gib-installer", 1}, {"gib-diagnostic", 1}}

// bundledTrees lists the trees of one kind of bundledKinds.
func bundledTrees(t *testing.T, kind string, minTrees int) []string {
	t.Helper()
	trees, err := filepath.Glob(filepath.Join("..", "..", "testdata", kind, "v*"))
	if err != nil || len(trees) < minTrees {
		t.Fatalf("%s trees: %v (%v), want at least %d", kind, trees, err, minTrees)
	}
	return trees
}

// The bundled trees: every release declares its order, and a layer two
// releases share lives once (a copy would be the same blob twice in the
// tree, and the two copies would drift apart unseen). Layers are compared
// across every kind of tree, so a layer of one image copied into another's
// tree is caught too.
func TestBundledTreesShareRatherThanCopy(t *testing.T) {
	seen := map[v1.Hash]string{}
	for _, k := range bundledKinds {
		trees := bundledTrees(t, k.kind, k.minTrees)
		for _, tree := range trees {
			if _, err := LayerDirs(tree); err != nil {
				t.Error(err)
				continue
			}
			tr, err := loadTree(tree)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range tr.layers {
				if !tl.own {
					continue
				}
				dir := tl.dir
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

// writeFiles writes body at each path under root; a body starting with #!
// is executable.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(body, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func imageDigest(t *testing.T, dir string) v1.Hash {
	t.Helper()
	img, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A file (or symlink) a release shares rather than copies is packed as the
// copy would be: same name, bytes and mode, with the directories that hold
// it, even in a layer made of shared files only (no directory on disk). The
// image is byte-identical to the one built from copies, and LayerFile and a
// sibling that references the share-only layer read the one file.
func TestBuildSharesFilesBetweenReleases(t *testing.T) {
	root := t.TempDir()
	v1dir := filepath.Join(root, "v1")
	writeTree(t, v1dir, time.Now(), 0o644)
	const layers = `"layers": ["../v1/layers/00-base", "../v1/layers/10-lib", "layers/30-scripts", "layers/40-only"]`
	own := map[string]string{"layers/30-scripts/scripts/own.sh": "#!/bin/sh\necho v2\n"}
	copies := map[string]string{
		"image.json":                            `{"entrypoint": ["/scripts/entry.sh"], "description": "tcpxogen reconstruction v2", ` + layers + `}`,
		"layers/30-scripts/scripts/entry.sh":    "#!/bin/sh\n",
		"layers/30-scripts/scripts/profile.sh":  "export A=1\n",
		"layers/40-only/deep/dir/profile.sh":    "export A=1\n",
		"layers/40-only/deep/dir/again.sh":      "#!/bin/sh\necho v2\n",
		"layers/40-only/lib/libnccl.so.2.28.7":  "placeholder\n",
		"layers/30-scripts/scripts/profile2.sh": "export A=1\n",
	}
	maps.Copy(copies, own)
	// The copying tree's symlink, as writeTree makes v1's.
	linkTo := func(dir string) {
		t.Helper()
		if err := os.Symlink("libnccl.so.2.28.7", filepath.Join(dir, "layers/40-only/lib/libnccl.so.2")); err != nil {
			t.Fatal(err)
		}
	}
	shared := map[string]string{
		"image.json": `{"entrypoint": ["/scripts/entry.sh"], "description": "tcpxogen reconstruction v2", ` + layers + `,
			"shared_files": {
				"layers/30-scripts/scripts/entry.sh": "../v1/layers/30-scripts/scripts/entry.sh",
				"layers/30-scripts/scripts/profile.sh": "../v1/layers/30-scripts/scripts/profile.sh",
				"layers/30-scripts/scripts/profile2.sh": "../v1/layers/30-scripts/scripts/profile.sh",
				"layers/40-only/deep/dir/profile.sh": "../v1/layers/30-scripts/scripts/profile.sh",
				"layers/40-only/deep/dir/again.sh": "layers/30-scripts/scripts/own.sh",
				"layers/40-only/lib/libnccl.so.2.28.7": "../v1/layers/10-lib/lib/libnccl.so.2.28.7",
				"layers/40-only/lib/libnccl.so.2": "../v1/layers/10-lib/lib/libnccl.so.2"}}`,
	}
	maps.Copy(shared, own)
	writeFiles(t, filepath.Join(root, "copied", "v2"), copies)
	linkTo(filepath.Join(root, "copied", "v2"))
	v2dir := filepath.Join(root, "v2")
	writeFiles(t, v2dir, shared)
	// The copied tree references v1 as ../v1 too.
	writeTree(t, filepath.Join(root, "copied", "v1"), time.Now(), 0o644)

	if got, want := imageDigest(t, v2dir), imageDigest(t, filepath.Join(root, "copied", "v2")); got != want {
		t.Fatalf("the tree that shares its files builds %s, the tree that copies them %s; want the same image", got, want)
	}
	if _, err := os.Stat(filepath.Join(v2dir, "layers", "40-only")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the share-only layer has a directory on disk (%v); the test needs it absent", err)
	}
	dirs, err := LayerDirs(v2dir)
	if err != nil || len(dirs) != 4 {
		t.Fatalf("LayerDirs = %v, %v; want the 4 declared, the share-only one among them", dirs, err)
	}
	// LayerFromDir, as a caller of LayerDirs uses it, packs the same layer
	// TreeLayers does.
	tl, err := TreeLayers(v2dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dirs {
		l, err := LayerFromDir(d)
		if err != nil {
			t.Fatal(err)
		}
		if layerDigest(t, l) != layerDigest(t, tl[i]) {
			t.Errorf("LayerFromDir(%s) is not the layer TreeLayers builds", d)
		}
	}
	for name, want := range map[string]string{
		"scripts/entry.sh":              filepath.Join(v1dir, "layers/30-scripts/scripts/entry.sh"),
		"deep/dir/profile.sh":           filepath.Join(v1dir, "layers/30-scripts/scripts/profile.sh"),
		"deep/dir/again.sh":             filepath.Join(v2dir, "layers/30-scripts/scripts/own.sh"),
		"lib/libnccl.so.2.28.7":         filepath.Join(v1dir, "layers/10-lib/lib/libnccl.so.2.28.7"),
		"lib/libnccl.so.2":              filepath.Join(v1dir, "layers/10-lib/lib/libnccl.so.2"),
		"scripts/own.sh":                filepath.Join(v2dir, "layers/30-scripts/scripts/own.sh"),
		"./scripts/../scripts/entry.sh": filepath.Join(v1dir, "layers/30-scripts/scripts/entry.sh"),
	} {
		if got, err := LayerFile(v2dir, name); err != nil || got != want {
			t.Errorf("LayerFile(v2, %s) = %q, %v; want %q", name, got, err, want)
		}
	}
	// A sibling referencing the share-only layer gets its shared files.
	v3dir := filepath.Join(root, "v3")
	writeFiles(t, v3dir, map[string]string{"image.json": `{"entrypoint": ["/x"], "description": "tcpxogen reconstruction v3", "layers": ["../v2/layers/40-only"]}`})
	l3, err := TreeLayers(v3dir)
	if err != nil || len(l3) != 1 {
		t.Fatalf("v3 layers: %v, %v", l3, err)
	}
	if layerDigest(t, l3[0]) != layerDigest(t, tl[3]) {
		t.Error("a sibling referencing a share-only layer builds a different blob")
	}
	if got, err := LayerFile(v3dir, "deep/dir/profile.sh"); err != nil || got != filepath.Join(v1dir, "layers/30-scripts/scripts/profile.sh") {
		t.Errorf("LayerFile(v3, deep/dir/profile.sh) = %q, %v; want v1's file", got, err)
	}
}

// Every malformed shared_files entry is refused with the file and what to
// write.
func TestSharedFilesRefusals(t *testing.T) {
	for name, tc := range map[string]struct{ shared, want string }{
		"key outside layers":    {`{"scripts/x.sh": "../v1/layers/30-scripts/scripts/entry.sh"}`, `write "layers/NAME/PATH"`},
		"key in a sibling":      {`{"../v1/layers/30-scripts/x.sh": "../v1/layers/30-scripts/scripts/entry.sh"}`, `write "layers/NAME/PATH"`},
		"key is a layer":        {`{"layers/30-scripts": "../v1/layers/30-scripts/scripts/entry.sh"}`, `write "layers/NAME/PATH"`},
		"key escapes":           {`{"layers/30-scripts/../../x": "../v1/layers/30-scripts/scripts/entry.sh"}`, `write "layers/NAME/PATH"`},
		"source escapes":        {`{"layers/30-scripts/x.sh": "../v1/layers/30-scripts/../../../etc/passwd"}`, `write "../RELEASE/layers/NAME/PATH"`},
		"source absolute":       {`{"layers/30-scripts/x.sh": "/etc/passwd"}`, `write "../RELEASE/layers/NAME/PATH"`},
		"source missing":        {`{"layers/30-scripts/x.sh": "../v1/layers/30-scripts/scripts/gone.sh"}`, `not a file of that tree`},
		"source is a directory": {`{"layers/30-scripts/x": "../v1/layers/30-scripts/scripts"}`, `not a file of that tree`},
		"shared with itself":    {`{"layers/30-scripts/scripts/entry.sh": "layers/30-scripts/scripts/entry.sh"}`, `with itself`},
		"copy kept":             {`{"layers/30-scripts/scripts/entry.sh": "../v1/layers/30-scripts/scripts/entry.sh"}`, `holds a copy`},
		"file inside shared":    {`{"layers/30-scripts/a": "../v1/layers/30-scripts/scripts/entry.sh", "layers/30-scripts/a/b": "../v1/layers/30-scripts/scripts/entry.sh"}`, `and one inside it`},
		"layer not listed":      {`{"layers/99-new/x.sh": "../v1/layers/30-scripts/scripts/entry.sh"}`, `99-new is not in "layers"`},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, filepath.Join(root, "v1"), time.Now(), 0o644)
			dir := filepath.Join(root, "v2")
			writeTree(t, dir, time.Now(), 0o644)
			cfg := `{"entrypoint": ["/scripts/entry.sh"], "description": "tcpxogen reconstruction under test",
				"layers": ["layers/00-base", "layers/10-lib", "layers/30-scripts"], "shared_files": ` + tc.shared + `}`
			if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, f := range []func() error{
				func() error { _, err := LayerDirs(dir); return err },
				func() error { _, err := Build(dir); return err },
				func() error { _, err := LayerFromDir(filepath.Join(dir, LayersDir, "30-scripts")); return err },
			} {
				err := f()
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ConfigFile) {
					t.Fatalf("err = %v, want one naming %s and %q", err, ConfigFile, tc.want)
				}
			}
		})
	}
}

// The bundled trees: a file two layers hold alike, two releases' layers or
// two of one release's, lives once, and the other layer shares it
// (shared_files in its image.json), so the copies cannot drift apart
// unseen and the tree shows which releases have the same file. Alike means
// the same bytes and executable bit, what a shared file is packed with, or
// for a symlink the same target at the same place in its layer (two links
// to one file in one layer are two names, not a copy). Empty files (whiteouts) are exempt: their
// name is what they say. And no symlink on disk dangles (its target shared
// into the layer, not held): whatever walks a tree and reads its files
// would fail on it; share the link with its target.
func TestBundledTreesShareFilesRatherThanCopy(t *testing.T) {
	type content struct {
		link bool
		sum  [sha256.Size]byte // of the bytes, or of a symlink's place and target
		exec bool
	}
	for _, k := range bundledKinds {
		kind, trees := k.kind, bundledTrees(t, k.kind, k.minTrees)
		seen := map[content]string{} // the first layer file with the content, repo-relative
		files := 0
		for _, tree := range trees {
			err := filepath.WalkDir(filepath.Join(tree, LayersDir), func(p string, d fs.DirEntry, err error) error {
				if errors.Is(err, fs.ErrNotExist) && p == filepath.Join(tree, LayersDir) {
					return nil // a tree that owns no layer
				}
				if err != nil || d.IsDir() {
					return err
				}
				rel := repoPath(p)
				var c content
				switch {
				case d.Type()&fs.ModeSymlink != 0:
					target, err := os.Readlink(p)
					if err != nil {
						return err
					}
					if _, err := os.Stat(p); err != nil {
						t.Errorf("%s -> %s dangles on disk (%v): share the link too, where its target is shared from", rel, target, err)
					}
					inLayer, _ := filepath.Rel(filepath.Join(tree, LayersDir), p)
					_, inLayer, _ = strings.Cut(filepath.ToSlash(inLayer), "/")
					c = content{link: true, sum: sha256.Sum256([]byte(inLayer + "\x00" + target))}
				case d.Type().IsRegular():
					info, err := d.Info()
					if err != nil || info.Size() == 0 {
						return err
					}
					body, err := os.ReadFile(p)
					if err != nil {
						return err
					}
					c = content{sum: sha256.Sum256(body), exec: info.Mode()&0o111 != 0}
				default:
					return nil
				}
				files++
				prev, ok := seen[c]
				if !ok {
					seen[c] = rel
					return nil
				}
				// What to write in this tree's image.json instead of the copy.
				inTree, _ := filepath.Rel(tree, p)
				src, _ := filepath.Rel(tree, filepath.Join("..", "..", filepath.FromSlash(prev)))
				what := "a byte-identical copy of"
				if c.link {
					what = "the same symlink as"
				}
				t.Errorf("%s is %s %s: delete it and share the file, in %s \"shared_files\": {%q: %q}",
					rel, what, prev, repoPath(filepath.Join(tree, ConfigFile)), filepath.ToSlash(inTree), filepath.ToSlash(src))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if files == 0 {
			t.Fatalf("%s trees: read no layer file; the walk is broken", kind)
		}
	}
}

// repoPath is p, relative to this package's directory, as a repo-relative
// slash path for messages.
func repoPath(p string) string {
	return filepath.ToSlash(strings.TrimPrefix(filepath.Clean(p), filepath.Join("..", "..")+string(filepath.Separator)))
}
