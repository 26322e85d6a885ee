// Package reconstruction builds the bundled stand-ins for Google's NCCL plugin
// installer and tcpxo-daemon images from source trees under testdata/ (one
// per release, each declaring its layer order; shared layers and files
// referenced), and synthetic base layers that give it the bulk of the real
// CUDA devel base. It does not decide what the trees contain (the facts do)
// nor serve them (registrytest, extract's testdata source).
//
// The build is reproducible: the same tree gives the same image digest on
// every machine, so the digest recorded in generated provenance is a fact a
// reviewer can re-derive, not an accident of the build host.
package reconstruction

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
)

// Epoch is the fixed timestamp of every entry and of the image config.
// A constant (not the build time) is what makes the digest reproducible.
var Epoch = time.Unix(0, 0).UTC()

// LayersDir is where, inside a release's source tree, the layers that
// release introduces live, one directory each. The tree's image config
// declares the whole layer order, and a layer the release shares with
// another release is referenced in that release's tree, never copied; so
// is a file (Config.SharedFiles).
const LayersDir = "layers"

// ConfigFile is the name, inside a source tree, of the image config the
// tree declares: what the published Dockerfile sets (entrypoint, env), so the
// reconstruction carries the same config facts extraction reads.
const ConfigFile = "image.json"

// Config is the part of an OCI image config a reconstruction declares.
type Config struct {
	Entrypoint []string `json:"entrypoint"`
	Cmd        []string `json:"cmd,omitempty"`
	Env        []string `json:"env,omitempty"`
	// Layers is the image's layer order, lowest first, as the published
	// Dockerfile builds it: "layers/NAME" for a layer this release
	// introduces, "../RELEASE/layers/NAME" for one it shares with the
	// release that introduced it.
	Layers []string `json:"layers"`
	// Description becomes the org.opencontainers.image.description label; it
	// must say the image is a reconstruction.
	Description string `json:"description"`
	// SharedFiles lists the files (or symlinks) of this release's own
	// layers that live in another layer's directory: it maps where the
	// file sits in this release, "layers/NAME/PATH", to where it lives,
	// "../RELEASE/layers/NAME/PATH" in the sibling release that has it (or
	// "layers/NAME/PATH" in another of this release's own layers). The
	// layer is packed as if the file were copied there (same name, bytes
	// and mode), so sharing a file never changes a digest, and a file two
	// layers hold alike is written once. A layer may hold shared files
	// only; its directory then does not exist.
	SharedFiles map[string]string `json:"shared_files,omitempty"`
}

// LoadConfig reads the image config of the source tree at dir.
func LoadConfig(dir string) (Config, error) {
	p := filepath.Join(dir, ConfigFile)
	data, err := inputfile.Read(p, inputfile.Spec{Max: inputfile.MaxData})
	if err != nil {
		return Config{}, fmt.Errorf("read reconstruction image config: %w (every tree declares its entrypoint and env in %s)", err, ConfigFile)
	}
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("%s: %w (keys: entrypoint, cmd, env, layers, description, shared_files)", p, err)
	}
	if len(cfg.Entrypoint) == 0 || !strings.Contains(cfg.Description, "reconstruction") {
		return Config{}, fmt.Errorf("%s: set entrypoint, and a description that says the image is a tcpxogen reconstruction", p)
	}
	return cfg, nil
}

// Build turns the source tree at dir (e.g. testdata/installer/v1.0.15) into
// an OCI image with the tree's declared config. bases are prepended below the
// tree's own layers (normally none).
func Build(dir string, bases ...v1.Layer) (v1.Image, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	own, err := TreeLayers(dir)
	if err != nil {
		return nil, err
	}
	return Image(cfg, append(append([]v1.Layer(nil), bases...), own...)...)
}

// TreeLayers returns the layers of the source tree at dir, lowest first.
func TreeLayers(dir string) ([]v1.Layer, error) {
	t, err := loadTree(dir)
	if err != nil {
		return nil, err
	}
	var layers []v1.Layer
	for _, tl := range t.layers {
		shared, err := t.sharedInto(tl)
		if err != nil {
			return nil, err
		}
		l, err := packLayer(tl.dir, shared)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	return layers, nil
}

// LayerDirs lists the layer directories of the source tree at dir, lowest
// first, in the order its image config declares. Every layer the tree
// introduces must be in that order (a layer directory nothing lists would be
// silently left out of the image), and a shared layer must be one its
// sibling release introduces. A layer made of shared files only is listed
// although its directory does not exist; LayerFromDir packs it.
func LayerDirs(dir string) ([]string, error) {
	t, err := loadTree(dir)
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(t.layers))
	for i, tl := range t.layers {
		dirs[i] = tl.dir
	}
	return dirs, nil
}

