package yamlstrict

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

type walkDoc struct {
	Name  string            `yaml:"name"`
	Count int               `yaml:"count"`
	Items []walkItem        `yaml:"items"`
	Tags  map[string]string `yaml:"tags"`
}

// walkTree nests lists without bound, as an alias bomb does.
type walkTree []walkTree

type walkItem struct {
	Key string `yaml:"key"`
}

func walkRoot(t *testing.T, src string) *yaml.Node {
	t.Helper()
	doc, err := ParseDocument([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	root, _ := Root(doc)
	return root
}

// Every structural problem is found, with its path and line, in one walk.
func TestWalkFindsEveryProblem(t *testing.T) {
	src := "name: x\ncount: many\nitems:\n  - key: a\n    kee: b\n  - [c]\nname: y\ntags: [t]\n"
	type got struct {
		Kind FindingKind
		Path string
		Line int
	}
	var gs []got
	for _, f := range Walk(walkRoot(t, src), reflect.TypeFor[walkDoc](), WalkOptions{}) {
		gs = append(gs, got{f.Kind, f.Path, f.Line})
	}
	want := []got{
		{WrongKind, "count", 2},
		{UnknownKey, "items[0].kee", 5},
		{WrongKind, "items[1]", 6},
		{DuplicateKey, "name", 7},
		{WrongKind, "tags", 8},
	}
	if !reflect.DeepEqual(gs, want) {
		t.Errorf("Walk = %+v\nwant %+v", gs, want)
	}
}

// A walk that follows aliases checks what they point at, once per target:
// a document of nested aliases costs a walk of its text, not its expansion.
func TestWalkFollowsAliasesOnce(t *testing.T) {
	// l0 is one entry; each level lists the previous one twice, so the
	// expansion of l39 has 2^39 entries.
	var b strings.Builder
	b.WriteString("l0: &l0 []\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [*l%d, *l%d]\n", i, i, i-1, i-1)
	}
	start := time.Now()
	fs := Walk(walkRoot(t, b.String()), reflect.TypeFor[map[string]walkTree](), WalkOptions{FollowAliases: true})
	if len(fs) != 0 || time.Since(start) > 5*time.Second {
		t.Errorf("Walk took %v and found %v", time.Since(start), fs)
	}
	fs = Walk(walkRoot(t, "a0: &a {kee: x}\nb: *a\n"), reflect.TypeFor[map[string]walkItem](), WalkOptions{FollowAliases: true})
	if len(fs) != 1 || fs[0].Kind != UnknownKey || fs[0].Path != "a0.kee" {
		t.Errorf("an unknown key behind an anchor: %+v, want one at a0.kee", fs)
	}
	if fs := Walk(walkRoot(t, "a0: &a {key: x}\nb: *a\n"), reflect.TypeFor[map[string]walkItem](), WalkOptions{}); len(fs) != 2 || fs[0].Kind != AliasUsed {
		t.Errorf("a walk that refuses aliases: %+v, want the anchor and the alias", fs)
	}
}
