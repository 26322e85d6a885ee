// Package reconstruction builds the bundled stand-ins for Google's NCCL plugin
// installer and tcpxo-daemon images from source trees under testdata/ (one
// per release, each declaring its layer order; shared layers referenced), and
// synthetic base layers that give it the bulk of the real CUDA devel base. It
// does not decide what the trees contain (the facts do) nor serve them
// (registrytest, extract's testdata source).
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
	"os"
	"path/filepath"
	"slices"
	"sort"
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
// another release is referenced in that release's tree, never copied.
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
		return Config{}, fmt.Errorf("%s: %w (keys: entrypoint, cmd, env, layers, description)", p, err)
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
	layerDirs, err := LayerDirs(dir)
	if err != nil {
		return nil, err
	}
	var layers []v1.Layer
	for _, ld := range layerDirs {
		l, err := LayerFromDir(ld)
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
// sibling release introduces.
func LayerDirs(dir string) ([]string, error) {
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
	dirs := make([]string, 0, len(cfg.Layers))
	listed := map[string]bool{}
	for i, ref := range cfg.Layers {
		name, shared, ok := parseLayerRef(ref)
		if !ok {
			return nil, fmt.Errorf("%s: layers[%d] is %q: write \"layers/NAME\" or \"../RELEASE/layers/NAME\" (one directory, no other path)", conf, i, ref)
		}
		if listed[ref] {
			return nil, fmt.Errorf("%s: layers[%d] %q is listed twice", conf, i, ref)
		}
		listed[ref] = true
		p := filepath.Join(dir, filepath.FromSlash(ref))
		if !shared && !slices.Contains(own, name) {
			return nil, fmt.Errorf("%s: layers[%d] %q names no directory under %s", conf, i, ref, filepath.Join(dir, LayersDir))
		}
		if shared {
			if st, err := os.Stat(p); err != nil || !st.IsDir() {
				return nil, fmt.Errorf("%s: layers[%d] %q: the shared layer is not a directory of the sibling release's tree", conf, i, ref)
			}
		}
		dirs = append(dirs, p)
	}
	for _, name := range own {
		if !listed[LayersDir+"/"+name] {
			return nil, fmt.Errorf("%s: layer directory %s is not in \"layers\": list it where the Dockerfile builds it, or remove it", conf, filepath.Join(dir, LayersDir, name))
		}
	}
	return dirs, nil
}

// ownLayers lists the layer directories the tree at dir introduces (none is
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
func LayerFromDir(dir string) (v1.Layer, error) {
	data, err := tarDir(dir)
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

func tarDir(dir string) ([]byte, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk layer %s: %w", dir, err)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		if err := writeEntry(tw, dir, p); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close layer tar for %s: %w", dir, err)
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, root, p string) error {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return err
	}
	name := filepath.ToSlash(rel)
	info, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	hdr := &tar.Header{
		Name:    name,
		ModTime: Epoch,
		Format:  tar.FormatPAX,
	}
	var body []byte
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

// LayerFile returns where on disk the file at path (image-relative, e.g.
// "scripts/nccl-env-profile.sh") of the source tree at dir lives: in the
// topmost declared layer that holds it, as the image's merged view would
// show it. Tests and docs read a release's files through it, so a release
// that shares a layer reads the shared copy.
func LayerFile(dir, path string) (string, error) {
	dirs, err := LayerDirs(dir)
	if err != nil {
		return "", err
	}
	for _, ld := range slices.Backward(dirs) {
		p := filepath.Join(ld, filepath.FromSlash(path))
		if _, err := os.Lstat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("reconstruction %s: no layer holds %s", dir, path)
}
