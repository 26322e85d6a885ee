package yamlstrict

import (
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestLocator(t *testing.T) {
	const doc = `images:
  daemon:
    reference: r
    version:
pairs:
  - installer: v1
    env: &env
      - {name: A, value: "1"}
  - installer: v2
    env: *env
`
	d, err := ParseDocument([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	root, _ := Root(d)
	l := NewLocator(root)
	for _, tc := range []struct {
		path           string
		line           int
		found, present bool
	}{
		{"", 1, true, true},
		{"images", 1, true, true},
		{"images.daemon.reference", 3, true, true},
		{"images.daemon.version", 4, true, false}, // written, empty
		{"images.daemon.digest", 2, false, false}, // missing: where it belongs
		{"images.worker.reference", 1, false, false},
		{"pairs[1]", 9, true, true},
		{"pairs[1].installer", 9, true, true},
		{"pairs[2]", 5, false, false},
		{"pairs.installer", 5, false, false}, // a key of a list
		{"images[0]", 1, false, false},       // an index of a mapping
		// Through the alias, the anchored value's lines.
		{"pairs[1].env[0].name", 8, true, true},
		{"pairs[1].env[1]", 10, false, false},
	} {
		v, line, found := l.Find(tc.path)
		if line != tc.line || found != tc.found {
			t.Errorf("Find(%q) = line %d, found %v; want line %d, found %v", tc.path, line, found, tc.line, tc.found)
		}
		if found && v == nil {
			t.Errorf("Find(%q) found no value", tc.path)
		}
		if got, _ := l.Line(tc.path); got != tc.line {
			t.Errorf("Line(%q) = %d, want %d", tc.path, got, tc.line)
		}
		if l.Exists(tc.path) != tc.found || l.Present(tc.path) != tc.present {
			t.Errorf("Exists(%q), Present = %v, %v; want %v, %v", tc.path, l.Exists(tc.path), l.Present(tc.path), tc.found, tc.present)
		}
	}
	var none *Locator
	if _, line, found := none.Find("images"); line != 0 || found {
		t.Errorf("a nil Locator found images at line %d", line)
	}
}

func TestSegmentsInvertJoinAndIndexPath(t *testing.T) {
	p := IndexPath(JoinPath(IndexPath(JoinPath("", "pairs"), 12), "env"), 0)
	got := segments(JoinPath(p, "name"))
	want := []segment{{key: "pairs", index: -1}, {index: 12}, {key: "env", index: -1}, {index: 0}, {key: "name", index: -1}}
	if len(got) != len(want) {
		t.Fatalf("segments(%q) = %v, want %v", p, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("segments(%q)[%d] = %v, want %v", p, i, got[i], want[i])
		}
	}
}

func TestDecodeKnown(t *testing.T) {
	type doc struct {
		A int `yaml:"a"`
	}
	var d doc
	if err := DecodeKnown([]byte("a: 1\n"), &d); err != nil || d.A != 1 {
		t.Errorf("DecodeKnown = %+v, %v", d, err)
	}
	err := DecodeKnown([]byte("a: 1\nb: 2\n"), &doc{})
	var te *yaml.TypeError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "field b not found") {
		t.Errorf("an unknown field: err = %v, want a *yaml.TypeError naming b", err)
	}
}

func TestSyntaxError(t *testing.T) {
	data := []byte("a: 1\nb: [1, 2\n")
	err := ParseAll(data)
	e := SyntaxError(data, err, ParseAll, Hints{{Fragment: "did not find expected", Fix: "close it"}}, "fallback")
	if e.Line != 2 || !strings.HasPrefix(e.Problem, "is not valid YAML (did not find expected") || e.Fix != "close it" || e.Err != err || e.File != "" || e.Path != "" {
		t.Errorf("SyntaxError = %+v", e)
	}
	if e := SyntaxError(data, err, ParseAll, nil, "fallback"); e.Fix != "fallback" {
		t.Errorf("without a matching hint, Fix = %q, want the fallback", e.Fix)
	}
}