// tree is a source tree's declared shape, checked: its layers in order, and
// the files its config shares into its own layers.
type tree struct {
	layers []treeLayer
	// shared maps each own layer's name to the files shared into it: the
	// slash-separated path inside the layer to the file on disk.
	shared map[string]map[string]string
}

type treeLayer struct {
	dir, name string
	own       bool // introduced by this tree, not referenced from a sibling's
}

// sharedInto returns the files shared into tl: this tree's declaration for
// its own layer, the sibling tree's for a layer it references.
func (t *tree) sharedInto(tl treeLayer) (map[string]string, error) {
	if tl.own {
		return t.shared[tl.name], nil
	}
	return sharedInto(tl.dir)
}

// loadTree reads and checks the image config of the source tree at dir.
func loadTree(dir string) (*tree, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, ConfigFile)
	if len(cfg.Layers) == 0 {
		return nil, fmt.Errorf("%s: declare the image's layer order in \"layers\" (lowest first: \"layers/NAME\" for this release's own, \"../RELEASE/layers/NAME\" for a shared one)", conf)
	}
	own, err := ownLayers(dir)
	if err != nil {
		return nil, err
	}
	shared, err := sharedFiles(dir, cfg)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(shared)) {
		if !slices.Contains(own, name) {
			own = append(own, name)
		}
	}
	t := &tree{shared: shared}
	listed := map[string]bool{}
	for i, ref := range cfg.Layers {
		name, sibling, ok := parseLayerRef(ref)
		if !ok {
			return nil, fmt.Errorf("%s: layers[%d] is %q: write \"layers/NAME\" or \"../RELEASE/layers/NAME\" (one directory, no other path)", conf, i, ref)
		}
		if listed[ref] {
			return nil, fmt.Errorf("%s: layers[%d] %q is listed twice", conf, i, ref)
		}
		listed[ref] = true
		p := filepath.Join(dir, filepath.FromSlash(ref))
		if !sibling && !slices.Contains(own, name) {
			return nil, fmt.Errorf("%s: layers[%d] %q names no directory under %s, and shared_files shares nothing into it", conf, i, ref, filepath.Join(dir, LayersDir))
		}
		if sibling && !siblingLayer(p) {
			return nil, fmt.Errorf("%s: layers[%d] %q: the shared layer is not a directory of the sibling release's tree", conf, i, ref)
		}
		t.layers = append(t.layers, treeLayer{dir: p, name: name, own: !sibling})
	}
	for _, name := range own {
		if !listed[LayersDir+"/"+name] {
			return nil, fmt.Errorf("%s: layer directory %s is not in \"layers\": list it where the Dockerfile builds it, or remove it (and what shared_files shares into it)", conf, filepath.Join(dir, LayersDir, name))
		}
	}
	return t, nil
}

// siblingLayer reports whether the layer directory dir (TREE/layers/NAME)
// is a layer of its tree: a directory, or a layer TREE's image config
// shares files into. Only TREE's config is read, so two trees that
// reference each other's share-only layers do not recurse.
func siblingLayer(dir string) bool {
	if st, err := os.Stat(dir); err == nil {
		return st.IsDir()
	}
	cfg, err := LoadConfig(filepath.Dir(filepath.Dir(dir)))
	if err != nil {
		return false
	}
	for dest := range cfg.SharedFiles {
		if layer, _, sibling, ok := parseFileRef(dest); ok && !sibling && layer == filepath.Base(dir) {
			return true
		}
	}
	return false
}

