package bump

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// edit is one scalar of bom.yaml to replace, by its key path.
type edit struct {
	path  []string
	value string
}

// repin replaces the scalars at each edit's path in data, in place: the
// yaml.v3 node tree only locates them, and the bytes around them (comments,
// blank lines, key order, quoting) are kept exactly, which re-encoding the
// tree would not do (yaml.v3 drops blank lines and re-indents).
func repin(name string, data []byte, edits []edit) ([]byte, error) {
	doc, err := yamlstrict.ParseDocument(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	root, ok := yamlstrict.Root(doc)
	if !ok {
		return nil, fmt.Errorf("%s holds no document", name)
	}
	type span struct {
		start, end int
		text       string
	}
	lines := lineStarts(data)
	var spans []span
	for _, e := range edits {
		n := lookup(root, e.path)
		where := strings.Join(e.path, ".")
		if n == nil || n.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s has no %s to rewrite: restore the file's images section (git checkout %s)", name, where, bom.RepoPath)
		}
		if n.Line < 1 || n.Line > len(lines) {
			return nil, fmt.Errorf("%s:%d: %s is outside the file", name, n.Line, where)
		}
		start := lines[n.Line-1] + n.Column - 1
		var raw, text string
		switch n.Style {
		case 0:
			raw, text = n.Value, e.value
		case yaml.DoubleQuotedStyle:
			raw, text = `"`+n.Value+`"`, `"`+e.value+`"`
		case yaml.SingleQuotedStyle:
			raw, text = "'"+n.Value+"'", "'"+e.value+"'"
		}
		if raw == "" || start < 0 || start+len(raw) > len(data) || string(data[start:start+len(raw)]) != raw {
			return nil, fmt.Errorf("%s:%d: %s is written in a form bump cannot rewrite in place (escapes, a block scalar or a tag): write it as a plain scalar on one line", name, n.Line, where)
		}
		spans = append(spans, span{start, start + len(raw), text})
	}
	// From the end, so earlier offsets stay valid.
	slices.SortFunc(spans, func(a, b span) int { return b.start - a.start })
	out := bytes.Clone(data)
	for _, s := range spans {
		out = slices.Concat(out[:s.start], []byte(s.text), out[s.end:])
	}
	return out, nil
}

func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func lookup(n *yaml.Node, path []string) *yaml.Node {
	for _, k := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}
