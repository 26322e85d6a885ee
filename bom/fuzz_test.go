package bom

import (
	"os"
	"strings"
	"testing"
)

// The loaders read files people edit by hand: any input must give a BOM that
// satisfies the pinning invariants or an error that names the file, never a
// panic or a half-validated value.

func FuzzParse(f *testing.F) {
	f.Add([]byte(testBOM))
	f.Add([]byte(""))
	f.Add([]byte("images: &a [*a]\n"))
	f.Add([]byte("images:\n  installer: &i\n    reference: x\n  daemon: *i\n"))
	f.Add([]byte("<<: {images: {}}\n"))
	if real, err := os.ReadFile("bom.yaml"); err == nil {
		f.Add(real)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Parse("f.yaml", data)
		if err != nil {
			if b != nil {
				t.Fatal("BOM returned with an error")
			}
			for _, fe := range fieldErrors(t, err) {
				if fe.File != "f.yaml" || fe.Problem == "" || fe.Fix == "" {
					t.Fatalf("incomplete rejection %#v", fe)
				}
			}
			return
		}
		for _, r := range b.ImageRoles() {
			img := r.Image
			if img.Tag() == "" {
				// A digest-only pin needs a source and has no version.
				if img.Source == "" || img.Version != "" || img.Repository()+"@"+img.Digest() != img.Reference {
					t.Fatalf("%s accepted without a tag: %+v", r.Name, img)
				}
			} else if img.Version != img.Tag() || img.Repository()+":"+img.Tag()+"@"+img.Digest() != img.Reference {
				t.Fatalf("%s accepted with inconsistent parts: %+v", r.Name, img)
			}
			if !strings.HasPrefix(img.Digest(), "sha256:") || len(img.Digest()) != len("sha256:")+64 {
				t.Fatalf("%s accepted with digest %q", r.Name, img.Digest())
			}
		}
	})
}

func FuzzParseReleases(f *testing.F) {
	f.Add([]byte(testReleases))
	f.Add([]byte("pairs: [{installer: a, installer: b}]\n"))
	f.Add([]byte("ncclConfigs:\n  - env: &e [*e]\n"))
	if real, err := os.ReadFile("releases.yaml"); err == nil {
		f.Add(real)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReleases("f.yaml", data)
		if err != nil {
			for _, fe := range fieldErrors(t, err) {
				if fe.File != "f.yaml" || fe.Problem == "" || fe.Fix == "" {
					t.Fatalf("incomplete rejection %#v", fe)
				}
			}
			return
		}
		seen := map[string]bool{}
		for _, p := range r.Pairs {
			if p.Installer == "" || p.Daemon == "" || seen[p.Installer] {
				t.Fatalf("accepted pair %+v", p)
			}
			seen[p.Installer] = true
		}
		for _, c := range r.NCCLConfigs {
			if !seen[c.Installer] || len(c.Env) == 0 {
				t.Fatalf("accepted config %+v", c)
			}
		}
		flags := map[string]bool{}
		for _, f := range r.RetiredDaemonFlags {
			if !strings.HasPrefix(f.Flag, "--") || strings.Contains(f.Flag, "=") || flags[f.Flag] || f.Note == "" || f.Source == "" {
				t.Fatalf("accepted retired flag %+v", f)
			}
			flags[f.Flag] = true
		}
	})
}
