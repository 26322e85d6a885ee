package tcpxogen_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// modulePath is spelled out rather than read from go.mod so that the rules
// and the loader take it as a parameter, which the fixture module needs.
const modulePath = "github.com/tcpxogen/tcpxogen"

// maxTrackedSize is the largest file the repository may track. The biggest
// legitimate files (vendored CRDs) are under 1 MiB; a build output such as
// the 127 MB tcpxogen executable (issue 33) is far over it.
const maxTrackedSize = 2 * 1024 * 1024

// magicLen is how much of each file is read to recognise an executable: a
// PE's signature sits at e_lfanew, which linkers put well inside 4 KiB.
const magicLen = 4096

// TestNothingBuiltIsTracked keeps build outputs out of git: the root
// tcpxogen executable was committed once by accident (issue 33).
func TestNothingBuiltIsTracked(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("git is not installed, so the tracked files cannot be listed: %v", err)
	}
	if out, err := exec.CommandContext(t.Context(), "git", "rev-parse", "--is-inside-work-tree").CombinedOutput(); err != nil {
		t.Skipf("not in a git work tree (no .git), so the tracked files cannot be listed: %v: %s", err, bytes.TrimSpace(out))
	}
	files, err := trackedFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("git ls-files listed no files, so nothing would be checked")
	}
	for _, name := range files {
		info, err := os.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree but not yet in the index
		}
		if err != nil {
			t.Error(err)
			continue
		}
		// Symlinks, and gitlinks that show up as directories, have no
		// content of their own to check.
		if !info.Mode().IsRegular() {
			continue
		}
		if info.Size() > maxTrackedSize {
			t.Errorf("%s is %.1f MiB, over the %d MiB limit for tracked files: remove it with git rm --cached %s, and generate or download it instead",
				name, float64(info.Size())/(1<<20), maxTrackedSize>>20, name)
		}
		if inTestdata(name) {
			continue // fixtures may be real binaries: the extractor reads images
		}
		head, err := readHead(name)
		if err != nil {
			t.Error(err)
			continue
		}
		if kind := executableKind(head); kind != "" {
			t.Errorf("%s: a tracked executable (%s): remove it with git rm --cached %s and add its path to .gitignore", name, kind, name)
		}
	}
}

func trackedFiles(ctx context.Context) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", "ls-files", "-z")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var files []string
	for name := range strings.SplitSeq(string(out), "\x00") {
		if name != "" {
			files = append(files, name)
		}
	}
	return files, nil
}

// inTestdata reports whether a slash-separated path from git has a segment
// named testdata, the one place the go tool ignores.
func inTestdata(name string) bool {
	return slices.Contains(strings.Split(name, "/"), "testdata")
}

func readHead(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, magicLen)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return buf[:n], nil
}

// executableKind names the executable format whose magic head starts with,
// or returns "" when it is none of those the go tool can write.
func executableKind(head []byte) string {
	if bytes.HasPrefix(head, []byte("\x7fELF")) {
		return "ELF"
	}
	if len(head) >= 4 {
		// Read big-endian, the magic of a little-endian Mach-O shows up
		// byte-swapped, hence both spellings of each.
		switch binary.BigEndian.Uint32(head) {
		case 0xfeedface, 0xcefaedfe, 0xfeedfacf, 0xcffaedfe:
			return "Mach-O"
		case 0xcafebabe, 0xcafebabf:
			// A Java class file shares 0xcafebabe; it is a build output
			// too, so telling the two apart would change nothing.
			return "Mach-O universal"
		}
	}
	if isPE(head) {
		return "PE"
	}
	return ""
}

// isPE needs the PE signature as well as "MZ", since plenty of text starts
// with those two letters.
func isPE(head []byte) bool {
	const lfanewAt = 0x3c
	if len(head) < lfanewAt+4 || !bytes.HasPrefix(head, []byte("MZ")) {
		return false
	}
	off := int64(binary.LittleEndian.Uint32(head[lfanewAt:]))
	if off+4 > int64(len(head)) {
		return false
	}
	return bytes.Equal(head[off:off+4], []byte("PE\x00\x00"))
}

