package guestconfig

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The files come from an image: any input must give rules that satisfy
// Parse's promises or errors that name the file, never a panic.
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*", "*.textproto"))
	if err != nil {
		f.Fatal(err)
	}
	more, err := filepath.Glob(filepath.Join("testdata", "*", "*", "*.textproto"))
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range append(seeds, more...) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(header + `env_var: [{check_policy: POLICY_ENFORCED name: "A" value: "1"}, <name: 'B' value: "" check_policy: POLICY_RECOMMENDED>]`))
	f.Add([]byte(header + `env_var { check_policy: - 2 name: "A" "B" value: "\x00" }`))
	f.Add([]byte(header + "env_var {\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := Parse("f", data)
		if err != nil {
			if rules != nil {
				t.Fatal("rules returned with an error")
			}
			for _, p := range problems(t, err) {
				if p.File != "f" || p.Problem == "" || p.Fix == "" || p.Line < 0 || p.Line > bytes.Count(data, []byte("\n"))+1 {
					t.Fatalf("incomplete rejection %#v", p)
				}
				if !errors.Is(p, ErrTooLarge) && !errors.Is(p, ErrSyntax) && !errors.Is(p, ErrFormatChanged) && !errors.Is(p, ErrRule) {
					t.Fatalf("rejection without a class: %v", p)
				}
				if strings.Contains(p.Problem, "where the parser found") {
					t.Fatalf("line scanner disagrees with the parser: %v", p)
				}
				if len(p.Error()) > 1000 {
					t.Fatalf("unbounded message (%d bytes)", len(p.Error()))
				}
			}
			return
		}
		if len(rules) == 0 {
			t.Fatal("no rules and no error")
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		seen := map[string]bool{}
		for _, r := range rules {
			if !envNameRE.MatchString(r.Name) || seen[r.Name] {
				t.Fatalf("accepted name %q (seen before: %v)", r.Name, seen[r.Name])
			}
			seen[r.Name] = true
			if r.Policy != Enforced && r.Policy != Recommended {
				t.Fatalf("accepted policy %q", r.Policy)
			}
			if r.Line < 1 || r.Line > lines {
				t.Fatalf("rule %s at line %d of %d", r.Name, r.Line, lines)
			}
		}
	})
}
