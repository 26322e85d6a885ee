package yamlstrict

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Locator answers where a YAML path is written in a document, for the
// semantic checks a reader runs after decoding: yaml.v3 decodes into
// structs without positions, so the reader asks the node tree it walked.
// Paths are in the grammar JoinPath and IndexPath write ("pairs[2].env",
// "" for the document), which cannot tell a key containing '.' or '[' from
// a nested path; the readers' keys are field names, which never do.
//
// Aliases are followed, so that a value shared by anchor is found under
// every path that uses it. The zero Locator, and a nil one, find nothing.
type Locator struct{ root *yaml.Node }

// NewLocator locates paths in the document whose top node is root (from
// Root).
func NewLocator(root *yaml.Node) *Locator { return &Locator{root: root} }

// Find walks path through the tree and returns the value written there and
// the line of its key (of the entry, for a list entry; of the value, for
// the document). When path is not fully written it returns found false and
// the value and line of the deepest part that is, which is where the
// missing value belongs.
func (l *Locator) Find(path string) (value *yaml.Node, line int, found bool) {
	if l == nil || l.root == nil {
		return nil, 0, false
	}
	n, line := l.root, l.root.Line
	for _, seg := range segments(path) {
		n = deref(n)
		if n == nil {
			return nil, line, false
		}
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			if seg.index >= 0 {
				break
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Value == seg.key {
					next, line = n.Content[i+1], k.Line
					break
				}
			}
		case yaml.SequenceNode:
			if seg.index >= 0 && seg.index < len(n.Content) {
				next = n.Content[seg.index]
				line = next.Line
			}
		}
		if next == nil {
			return n, line, false
		}
		n = next
	}
	return deref(n), line, true
}

// Line is the line of path (Find's), or of the deepest part of it that is
// written, and whether all of it is.
func (l *Locator) Line(path string) (line int, found bool) {
	_, line, found = l.Find(path)
	return line, found
}

// Exists reports whether path is written, even with an empty value.
func (l *Locator) Exists(path string) bool {
	_, _, found := l.Find(path)
	return found
}

// Present reports whether path is written with a non-null value.
func (l *Locator) Present(path string) bool {
	n, _, found := l.Find(path)
	return found && n != nil && n.ShortTag() != "!!null"
}

// segment is one step of a path: a mapping key, or a list index (key "").
type segment struct {
	key   string
	index int // -1 for a key
}

// segments splits a path JoinPath and IndexPath wrote into its steps. A
// malformed index ("[x]") is a key no mapping has, so it is not found.
func segments(path string) []segment {
	var segs []segment
	for path != "" {
		switch {
		case path[0] == '.':
			path = path[1:]
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				end = len(path) - 1
			}
			i, err := strconv.Atoi(path[1:end])
			if err != nil || i < 0 {
				segs = append(segs, segment{key: path[:end+1], index: -1})
			} else {
				segs = append(segs, segment{index: i})
			}
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			segs = append(segs, segment{key: path[:end], index: -1})
			path = path[end:]
		}
	}
	return segs
}

// maxAliasHops guards against alias chains; yaml.v3 never builds one longer
// than a single hop, so reaching the limit means a malformed tree.
const maxAliasHops = 8

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxAliasHops; i++ {
		n = n.Alias
	}
	return n
}