func TestExecutableKind(t *testing.T) {
	elf := append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 57)...)
	macho64 := binary.LittleEndian.AppendUint32(nil, 0xfeedfacf) // as an arm64 or amd64 Mach-O starts
	macho64 = append(macho64, make([]byte, 28)...)
	fat := binary.BigEndian.AppendUint32(nil, 0xcafebabe)
	fat = binary.BigEndian.AppendUint32(fat, 2)

	pe := make([]byte, 0x200)
	copy(pe, "MZ")
	binary.LittleEndian.PutUint32(pe[0x3c:], 0x80)
	copy(pe[0x80:], "PE\x00\x00")

	mzText := []byte("MZ is how this README starts, and it is long enough to reach offset 0x3c and beyond it.\n")
	// An e_lfanew past what was read cannot be checked, so it must not count.
	peFar := slices.Clone(pe)
	binary.LittleEndian.PutUint32(peFar[0x3c:], magicLen)

	for _, tc := range []struct {
		name string
		head []byte
		want string
	}{
		{"ELF", elf, "ELF"},
		{"Mach-O 64", macho64, "Mach-O"},
		{"Mach-O universal", fat, "Mach-O universal"},
		{"PE", pe, "PE"},
		{"MZ text without a PE signature", mzText, ""},
		{"MZ with e_lfanew past the head", peFar, ""},
		{"plain text", []byte("package main\n\nfunc main() {}\n"), ""},
		{"empty", nil, ""},
		{"short", []byte("\x7fEL"), ""},
	} {
		if got := executableKind(tc.head); got != tc.want {
			t.Errorf("%s: executableKind = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestInTestdata(t *testing.T) {
	for name, want := range map[string]bool{
		"testdata/daemon/bash":         true,
		"internal/bump/testdata/x.bin": true,
		"tcpxogen":                     false,
		"tools/testdatagen/main":       false,
		"docs/mytestdata":              false,
	} {
		if got := inTestdata(name); got != want {
			t.Errorf("inTestdata(%q) = %v, want %v", name, got, want)
		}
	}
}

// pkgRecord is what the layering rules need of a package, as go list
// prints it.
type pkgRecord struct {
	ImportPath string
	Name       string
	Imports    []string // production imports only: tests may reach up
}

// layers lists the module's top-level folders bottom to top; the index is
// the layer's number. A package is in a layer when its module-relative path
// is the folder or under it, as the go tool's "x/..." pattern also matches x.
var layers = []string{"internal", "bom", "generated", "runtimes", "validators", "pipeline", "tools"}

const toolsLayer = "tools"

// layerOf returns the index into layers of a module-relative path, or -1.
func layerOf(rel string) int {
	for i, l := range layers {
		if rel == l || strings.HasPrefix(rel, l+"/") {
			return i
		}
	}
	return -1
}

// isCommand reports whether a package under tools/ is a command: a main
// package, or a *cmd package a main dispatches to. name is "" when only the
// import path is known, so the *cmd suffix alone decides.
func isCommand(rel, name string) bool {
	li := layerOf(rel)
	if li < 0 || layers[li] != toolsLayer {
		return false
	}
	return name == "main" || strings.HasSuffix(path.Base(rel), "cmd")
}

// layeringViolations applies the layering rules to the packages of the
// module at modPath and returns one sorted line per problem.
func layeringViolations(modPath string, pkgs []pkgRecord) []string {
	rel := func(importPath string) (string, bool) {
		if importPath == modPath {
			return ".", true
		}
		r, ok := strings.CutPrefix(importPath, modPath+"/")
		return r, ok
	}
	names := make(map[string]string, len(pkgs))
	for _, p := range pkgs {
		names[p.ImportPath] = p.Name
	}

	var out []string
	// An imported path in no layer is reported once, like a listed one:
	// otherwise a new top-level folder would be named once per importer.
	unlayered := map[string]bool{}
	noLayer := func(r string) {
		if !unlayered[r] {
			unlayered[r] = true
			out = append(out, fmt.Sprintf("%s is in no layer: put it under internal/, bom, generated, runtimes, validators, pipeline or tools", r))
		}
	}
	for _, p := range pkgs {
		from, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		fromLayer := layerOf(from)
		if fromLayer < 0 {
			noLayer(from)
		}
		for _, imp := range p.Imports {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			toLayer := layerOf(to)
			switch {
			case toLayer < 0:
				noLayer(to)
			case fromLayer < 0:
				// Already reported: with no layer there is no floor to compare.
			case toLayer > fromLayer:
				out = append(out, fmt.Sprintf("%s imports %s: %s (layer %d) may not import %s (layer %d); move the shared code down or the importer up",
					from, to, layers[fromLayer], fromLayer, layers[toLayer], toLayer))
			case p.Name == "main" && strings.HasPrefix(to, from+"/"):
				// A binary dispatching to its own subcommands is what its
				// *cmd packages are for.
			case isCommand(from, p.Name) && isCommand(to, names[imp]):
				out = append(out, fmt.Sprintf("%s imports %s: commands never import each other; move what they share into a library below tools/ or into tools/internal/cli",
					from, to))
			}
		}
	}
	slices.Sort(out)
	return out
}

// loadPackages lists the packages of the module in dir with go list.
// env is added to the environment, e.g. to keep a fixture off the network.
// When some packages fail to load (a bad import header, a forbidden
// internal import) it returns what it read along with the error, so a
// broken package mid-refactor does not hide the layering of the rest.
func loadPackages(ctx context.Context, dir, modPath string, env ...string) ([]pkgRecord, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-e", "-json=ImportPath,Name,GoFiles,CgoFiles,Imports,Error", "./...")
	cmd.Dir = dir
	// GOWORK=off: the check is about this module, whatever go.work is around.
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list in %s: %w: %s", dir, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var pkgs []pkgRecord
	var loadErrs []error
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Name       string
			GoFiles    []string
			CgoFiles   []string
			Imports    []string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list output in %s: %w", dir, err)
		}
		if p.Error != nil {
			// Reported rather than skipped: a package whose imports could not
			// be read could hide an edge.
			loadErrs = append(loadErrs, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err))
		}
		if p.ImportPath != modPath && !strings.HasPrefix(p.ImportPath, modPath+"/") {
			return nil, fmt.Errorf("go list in %s printed %s, which is not in module %s", dir, p.ImportPath, modPath)
		}
		// A directory with only tests, such as the module root holding this
		// file, has no production imports and nothing can import it.
		if len(p.GoFiles) == 0 && len(p.CgoFiles) == 0 {
			continue
		}
		pkgs = append(pkgs, pkgRecord{ImportPath: p.ImportPath, Name: p.Name, Imports: p.Imports})
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list in %s found no packages of %s", dir, modPath)
	}
	if err := errors.Join(loadErrs...); err != nil {
		return pkgs, fmt.Errorf("go list in %s could not load every package: %w", dir, err)
	}
	return pkgs, nil
}

