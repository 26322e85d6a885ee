// Package markdown reads the fenced YAML examples out of a Markdown page,
// for every check that holds a guide's examples to what ships.
package markdown

import (
	"bufio"
	"bytes"
	"strings"
)

// Block is one fenced YAML example of a page.
type Block struct {
	Line    int    // 1-based line of the opening fence
	Info    string // the fence's info string after "yaml", e.g. "pitfall"
	Content []byte
}

// YAMLBlocks returns the page's ```yaml fences in order. Other fences
// (sh, text) are not examples of manifests and are skipped.
func YAMLBlocks(page []byte) []Block {
	var out []Block
	var cur *Block
	var body bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```yaml"):
			cur = &Block{Line: n, Info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```yaml"))}
			body.Reset()
		case cur != nil && trimmed == "```":
			cur.Content = append([]byte(nil), body.Bytes()...)
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line + "\n")
		}
	}
	return out
}
