package lint

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// docLines locates field paths in a file's YAML documents, so a finding
// about "spec.trainer.numNodes" can say which line of the file to fix.
// Documents are numbered as the schema proof numbers them (the API
// machinery's YAML reader, empty documents counted).
type docLines map[int]*yaml.Node

// locate indexes every document of data; a document it cannot parse is left
// out, and its findings simply carry no line.
func locate(data []byte) docLines {
	out := docLines{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	pos := 0
	for n := 1; ; n++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) || err != nil {
			return out
		}
		i := bytes.Index(data[pos:], raw)
		if i < 0 {
			continue
		}
		offset := bytes.Count(data[:pos+i], []byte("\n"))
		pos += i + len(raw)
		var doc yaml.Node
		if yaml.Unmarshal(raw, &doc) != nil || len(doc.Content) == 0 {
			continue
		}
		shift(&doc, offset)
		out[n] = doc.Content[0]
	}
}

// shift moves every node's line by offset lines, from document-relative to
// file-relative.
func shift(n *yaml.Node, offset int) {
	n.Line += offset
	for _, c := range n.Content {
		shift(c, offset)
	}
}

var pathStep = regexp.MustCompile(`([^.\[\]]+)|\[(\d+)\]`)

// line returns the line of the field at path (the API server's notation,
// "spec.trainer.env[3].name") in document doc: the deepest part of the
// path the document has, 0 when it has none of it.
func (d docLines) line(doc int, path string) int {
	n, ok := d[doc]
	if !ok || path == "" {
		return 0
	}
	line := 0
	for _, m := range pathStep.FindAllStringSubmatch(path, -1) {
		var next *yaml.Node
		switch {
		case m[2] != "" && n.Kind == yaml.SequenceNode:
			if i, err := strconv.Atoi(m[2]); err == nil && i < len(n.Content) {
				next = n.Content[i]
			}
		case m[1] != "" && n.Kind == yaml.MappingNode:
			for k := 0; k+1 < len(n.Content); k += 2 {
				if n.Content[k].Value == m[1] {
					line, next = n.Content[k].Line, n.Content[k+1]
					break
				}
			}
		}
		if next == nil {
			return line
		}
		if m[2] != "" {
			line = next.Line // a list item: its own line; a key: the key's
		}
		n = next
	}
	return line
}

// at prefixes a finding with its line, "line 12: ", when it is known.
func (d docLines) at(doc int, path string) string {
	if l := d.line(doc, path); l > 0 {
		return "line " + strconv.Itoa(l) + ": "
	}
	return ""
}