// TestLayering keeps the module's import graph pointing downwards, so each
// layer can be read, tested and moved without the ones above it.
func TestLayering(t *testing.T) {
	pkgs, err := loadPackages(t.Context(), ".", modulePath)
	if err != nil {
		t.Error(err)
	}
	for _, v := range layeringViolations(modulePath, pkgs) {
		t.Error(v)
	}
}

// TestLayeringCatchesUpwardImport runs the same loader and rules over a
// fixture module that breaks each rule once, so TestLayering cannot pass by
// checking nothing.
func TestLayeringCatchesUpwardImport(t *testing.T) {
	// -mod=mod and GOPROXY=off: the fixture has no go.sum and no
	// dependencies, so nothing needs or may use the network.
	pkgs, err := loadPackages(t.Context(), "testdata/layering", "example.com/layered", "GOFLAGS=-mod=mod", "GOPROXY=off")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"runtimes imports validators/check: runtimes (layer 3) may not import validators (layer 4); move the shared code down or the importer up",
		"tools/b/internal/xcmd imports tools/b/internal/ycmd: commands never import each other; move what they share into a library below tools/ or into tools/internal/cli",
	}
	if diff := cmp.Diff(want, layeringViolations("example.com/layered", pkgs)); diff != "" {
		t.Errorf("violations in testdata/layering (-want +got):\n%s", diff)
	}
}