// ownLayers lists the layer directories the tree at dir holds (none is
// allowed: a release may share every layer and differ only in its config).
func ownLayers(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, LayersDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read reconstruction tree: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// sharedFiles checks the shared_files of the tree at dir and returns them by
// the own layer they are shared into: path inside the layer to file on disk.
// A shared file must be a regular file or a symlink (packed as the link it
// is) where the reference points, and the tree must not hold a copy of its
// own where the file is shared to.
func sharedFiles(dir string, cfg Config) (map[string]map[string]string, error) {
	conf := filepath.Join(dir, ConfigFile)
	out := map[string]map[string]string{}
	for _, dest := range slices.Sorted(maps.Keys(cfg.SharedFiles)) {
		src := cfg.SharedFiles[dest]
		layer, rel, sibling, ok := parseFileRef(dest)
		if !ok || sibling {
			return nil, fmt.Errorf("%s: shared_files key %q: write \"layers/NAME/PATH\", the file's place in this release's own layer NAME", conf, dest)
		}
		if _, _, _, ok := parseFileRef(src); !ok {
			return nil, fmt.Errorf("%s: shared_files[%q] is %q: write \"../RELEASE/layers/NAME/PATH\", the file in the sibling release that has it (or \"layers/NAME/PATH\" in another of this release's layers)", conf, dest, src)
		}
		if src == dest {
			return nil, fmt.Errorf("%s: shared_files[%q] shares the file with itself", conf, dest)
		}
		p := filepath.Join(dir, filepath.FromSlash(src))
		if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() && st.Mode()&fs.ModeSymlink == 0 {
			return nil, fmt.Errorf("%s: shared_files[%q] is %q, which is not a file of that tree (a shared file lives once, as a file or a symlink, in the layer that has it)", conf, dest, src)
		}
		switch _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(dest))); {
		case err == nil:
			return nil, fmt.Errorf("%s: shared_files[%q]: the tree holds a copy at %s too: delete the copy, or stop sharing the file", conf, dest, dest)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%s: shared_files[%q]: %w", conf, dest, err)
		}
		if out[layer] == nil {
			out[layer] = map[string]string{}
		}
		out[layer][rel] = p
	}
	for layer, files := range out {
		for rel := range files {
			for d := path.Dir(rel); d != "."; d = path.Dir(d) {
				if _, ok := files[d]; ok {
					return nil, fmt.Errorf("%s: shared_files shares a file at %s and one inside it, at %s", conf, LayersDir+"/"+layer+"/"+d, LayersDir+"/"+layer+"/"+rel)
				}
			}
		}
	}
	return out, nil
}

// sharedInto returns the files the tree that dir is a layer directory of
// (dir is TREE/layers/NAME) shares into it: the slash-separated path inside
// the layer to the file on disk. A directory that is no layer of a tree with
// an image config has none.
func sharedInto(dir string) (map[string]string, error) {
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	if filepath.Base(parent) != LayersDir {
		return nil, nil
	}
	root := filepath.Dir(parent)
	if _, err := os.Stat(filepath.Join(root, ConfigFile)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	t, err := loadTree(root)
	if err != nil {
		return nil, err
	}
	return t.shared[filepath.Base(dir)], nil
}

// parseLayerRef splits a layer reference into the layer's name and whether
// it lives in a sibling release's tree.
func parseLayerRef(ref string) (name string, shared, ok bool) {
	parts := strings.Split(ref, "/")
	switch {
	case len(parts) == 2 && parts[0] == LayersDir && validName(parts[1]):
		return parts[1], false, true
	case len(parts) == 4 && parts[0] == ".." && validName(parts[1]) && parts[2] == LayersDir && validName(parts[3]):
		return parts[3], true, true
	}
	return "", false, false
}

// parseFileRef splits a file reference, "layers/NAME/PATH" or
// "../RELEASE/layers/NAME/PATH", into the layer's name, the file's
// slash-separated path inside the layer, and whether it lives in a sibling
// release's tree.
func parseFileRef(ref string) (layer, rel string, sibling, ok bool) {
	parts := strings.Split(ref, "/")
	if len(parts) >= 2 && parts[0] == ".." && validName(parts[1]) {
		parts, sibling = parts[2:], true
	}
	if len(parts) < 3 || parts[0] != LayersDir {
		return "", "", false, false
	}
	for _, p := range parts[1:] {
		if !validName(p) {
			return "", "", false, false
		}
	}
	return parts[1], strings.Join(parts[2:], "/"), sibling, true
}

func validName(s string) bool { return s != "" && s != "." && s != ".." }

// Image assembles layers (lowest first) into an OCI image with the config
// c and a fixed creation time.
func Image(c Config, layers ...v1.Layer) (v1.Image, error) {
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layers...)
	if err != nil {
		return nil, fmt.Errorf("assemble reconstruction image: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read reconstruction config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	cfg.Created = v1.Time{Time: Epoch}
	cfg.Config.Entrypoint = slices.Clone(c.Entrypoint)
	cfg.Config.Cmd = slices.Clone(c.Cmd)
	cfg.Config.Env = slices.Clone(c.Env)
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.description": c.Description}
	// History entries carry timestamps; drop them so only Epoch appears.
	cfg.History = nil
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("set reconstruction config: %w", err)
	}
	return img, nil
}

// LayerFromDir packs the tree rooted at dir into a reproducible layer:
// sorted entries, fixed mtimes, uid/gid 0, canonical modes, PAX headers.
// Git keeps only the executable bit, so modes are normalised to 0755/0644.
// When dir is a layer directory of a source tree (TREE/layers/NAME), the
// files TREE's image config shares into the layer are packed with it, as
// if copied there, with the directories that hold them: that is the layer.
func LayerFromDir(dir string) (v1.Layer, error) {
	shared, err := sharedInto(dir)
	if err != nil {
		return nil, err
	}
	return packLayer(dir, shared)
}

// packLayer packs dir and the files shared into it (path inside the layer
// to file on disk) into a reproducible layer.
func packLayer(dir string, shared map[string]string) (v1.Layer, error) {
	data, err := tarDir(dir, shared)
	if err != nil {
		return nil, err
	}
	return layerFromTar(data, gzip.BestCompression)
}

func layerFromTar(data []byte, level int) (v1.Layer, error) {
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithCompressionLevel(level), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("build layer: %w", err)
	}
	return l, nil
}

