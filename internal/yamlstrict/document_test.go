package yamlstrict

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestParseDocument(t *testing.T) {
	for _, tc := range []struct {
		name, in   string
		wantDoc    bool   // a document node is returned
		wantErr    string // "" for none; "none" for ErrNoDocument; "second N" for a *SecondDocumentError at line N; else a substring of yaml.v3's error
		wantHasDat bool   // Root reports data (only checked when wantDoc)
	}{
		{"empty input", "", false, "none", false},
		{"only comments and blank lines", "# a comment\n\n  # another\n", false, "none", false},
		{"one mapping", "a: 1\nb: [x, y]\n", true, "", true},
		{"explicit start and end", "---\na: 1\n...\n", true, "", true},
		{"null document", "~\n", true, "", false},
		{"separator alone", "---\n", true, "", false},
		{"second document", "a: 1\n---\nb: 2\n", true, "second 2", true}, // the line of its "---"
		// An empty first document still comes back, so that a reader can
		// rank it ahead of the second document.
		{"empty first document then a second", "---\n---\na: 1\n", true, "second 2", false},
		{"syntax error in the first document", "a: [1, 2\n", false, "did not find expected ',' or ']'", false},
		{"syntax error after a separator", "a: 1\n---\nb: [\n", true, "did not find expected node content", true},
		{"unknown anchor", "a: *x\n", false, "unknown anchor 'x' referenced", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := ParseDocument([]byte(tc.in))
			if (doc != nil) != tc.wantDoc {
				t.Fatalf("doc = %v, want a document: %v (err %v)", doc, tc.wantDoc, err)
			}
			var second *SecondDocumentError
			switch {
			case tc.wantErr == "":
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
			case tc.wantErr == "none":
				if !errors.Is(err, ErrNoDocument) {
					t.Fatalf("err = %v, want ErrNoDocument", err)
				}
			case strings.HasPrefix(tc.wantErr, "second "):
				if !errors.As(err, &second) || fmt.Sprint("second ", second.Line) != tc.wantErr {
					t.Fatalf("err = %#v, want %s", err, tc.wantErr)
				}
			default:
				if err == nil || errors.Is(err, ErrNoDocument) || errors.As(err, &second) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want yaml.v3's syntax error containing %q", err, tc.wantErr)
				}
			}
			if doc == nil {
				return
			}
			if doc.Kind != yaml.DocumentNode {
				t.Errorf("doc.Kind = %v, want a document node", doc.Kind)
			}
			if _, ok := Root(doc); ok != tc.wantHasDat {
				t.Errorf("Root ok = %v, want %v", ok, tc.wantHasDat)
			}
		})
	}
}

func TestRoot(t *testing.T) {
	parse := func(in string) *yaml.Node {
		t.Helper()
		doc, err := ParseDocument([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}

	// After a '---' line the null is a line below the document's start;
	// Root returns it so that a reader can point at either.
	doc := parse("---\n~\n")
	root, ok := Root(doc)
	if ok || root == nil || doc.Line != 1 || root.Line != 2 {
		t.Errorf(`Root("---\n~\n") = %v (line %d), %v; document line %d; want the null at line 2, false, document at line 1`,
			root, lineOf(root), ok, doc.Line)
	}

	root, ok = Root(parse("# header\n{}\n"))
	if !ok || root.Kind != yaml.MappingNode || root.Line != 2 {
		t.Errorf("Root of an empty mapping = %v, %v; want the mapping at line 2, true", root, ok)
	}

	// yaml.v3 does not produce a document without content, but a hand-built
	// tree can be one; it holds no data and has no root to point at.
	if root, ok := Root(&yaml.Node{Kind: yaml.DocumentNode, Line: 1}); root != nil || ok {
		t.Errorf("Root of a document without content = %v, %v; want nil, false", root, ok)
	}
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

func TestSecondDocumentErrorMessage(t *testing.T) {
	if got, want := (&SecondDocumentError{Line: 7}).Error(), "yamlstrict: line 7: a second YAML document starts here"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// panicky panics while yaml.v3 decodes into it, as a bug inside the parser
// would: yaml.v3 recovers only its own errors and re-panics everything else.
type panicky struct{}

func (*panicky) UnmarshalYAML(*yaml.Node) error { panic("index out of range [3] with length 3") }

func TestRecover(t *testing.T) {
	t.Run("panic inside yaml.v3", func(t *testing.T) {
		got, err := recovered(func() error { return yaml.Unmarshal([]byte("a: 1\n"), &panicky{}) })
		if want := "could not be parsed: the YAML parser failed (index out of range [3] with length 3)"; got != want || err != nil {
			t.Errorf("problem = %q, err = %v; want %q and no error", got, err, want)
		}
	})
	t.Run("runtime error", func(t *testing.T) {
		got, _ := recovered(func() error {
			var m map[string]int
			m["x"] = 1 // assignment to entry in nil map
			return nil
		})
		if !strings.HasPrefix(got, "could not be parsed: the YAML parser failed (assignment to entry in nil map") {
			t.Errorf("problem = %q", got)
		}
	})
	t.Run("no panic", func(t *testing.T) {
		want := errors.New("an ordinary error")
		got, err := recovered(func() error { return want })
		if got != "" || err != want {
			t.Errorf("problem = %q, err = %v; want fail not called and the function's own error", got, err)
		}
	})
}

// recovered runs fn the way a reader does, with Recover deferred, and
// returns the problem Recover reported ("" if it did not call fail) and fn's
// own error.
func recovered(fn func() error) (problem string, err error) {
	defer Recover(func(p string) { problem = p })
	return "", fn()
}