func TestLayeringViolations(t *testing.T) {
	const mod = "example.com/m"
	pkgs := []pkgRecord{
		{ImportPath: mod + "/internal/a", Name: "a", Imports: []string{"fmt", mod + "/internal/b"}},
		{ImportPath: mod + "/internal/b", Name: "b", Imports: []string{mod + "/bom"}},
		{ImportPath: mod + "/bom", Name: "bom", Imports: []string{mod + "/internal/a"}},
		{ImportPath: mod + "/generated/x", Name: "x", Imports: []string{mod + "/bom"}},
		{ImportPath: mod + "/runtimes/r", Name: "r", Imports: []string{mod + "/generated/x", mod + "/validators/v"}},
		{ImportPath: mod + "/validators/v", Name: "v", Imports: []string{mod + "/runtimes/r", mod + "/pipeline"}},
		{ImportPath: mod + "/pipeline", Name: "pipeline", Imports: []string{mod + "/validators/v"}},
		{ImportPath: mod + "/tools/t", Name: "main", Imports: []string{mod + "/pipeline", mod + "/tools/t/internal/cli", mod + "/tools/t/internal/gocmd"}},
		{ImportPath: mod + "/tools/t/internal/cli", Name: "cli", Imports: []string{mod + "/bom"}},
		{ImportPath: mod + "/tools/t/internal/gocmd", Name: "gocmd", Imports: []string{mod + "/tools/t/internal/cli", mod + "/tools/t/internal/stopcmd"}},
		{ImportPath: mod + "/tools/t/internal/stopcmd", Name: "stopcmd", Imports: []string{mod + "/tools/u"}},
		{ImportPath: mod + "/tools/u", Name: "main"},
		{ImportPath: mod + "/foo/bar", Name: "bar", Imports: []string{mod + "/tools/u"}},
		{ImportPath: mod + "/bomx", Name: "bomx", Imports: []string{mod + "/internal/a"}},
		{ImportPath: mod + "/internal/c", Name: "c", Imports: []string{mod + "/newtop/z", "example.com/other/tools/x"}},
		{ImportPath: mod + "/internal/d", Name: "d", Imports: []string{mod + "/newtop/z"}},
		{ImportPath: mod + "/validators/w", Name: "w", Imports: []string{"example.com/m2/tools/y"}},
	}
	want := []string{
		"bomx is in no layer: put it under internal/, bom, generated, runtimes, validators, pipeline or tools",
		"foo/bar is in no layer: put it under internal/, bom, generated, runtimes, validators, pipeline or tools",
		"internal/b imports bom: internal (layer 0) may not import bom (layer 1); move the shared code down or the importer up",
		"newtop/z is in no layer: put it under internal/, bom, generated, runtimes, validators, pipeline or tools",
		"runtimes/r imports validators/v: runtimes (layer 3) may not import validators (layer 4); move the shared code down or the importer up",
		"tools/t/internal/gocmd imports tools/t/internal/stopcmd: commands never import each other; move what they share into a library below tools/ or into tools/internal/cli",
		"tools/t/internal/stopcmd imports tools/u: commands never import each other; move what they share into a library below tools/ or into tools/internal/cli",
		"validators/v imports pipeline: validators (layer 4) may not import pipeline (layer 5); move the shared code down or the importer up",
	}
	if diff := cmp.Diff(want, layeringViolations(mod, pkgs)); diff != "" {
		t.Errorf("layeringViolations (-want +got):\n%s", diff)
	}
}

// TestRegeneratorLinksNoGeneratedCode: `go generate ./...` must rewrite a
// missing or hand-broken generated/tcpxo, so the command it runs (and the
// pipeline under it) may not depend on that package: it would not compile
// first. Only runtimes/shipped links the compiled-in facts.
func TestRegeneratorLinksNoGeneratedCode(t *testing.T) {
	const emitted = modulePath + "/generated/tcpxo"
	for _, cmd := range []string{"./tools/generate", "./pipeline"} {
		out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{.ImportPath}}", cmd).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", cmd, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, modulePath+"/runtimes") {
			t.Fatalf("go list -deps %s lists no runtimes package, so this check would see nothing: %v", cmd, deps)
		}
		if slices.Contains(deps, emitted) {
			t.Errorf("%s links %s: the regenerator must build without the generated code; import runtimes, not runtimes/shipped", cmd, emitted)
		}
	}
}
