package reconstruction

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
)

// NeededFile is the name, inside a source tree, of the DT_NEEDED lists its
// placeholder libraries are written from: our belief of what each of the
// release's plugin libraries needs, not a fact (the real lists come from
// the pulled image). A tree whose libraries are all shared has none.
const NeededFile = "needed.json"

// Needed is a tree's NeededFile.
type Needed struct {
	// About says what the lists are; it must say they are our belief.
	About string `json:"about"`
	// Needed maps each library, "layers/NAME/PATH" in one of the tree's own
	// layers, to its DT_NEEDED entries in order.
	Needed map[string][]string `json:"needed"`
}

// LoadNeeded reads the NeededFile of the source tree at dir; ok is false
// when the tree has none.
func LoadNeeded(dir string) (n Needed, ok bool, err error) {
	p := filepath.Join(dir, NeededFile)
	data, err := inputfile.Read(p, inputfile.Spec{Max: inputfile.MaxData})
	if errors.Is(err, fs.ErrNotExist) {
		return Needed{}, false, nil
	}
	if err != nil {
		return Needed{}, false, fmt.Errorf("read placeholder libraries: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&n); err != nil {
		return Needed{}, false, fmt.Errorf("%s: %w (keys: about, needed)", p, err)
	}
	return n, true, nil
}

// Placeholders renders the placeholder libraries the source tree at dir
// declares in its NeededFile: each library's path in the tree
// ("layers/NAME/PATH", slash-separated) to the ELF shared object
// SharedObject writes for it, named after its file. A library must sit in
// one of the tree's own layers and not be one the tree shares (the tree
// that holds a shared library declares it). A tree without a NeededFile
// declares none.
func Placeholders(dir string) (map[string][]byte, error) {
	n, ok, err := LoadNeeded(dir)
	if err != nil || !ok {
		return nil, err
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, NeededFile)
	out := map[string][]byte{}
	for _, lib := range slices.Sorted(maps.Keys(n.Needed)) {
		if _, _, sibling, ok := parseFileRef(lib); !ok || sibling {
			return nil, fmt.Errorf("%s: library %q: write \"layers/NAME/PATH\", the library's place in one of this release's own layers", p, lib)
		}
		if src, ok := cfg.SharedFiles[lib]; ok {
			return nil, fmt.Errorf("%s: library %q is shared from %s (%s shared_files): declare it where it lives, or stop sharing it", p, lib, src, ConfigFile)
		}
		so, err := SharedObject(path.Base(lib), n.Needed[lib])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out[lib] = so
	}
	return out, nil
}

// WritePlaceholders writes the placeholder libraries of every source tree
// under each of parents (a directory holding one tree per release, such as
// testdata/installer; a tree is a directory with an image config) from the
// tree's NeededFile, rewriting a file only when its bytes differ, and
// returns the files it wrote. Nothing is written unless every tree renders.
func WritePlaceholders(parents ...string) (written []string, err error) {
	files := map[string][]byte{}
	for _, parent := range parents {
		entries, err := os.ReadDir(parent)
		if err != nil {
			return nil, fmt.Errorf("read reconstruction trees: %w", err)
		}
		for _, e := range entries {
			dir := filepath.Join(parent, e.Name())
			if _, err := os.Stat(filepath.Join(dir, ConfigFile)); !e.IsDir() || err != nil {
				continue
			}
			libs, err := Placeholders(dir)
			if err != nil {
				return nil, err
			}
			for lib, so := range libs {
				files[filepath.Join(dir, filepath.FromSlash(lib))] = so
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, files[p]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return written, fmt.Errorf("write placeholder library: %w", err)
		}
		if err := os.WriteFile(p, files[p], 0o644); err != nil {
			return written, fmt.Errorf("write placeholder library: %w", err)
		}
		written = append(written, p)
	}
	return written, nil
}
