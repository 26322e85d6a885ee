package bomcheck

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/internal/markdown"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
)

// ManifestFiles are the emitted manifests every image and wiring check
// covers, repo-relative. A missing optional one is skipped by the checks
// that need it.
var ManifestFiles = append([]string{runtimes.GoldenRuntime, runtimes.GoldenComponents, benchmark.GoldenPath}, gibManifests()...)

// gibManifests are the gIB fabric's goldens: its components, and one
// runtime per machine type it serves with the benchmark derived from it.
func gibManifests() []string {
	out := []string{runtimes.GoldenRDMAComponents}
	for _, mt := range fabric.GIB.MachineTypeNames() {
		out = append(out, runtimes.GoldenRDMARuntime(mt), runtimes.GoldenRDMABenchmark(mt))
	}
	return out
}

// DocFiles are the user guides whose YAML examples are manifests too: the
// TCPXO guide and the gIB one.
var DocFiles = []string{"docs/tcpxo-workloads.md", "docs/gib-workloads.md"}

// Manifest is one emitted file, split into objects.
type Manifest struct {
	Path    string
	Raw     []byte
	Objects []*unstructured.Unstructured
}

// Tree is everything the checks read, loaded once. A field whose file
// failed to load is nil and its error is kept for the checks that need it.
type Tree struct {
	Root    string
	Options Options

	BOM          *bom.BOM
	BOMErr       error
	Releases     *bom.Releases
	ReleasesErr  error
	Overrides    *bom.Overrides
	OverridesErr error

	GeneratedRaw []byte
	Generated    *facts.Facts
	GeneratedErr error

	// GIB are the committed gIB facts (generated/gib).
	GIB    *facts.Facts
	GIBErr error

	Manifests    []Manifest
	ManifestErrs map[string]error

	GoMod    []byte
	GoModErr error
}

// Load reads the tree at root.
func Load(root string, opts Options) *Tree {
	t := &Tree{Root: root, Options: opts, ManifestErrs: map[string]error{}}
	at := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	t.BOM, t.BOMErr = bom.Load(at(bom.RepoPath))
	t.Releases, t.ReleasesErr = bom.LoadReleases(at(bom.ReleasesRepoPath))
	t.Overrides, t.OverridesErr = bom.LoadOverrides(at(bom.OverridesRepoPath))
	t.GeneratedRaw, t.GeneratedErr = readSource(at(generated.FactsFile))
	if t.GeneratedErr == nil {
		t.Generated, t.GeneratedErr = emit.Parse(generated.FactsFile, t.GeneratedRaw)
	}
	var gibRaw []byte
	if gibRaw, t.GIBErr = readSource(at(generated.GIBFactsFile)); t.GIBErr == nil {
		t.GIB, t.GIBErr = emit.ParseLiteral(generated.GIBFactsFile, gibRaw)
	}
	for _, rel := range ManifestFiles {
		m, err := loadManifest(at(rel), rel)
		if err != nil {
			t.ManifestErrs[rel] = err
			continue
		}
		t.Manifests = append(t.Manifests, m)
	}
	for _, rel := range DocFiles {
		ms, err := loadDocExamples(at(rel), rel)
		if err != nil {
			t.ManifestErrs[rel] = err
			continue
		}
		t.Manifests = append(t.Manifests, ms...)
	}
	t.GoMod, t.GoModErr = readSource(at("go.mod"))
	return t
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

func loadManifest(path, rel string) (Manifest, error) {
	raw, err := readSource(path)
	if err != nil {
		return Manifest{}, err
	}
	return parseManifest(raw, rel)
}

func parseManifest(raw []byte, rel string) (Manifest, error) {
	m := Manifest{Path: rel, Raw: raw}
	for i, doc := range docSeparator.Split(string(raw), -1) {
		if len(bytes.TrimSpace(stripComments([]byte(doc)))) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return Manifest{}, fmt.Errorf("%s document %d: %w", rel, i+1, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return Manifest{}, fmt.Errorf("%s document %d: %w", rel, i+1, err)
		}
		m.Objects = append(m.Objects, u)
	}
	return m, nil
}

func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// manifest returns the loaded manifest at rel, or nil.
func (t *Tree) manifest(rel string) *Manifest {
	for i := range t.Manifests {
		if t.Manifests[i].Path == rel {
			return &t.Manifests[i]
		}
	}
	return nil
}

// loadDocExamples reads every YAML example of a guide as a manifest named
// after its line, so an image pinned in the documentation is held to the
// same rule as one in a golden.
func loadDocExamples(path, rel string) ([]Manifest, error) {
	page, err := readSource(path)
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, b := range markdown.YAMLBlocks(page) {
		m, err := parseManifest(b.Content, fmt.Sprintf("%s:%d", rel, b.Line))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// readSource reads a file of the checked tree through the input helper: a
// FIFO or device where a generated file or golden belongs would otherwise
// hang the check or exhaust its memory.
func readSource(path string) ([]byte, error) {
	return inputfile.Read(path, inputfile.Spec{Max: inputfile.MaxSource})
}
