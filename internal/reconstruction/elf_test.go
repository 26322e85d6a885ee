package reconstruction

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateLibraries = flag.Bool("update-libraries", false, "rewrite the bundled trees' placeholder libraries from their needed.json")

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
// lists), and every shared object a tree owns is declared there: no text
// placeholder is left for extraction to refuse.
func TestPlaceholderLibraries(t *testing.T) {
	trees, err := filepath.Glob(filepath.Join("..", "..", "testdata", "installer", "v*"))
	if err != nil || len(trees) == 0 {
		t.Fatalf("installer trees: %v (%v)", trees, err)
	}
	for _, tree := range trees {
		var own []string
		err := filepath.WalkDir(filepath.Join(tree, LayersDir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && strings.Contains(d.Name(), ".so") && filepath.Base(filepath.Dir(p)) == "plugins" {
				rel, _ := filepath.Rel(tree, p)
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
		data, err := os.ReadFile(filepath.Join(tree, "needed.json"))
		if os.IsNotExist(err) && len(own) == 0 {
			continue // a tree that owns no library shares its sibling's
		}
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			About  string              `json:"about"`
			Needed map[string][]string `json:"needed"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s/needed.json: %v", tree, err)
		}
		if !strings.Contains(doc.About, "belief") {
			t.Errorf("%s/needed.json must say the lists are our belief", tree)
		}
		declared := slices.Sorted(func(yield func(string) bool) {
			for k := range doc.Needed {
				if !yield(k) {
					return
				}
			}
		})
		slices.Sort(own)
		if !slices.Equal(declared, own) {
			t.Errorf("%s: needed.json declares %v, the tree's layers hold %v", tree, declared, own)
		}
		for _, rel := range declared {
			want, err := SharedObject(filepath.Base(rel), doc.Needed[rel])
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(tree, filepath.FromSlash(rel))
			if *updateLibraries {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, want, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s is not the shared object needed.json declares (%v): run go test ./internal/reconstruction -run TestPlaceholderLibraries -update-libraries", p, err)
			}
		}
	}
}
