package reconstruction

import (
	"bytes"
	"debug/elf"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSharedObjectReadsBack(t *testing.T) {
	needed := []string{"libcudart.so.12", "libc.so.6", "libc.so.6"}
	b, err := SharedObject("libnccl-net.so", needed)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.DynString(elf.DT_NEEDED)
	if err != nil || !slices.Equal(got, needed) {
		t.Errorf("DT_NEEDED = %v, %v; want %v", got, err, needed)
	}
	if so, err := f.DynString(elf.DT_SONAME); err != nil || !slices.Equal(so, []string{"libnccl-net.so"}) {
		t.Errorf("DT_SONAME = %v, %v", so, err)
	}
	if f.Type != elf.ET_DYN || f.Machine != elf.EM_X86_64 {
		t.Errorf("type %v machine %v, want a x86-64 shared object", f.Type, f.Machine)
	}
	again, _ := SharedObject("libnccl-net.so", needed)
	if !bytes.Equal(b, again) {
		t.Error("SharedObject is not deterministic")
	}
	if _, err := SharedObject("x.so", []string{"a\x00b"}); err == nil {
		t.Error("a soname with a NUL byte was written")
	}
}

// The bundled trees' plugin libraries are ELF shared objects written from the
// DT_NEEDED lists their needed.json declares (our belief of each release's
// lists), committed as `go generate ./...` writes them (Placeholders, through
// tools/placeholders); and every shared object a tree holds is declared
// there: no text placeholder is left for extraction to refuse. A library a
// tree shares is declared by the tree that holds it. The libraries are
// those of the directory extraction reads them from: /plugins of TCPXO's
// installer, the payload's lib64/ of gIB's. Every kind of bundled tree is
// walked, so a tree that holds no library is held to declaring none.
func TestPlaceholderLibraries(t *testing.T) {
	libDirs := map[string]string{"installer": "plugins", "gib-installer": "lib64"}
	total := 0
	for _, k := range bundledKinds {
		for _, tree := range bundledTrees(t, k.kind, k.minTrees) {
			total += checkPlaceholderLibraries(t, tree, libDirs[k.kind])
		}
	}
	if total == 0 {
		t.Fatal("no tree declares a placeholder library; the check checked nothing")
	}
}

// checkPlaceholderLibraries holds one tree's shared objects in libDir
// directories (none when libDir is "") to its needed.json, and returns how
// many it checked.
func checkPlaceholderLibraries(t *testing.T, tree, libDir string) (total int) {
	t.Helper()
	var own []string
	err := filepath.WalkDir(filepath.Join(tree, LayersDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.Contains(d.Name(), ".so") && filepath.Base(filepath.Dir(p)) == libDir {
			rel, err := filepath.Rel(tree, p)
			if err != nil {
				return err
			}
			own = append(own, filepath.ToSlash(rel))
		}
		if os.IsNotExist(err) {
			return nil
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok, err := LoadNeeded(tree); err != nil {
		t.Fatal(err)
	} else if ok && !strings.Contains(n.About, "belief") {
		t.Errorf("%s/%s must say the lists are our belief", tree, NeededFile)
	}
	libs, err := Placeholders(tree)
	if err != nil {
		t.Fatal(err)
	}
	declared := slices.Sorted(maps.Keys(libs))
	slices.Sort(own)
	if !slices.Equal(declared, own) {
		t.Errorf("%s: %s declares %v, the tree's layers hold %v", tree, NeededFile, declared, own)
	}
	for _, rel := range declared {
		total++
		p := filepath.Join(tree, filepath.FromSlash(rel))
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, libs[rel]) {
			t.Errorf("%s is not the shared object %s declares (%v): run go generate ./... (generated/generate.go's placeholders directive)", p, NeededFile, err)
		}
	}
	return total
}

// WritePlaceholders writes what Placeholders renders, only where the bytes
// differ, and writes nothing when a tree's needed.json is wrong.
func TestWritePlaceholders(t *testing.T) {
	root := t.TempDir()
	write := func(p, body string) {
		t.Helper()
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := func(layers, shared string) string {
		return `{"entrypoint": ["/e"], "description": "tcpxogen reconstruction under test", "layers": ` + layers + `, "shared_files": ` + shared + `}`
	}
	write("v1/image.json", cfg(`["layers/70-plugin", "layers/80-pre"]`, `{}`))
	write("v1/layers/80-pre/plugins/a3plus.textproto", "# placeholder\n")
	write("v1/needed.json", `{"about": "our belief", "needed": {
		"layers/70-plugin/plugins/libnccl-net.so": ["libcudart.so.12", "libc.so.6"],
		"layers/80-pre/plugins/libnccl-tuner.so": ["libc.so.6"]}}`)
	write("v2/image.json", cfg(`["../v1/layers/70-plugin", "layers/80-pre"]`, `{"layers/80-pre/plugins/libnccl-tuner.so": "../v1/layers/80-pre/plugins/libnccl-tuner.so"}`))
	write("v2/layers/80-pre/plugins/a3plus.textproto", "# placeholder v2\n")
	write("notes/README.md", "not a tree\n")
	write("GUIDE.md", "not a tree\n")

	got, err := WritePlaceholders(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "v1/layers/70-plugin/plugins/libnccl-net.so"), filepath.Join(root, "v1/layers/80-pre/plugins/libnccl-tuner.so")}
	if !slices.Equal(got, want) {
		t.Fatalf("wrote %v, want %v", got, want)
	}
	so, err := os.ReadFile(want[0])
	if err != nil {
		t.Fatal(err)
	}
	if f, err := elf.NewFile(bytes.NewReader(so)); err != nil {
		t.Fatal(err)
	} else if needed, _ := f.DynString(elf.DT_NEEDED); !slices.Equal(needed, []string{"libcudart.so.12", "libc.so.6"}) {
		t.Errorf("DT_NEEDED = %v", needed)
	}
	// The v2 image packs v1's library where it shares it.
	if _, err := Build(filepath.Join(root, "v2")); err != nil {
		t.Fatal(err)
	}
	if got, err := WritePlaceholders(root); err != nil || len(got) != 0 {
		t.Fatalf("second run wrote %v, %v; want nothing", got, err)
	}
	write("v1/layers/80-pre/plugins/libnccl-tuner.so", "stale\n")
	if got, err := WritePlaceholders(root); err != nil || !slices.Equal(got, want[1:]) {
		t.Fatalf("after a hand edit wrote %v, %v; want %v", got, err, want[1:])
	}

	for name, tc := range map[string]struct{ needed, want string }{
		"shared library": {`{"layers/80-pre/plugins/libnccl-tuner.so": ["libc.so.6"]}`, `is shared from ../v1/layers/80-pre/plugins/libnccl-tuner.so`},
		"outside layers": {`{"plugins/libx.so": ["libc.so.6"]}`, `write "layers/NAME/PATH"`},
		"in a sibling":   {`{"../v1/layers/80-pre/plugins/libx.so": ["libc.so.6"]}`, `write "layers/NAME/PATH"`},
		"empty soname":   {`{"layers/80-pre/plugins/libx.so": [""]}`, `empty or holds a NUL`},
	} {
		t.Run(name, func(t *testing.T) {
			write("v2/needed.json", `{"about": "our belief", "needed": `+tc.needed+`}`)
			write("v1/layers/70-plugin/plugins/libnccl-net.so", "stale\n")
			_, err := WritePlaceholders(root)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), NeededFile) {
				t.Fatalf("err = %v, want one naming %s and %q", err, NeededFile, tc.want)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "v1/layers/70-plugin/plugins/libnccl-net.so")); string(b) != "stale\n" {
				t.Error("a tree's library was written although another tree's needed.json is wrong")
			}
		})
	}
}
