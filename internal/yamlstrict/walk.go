package yamlstrict

import (
	"iter"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// FindingKind says what Walk found wrong with the structure of a document.
type FindingKind int

const (
	// UnknownKey is a mapping key the struct has no field for.
	UnknownKey FindingKind = iota
	// DuplicateKey is a mapping key written a second time.
	DuplicateKey
	// KeyNotAName is a mapping key that is not a scalar.
	KeyNotAName
	// WrongKind is a value of the wrong kind: a list where a mapping
	// belongs, text where a number does.
	WrongKind
	// AliasUsed is an anchor or alias, in a walk that refuses them.
	AliasUsed
)

// Finding is one structural problem Walk found. Readers word it themselves,
// so that their messages stay their own; Walk only says what and where.
type Finding struct {
	Kind FindingKind
	// Path is the YAML path of the offending key's value, or of the value.
	Path string
	// Line is where it is written: the key's line for key findings.
	Line int
	// Node is the offending value (WrongKind, AliasUsed) or key.
	Node *yaml.Node
	// Want is the Go type expected at Path (WrongKind) or the struct the key
	// is not a field of (UnknownKey).
	Want reflect.Type
	// First is the line of the first of two duplicate keys.
	First int
}

// WalkOptions adjust Walk to a reader.
type WalkOptions struct {
	// FollowAliases walks through aliases (an anchored value shared under
	// several paths); when false, anchors and aliases are AliasUsed.
	FollowAliases bool
	// Scalar says whether a scalar node may be decoded into a value of type
	// t (a kind other than struct, slice or map); nil is ScalarDecodes.
	Scalar func(n *yaml.Node, t reflect.Type) bool
}

// Walk checks the node tree of a document against the Go type its reader
// decodes it into, through the types' yaml tags: unknown and duplicate
// keys, and values of the wrong kind, every one with its path and line.
// yaml.v3's own decode reports these as English text naming Go types, and
// stops at the first unknown field; after a walk without findings a strict
// decode (KnownFields) cannot fail on them.
func Walk(root *yaml.Node, t reflect.Type, o WalkOptions) []Finding {
	if o.Scalar == nil {
		o.Scalar = ScalarDecodes
	}
	w := &walker{o: o, aliased: map[aliasTarget]bool{}}
	w.walk(root, t, "")
	return w.found
}

type walker struct {
	o     WalkOptions
	found []Finding
	// aliased records the anchored values walked, directly or through an
	// alias, by the type they were walked as: each is checked once, so that a document of
	// nested aliases (a "billion laughs") costs a walk of what is written,
	// not of its expansion.
	aliased map[aliasTarget]bool
}

type aliasTarget struct {
	n *yaml.Node
	t reflect.Type
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		if !w.o.FollowAliases {
			w.found = append(w.found, Finding{Kind: AliasUsed, Path: path, Line: n.Line, Node: n})
			return
		}
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		at := aliasTarget{n, t}
		if n == nil || w.aliased[at] {
			return
		}
		w.aliased[at] = true
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // absent: the reader's semantic checks say whether it is required
	}
	wrong := func() {
		w.found = append(w.found, Finding{Kind: WrongKind, Path: path, Line: n.Line, Node: n, Want: t})
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			wrong()
			return
		}
		w.mapping(n, path, func(k string) (reflect.Type, bool) { return Field(t, k) }, t)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			wrong()
			return
		}
		w.mapping(n, path, func(string) (reflect.Type, bool) { return t.Elem(), true }, t)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			wrong()
			return
		}
		for i, item := range n.Content {
			w.walk(item, t.Elem(), IndexPath(path, i))
		}
	case reflect.Interface:
		// Anything decodes into an interface.
	default:
		if n.Kind != yaml.ScalarNode || !w.o.Scalar(n, t) {
			wrong()
		}
	}
}

// mapping checks a mapping's keys. The first of duplicate keys is walked, so
// the rest of the document is still checked.
func (w *walker) mapping(n *yaml.Node, path string, field func(string) (reflect.Type, bool), t reflect.Type) {
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode && w.o.FollowAliases && k.Alias != nil {
			k = k.Alias // an aliased name is that name
		}
		if k.Kind != yaml.ScalarNode {
			w.found = append(w.found, Finding{Kind: KeyNotAName, Path: path, Line: k.Line, Node: k, Want: t})
			continue
		}
		p := JoinPath(path, k.Value)
		if line, dup := first[k.Value]; dup {
			w.found = append(w.found, Finding{Kind: DuplicateKey, Path: p, Line: k.Line, Node: k, First: line})
			continue
		}
		first[k.Value] = k.Line
		ft, known := field(k.Value)
		if !known {
			w.found = append(w.found, Finding{Kind: UnknownKey, Path: p, Line: k.Line, Node: k, Want: t})
			continue
		}
		w.walk(v, ft, p)
	}
}

// ScalarDecodes says whether yaml.v3 decodes the scalar n into a t: any
// scalar into text, integers into integer types, numbers into floats and
// true/false into booleans.
func ScalarDecodes(n *yaml.Node, t reflect.Type) bool {
	tag := n.ShortTag()
	switch t.Kind() {
	case reflect.String:
		return tag != "!!binary"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return tag == "!!int"
	case reflect.Float32, reflect.Float64:
		return tag == "!!int" || tag == "!!float"
	case reflect.Bool:
		return tag == "!!bool"
	}
	return false
}

// Field returns the type of the field of struct t that yaml key k decodes
// into.
func Field(t reflect.Type, k string) (reflect.Type, bool) {
	for f, name := range fields(t) {
		if name == k {
			return f.Type, true
		}
	}
	return nil, false
}

// Fields lists the keys struct t accepts, in declaration order, for
// messages.
func Fields(t reflect.Type) []string {
	var names []string
	for _, name := range fields(t) {
		names = append(names, name)
	}
	return names
}

// fields yields the fields yaml.v3 decodes into, with their keys.
func fields(t reflect.Type) iter.Seq2[reflect.StructField, string] {
	return func(yield func(reflect.StructField, string) bool) {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			return
		}
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			switch {
			case !f.IsExported() || name == "-":
				continue
			case name == "":
				name = strings.ToLower(f.Name)
			}
			if !yield(f, name) {
				return
			}
		}
	}
}