func tarDir(dir string, shared map[string]string) ([]byte, error) {
	// files maps each entry's name inside the layer (OS separators) to the
	// file on disk it is packed from; "" is a directory only the shared
	// files imply (git keeps no empty directory).
	files := map[string]string{}
	_, err := os.Stat(dir)
	if len(shared) == 0 || !errors.Is(err, fs.ErrNotExist) {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != dir {
				rel, err := filepath.Rel(dir, p)
				if err != nil {
					return err
				}
				files[rel] = p
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("walk layer %s: %w", dir, err)
		}
	}
	for name, src := range shared {
		rel := filepath.FromSlash(name)
		if _, ok := files[rel]; ok {
			return nil, fmt.Errorf("layer %s holds %s and has it shared into it too", dir, name)
		}
		files[rel] = src
		for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
			if _, ok := files[d]; !ok {
				files[d] = ""
			}
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		if err := writeEntry(tw, filepath.ToSlash(rel), files[rel]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close layer tar for %s: %w", dir, err)
	}
	return buf.Bytes(), nil
}

// writeEntry writes the entry name, packed from the file p on disk (a
// directory when p is "").
func writeEntry(tw *tar.Writer, name, p string) error {
	hdr := &tar.Header{
		Name:    name,
		ModTime: Epoch,
		Format:  tar.FormatPAX,
	}
	var body []byte
	if p == "" {
		hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, name+"/", 0o755
		return tw.WriteHeader(hdr)
	}
	info, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	switch m := info.Mode(); {
	case m.IsDir():
		hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, name+"/", 0o755
	case m&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return fmt.Errorf("read link %s: %w", p, err)
		}
		hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, target, 0o777
	case m.IsRegular():
		if body, err = os.ReadFile(p); err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, int64(len(body)), 0o644
		if m&0o111 != 0 {
			hdr.Mode = 0o755
		}
	default:
		return fmt.Errorf("%s: unsupported file type %s in reconstruction tree (only files, directories and symlinks)", p, m.Type())
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write tar header for %s: %w", name, err)
	}
	if _, err := tw.Write(body); err != nil {
		return fmt.Errorf("write tar body for %s: %w", name, err)
	}
	return nil
}

// Entry is one file of a layer built in memory (see LayerFromEntries).
type Entry struct {
	Name     string
	Type     byte // tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink
	Body     []byte
	Linkname string
	Mode     int64
}

// LayerFromEntries packs entries exactly as given (no sorting, no
// normalisation of names), which is what hostile-image tests need.
func LayerFromEntries(entries []Entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		mode := e.Mode
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{Name: e.Name, Typeflag: e.Type, Linkname: e.Linkname, Mode: mode,
			Size: int64(len(e.Body)), ModTime: Epoch, Format: tar.FormatPAX}
		if e.Type != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("write tar header for %q: %w", e.Name, err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write(e.Body); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return layerFromTar(buf.Bytes(), gzip.BestCompression)
}

// LayerFile returns where on disk the file at name (image-relative, e.g.
// "scripts/nccl-env-profile.sh") of the source tree at dir lives: in the
// topmost declared layer that holds it, as the image's merged view would
// show it. Tests and docs read a release's files through it, so a release
// that shares a layer or a file reads the shared copy.
func LayerFile(dir, name string) (string, error) {
	t, err := loadTree(dir)
	if err != nil {
		return "", err
	}
	for _, tl := range slices.Backward(t.layers) {
		p := filepath.Join(tl.dir, filepath.FromSlash(name))
		if _, err := os.Lstat(p); err == nil {
			return p, nil
		}
		shared, err := t.sharedInto(tl)
		if err != nil {
			return "", err
		}
		if src, ok := shared[filepath.ToSlash(filepath.Clean(filepath.FromSlash(name)))]; ok {
			return src, nil
		}
	}
	return "", fmt.Errorf("reconstruction %s: no layer holds %s", dir, name)
}
