package bom

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// maxFileSize bounds what a loader reads. The real files are a few KiB; the
// bound keeps a wrong path (a log, an image tarball) from being read whole.
const maxFileSize = 1 << 20

// path is a location in a YAML document: mapping keys, and "[i]" for list items.
type path []string

func (p path) key(k string) path { return append(p[:len(p):len(p)], k) }

func (p path) index(i int) path { return append(p[:len(p):len(p)], "["+strconv.Itoa(i)+"]") }

func (p path) String() string {
	var b strings.Builder
	for i, s := range p {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func (p path) describe() string {
	if len(p) == 0 {
		return "the top level"
	}
	return p.String()
}

func isIndex(seg string) (int, bool) {
	if !strings.HasPrefix(seg, "[") || !strings.HasSuffix(seg, "]") {
		return 0, false
	}
	i, err := strconv.Atoi(seg[1 : len(seg)-1])
	return i, err == nil
}

// locator maps YAML paths to source lines. yaml.v3 decodes into structs
// without positions, so the loader parses the file a second time into a
// yaml.Node tree and asks it where each value was written.
type locator struct {
	root *yaml.Node
	// nodes lists every physically written node in document order. Aliases are
	// not followed here: an error yaml.v3 reports at a line is in the text at
	// that line, and not expanding aliases keeps the walk linear.
	nodes []located
}

type located struct {
	path path
	key  *yaml.Node // nil for list items and the root
	node *yaml.Node
}

func newLocator(root *yaml.Node) *locator {
	l := &locator{root: root}
	var walk func(n *yaml.Node, p path, key *yaml.Node)
	walk = func(n *yaml.Node, p path, key *yaml.Node) {
		l.nodes = append(l.nodes, located{path: p, key: key, node: n})
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				walk(n.Content[i+1], p.key(k.Value), k)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				walk(item, p.index(i), nil)
			}
		}
	}
	if root != nil {
		walk(root, nil, nil)
	}
	return l
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

// find walks p through the tree, following aliases so that a value shared by
// anchor is found under every path that uses it. When p is not fully present
// it returns the line of the deepest part that is, which is where the missing
// value belongs.
func (l *locator) find(p path) (n *yaml.Node, line int, found bool) {
	if l == nil || l.root == nil {
		return nil, 0, false
	}
	n, line = l.root, l.root.Line
	for _, seg := range p {
		n = deref(n)
		if n == nil {
			return nil, line, false
		}
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Value == seg {
					next, line = n.Content[i+1], k.Line
					break
				}
			}
		case yaml.SequenceNode:
			if i, ok := isIndex(seg); ok && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
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

func (l *locator) line(p path) (int, bool) {
	_, line, found := l.find(p)
	return line, found
}

// exists reports whether p is written in the file, even with an empty value.
func (l *locator) exists(p path) bool {
	_, _, found := l.find(p)
	return found
}

// present reports whether p is written with a non-null value.
func (l *locator) present(p path) bool {
	n, _, found := l.find(p)
	return found && n != nil && n.ShortTag() != "!!null"
}

// keyAt finds the mapping key named name written on line.
func (l *locator) keyAt(line int, name string) (located, bool) {
	for _, e := range l.nodes {
		if e.key != nil && e.key.Line == line && e.key.Value == name {
			return e, true
		}
	}
	return located{}, false
}

// valueAt finds the value with the given YAML tag written on line.
func (l *locator) valueAt(line int, tag string) (located, bool) {
	for _, e := range l.nodes {
		if e.node.Line == line && e.node.ShortTag() == tag {
			return e, true
		}
	}
	return located{}, false
}

// decodeStrict decodes data into out (a pointer to a struct) and returns the
// locator for later semantic checks. It rejects what yaml.v3 alone would
// accept silently: an empty file, a second document, unknown fields.
func decodeStrict(file string, data []byte, out any) (loc *locator, err error) {
	// A data file must never crash the tool, even through a yaml.v3 bug.
	defer yamlstrict.Recover(func(problem string) {
		loc, err = nil, &FieldError{File: file, Problem: problem,
			Fix: "check that this is the YAML file you meant to load, and report the parser failure"}
	})
	rootType := reflect.TypeOf(out).Elem()
	shape := "a mapping with the keys " + strings.Join(yamlFields(rootType), ", ")
	if len(data) > maxFileSize {
		return nil, &FieldError{File: file, Problem: fmt.Sprintf("is %d bytes, larger than the %d-byte limit for a data file", len(data), maxFileSize),
			Fix: "check the path: this file should be " + shape}
	}

	doc, err := yamlstrict.ParseDocument(data)
	if doc != nil {
		// An empty first document is reported ahead of anything after it:
		// the data is missing, and a stray second document or a syntax error
		// further down is secondary.
		if _, ok := yamlstrict.Root(doc); !ok {
			return nil, emptyDocument(file, doc.Line, shape)
		}
	}
	var second *yamlstrict.SecondDocumentError
	switch {
	case errors.Is(err, yamlstrict.ErrNoDocument):
		return nil, emptyDocument(file, 0, shape)
	case errors.As(err, &second):
		return nil, &FieldError{File: file, Line: second.Line, Problem: "a second YAML document starts here",
			Fix: "keep exactly one document per file: remove the '---' separator and what follows, or merge it into the first document"}
	case err != nil:
		return nil, syntaxError(file, data, err, yamlstrict.ParseAll)
	}
	root, _ := yamlstrict.Root(doc)
	loc = newLocator(root)

	typed := yaml.NewDecoder(bytes.NewReader(data))
	typed.KnownFields(true)
	if err := typed.Decode(out); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, loc.structuralErrors(file, rootType, te)
		}
		return nil, syntaxError(file, data, err, func(b []byte) error {
			d := yaml.NewDecoder(bytes.NewReader(b))
			d.KnownFields(true)
			return d.Decode(reflect.New(rootType).Interface())
		})
	}
	return loc, nil
}

func emptyDocument(file string, line int, shape string) error {
	return &FieldError{File: file, Line: line, Problem: "holds no data",
		Fix: "write " + shape + " (restore the file from version control if it was emptied by mistake)"}
}

// syntaxFixes maps fragments of yaml.v3 syntax errors to advice; the first
// match wins, so more specific fragments come first. The data files' advice
// is worded for them (and covers anchors and quotes), so it is bom's own
// table rather than yamlstrict.SyntaxHints.
var syntaxFixes = yamlstrict.Hints{
	{Fragment: "tab character", Fix: "indent with spaces; YAML does not allow tabs in indentation"},
	{Fragment: "mapping values are not allowed", Fix: "quote the value if it contains ': ', and check that this line is not indented under a plain value"},
	{Fragment: "cannot start any token", Fix: "quote the value: it starts with a character YAML reserves (@, `, %, !, &, *, |, >)"},
	{Fragment: "unknown anchor", Fix: "define the anchor with &NAME before using *NAME, or quote the value if '*' is meant literally"},
	{Fragment: "unexpected end of stream", Fix: "close the quote or bracket opened on this line"},
	{Fragment: "did not find expected ',' or", Fix: "close the bracket or brace opened on this line, and separate entries with ','"},
	{Fragment: "did not find expected key", Fix: "align this line with the other keys of its mapping, or start every entry of a list with '- '"},
	{Fragment: "could not find expected ':'", Fix: "write the entry as key: value (a space is required after ':')"},
}

// syntaxError rewords err, a syntax error that parse reported for data, with
// the line it is really on (yaml.v3's own number can be a line early).
func syntaxError(file string, data []byte, err error, parse func([]byte) error) error {
	line, msg := yamlstrict.LocateSyntaxError(data, err, parse)
	return &FieldError{File: file, Line: line, Problem: "is not valid YAML (" + msg + ")",
		Fix: syntaxFixes.Fix(msg, "fix the YAML syntax"), Err: err}
}

// structuralRewrites turns yaml.v3's type errors, which name Go types, into
// messages that name YAML paths and say how to fix the file.
var structuralRewrites = []struct {
	re      *regexp.Regexp
	rewrite func(l *locator, root reflect.Type, line int, m []string) (path, string, string)
}{
	{regexp.MustCompile(`^field (.*) not found in type \S+$`), unknownField},
	{regexp.MustCompile(`^mapping key ("(?:[^"\\]|\\.)*") already defined at line (\d+)$`), duplicateKey},
	{regexp.MustCompile(`^field (.*) already set in type \S+$`), duplicateField},
	{regexp.MustCompile("^cannot unmarshal (!!\\w+)(?: `.*`)? into .+$"), wrongKind},
}

func (l *locator) structuralErrors(file string, root reflect.Type, te *yaml.TypeError) error {
	c := &checker{file: file, lines: l}
	for _, raw := range te.Errors {
		line, msg := yamlstrict.SplitMessage(raw)
		fe := &FieldError{File: file, Line: line, Problem: msg, Fix: "correct the value at this line"}
		for _, r := range structuralRewrites {
			if m := r.re.FindStringSubmatch(msg); m != nil {
				var p path
				p, fe.Problem, fe.Fix = r.rewrite(l, root, line, m)
				fe.Field = p.String()
				break
			}
		}
		c.errs = append(c.errs, fe)
	}
	return c.err()
}

func unknownField(l *locator, root reflect.Type, line int, m []string) (path, string, string) {
	name := m[1]
	var parent path
	if e, ok := l.keyAt(line, name); ok {
		parent = e.path[:len(e.path)-1]
	}
	allowed := yamlFields(typeAt(root, parent))
	fix := "remove it, or correct its name"
	// By spelling only: bom's keys extend one another (module, moduleVersion;
	// controllerImage, controllerVersion), so a prefix would pick by order.
	if s := yamlstrict.ClosestByEdits(name, allowed); s != "" {
		fix = fmt.Sprintf("did you mean %q?", s)
	}
	if len(allowed) > 0 {
		fix += fmt.Sprintf(" (fields allowed in %s: %s)", parent.describe(), strings.Join(allowed, ", "))
	}
	return parent.key(name), "is not a known field", fix
}

func duplicateKey(l *locator, _ reflect.Type, line int, m []string) (path, string, string) {
	name, err := strconv.Unquote(m[1])
	if err != nil {
		name = m[1]
	}
	return duplicate(l, line, name, m[2])
}

func duplicateField(l *locator, _ reflect.Type, line int, m []string) (path, string, string) {
	return duplicate(l, line, m[1], "")
}

func duplicate(l *locator, line int, name, first string) (path, string, string) {
	p := path{name}
	if e, ok := l.keyAt(line, name); ok {
		p = e.path
	}
	what := "is defined twice"
	if first != "" {
		what += " (first at line " + first + ")"
	}
	return p, what, "delete one of the two; which one YAML tools keep differs, so the file must not rely on it"
}

// yamlKinds names YAML node tags and Go kinds in the user's terms.
var (
	tagWords = map[string]string{
		"!!seq": "a list", "!!map": "a mapping", "!!str": "a string", "!!int": "a number",
		"!!float": "a number", "!!bool": "true/false", "!!null": "empty", "!!timestamp": "a date",
		"!!binary": "binary data",
	}
	kindFixes = map[reflect.Kind]struct{ want, fix string }{
		reflect.String: {"a single value", "write a single value on this line, quoted if it contains ': ' or starts with a YAML special character"},
		reflect.Slice:  {"a list", "write it as a list, one entry per line starting with '- '"},
		reflect.Struct: {"a mapping", "write it as key: value lines"},
	}
)

func wrongKind(l *locator, root reflect.Type, line int, m []string) (path, string, string) {
	var p path
	if e, ok := l.valueAt(line, m[1]); ok {
		p = e.path
	}
	found := tagWords[m[1]]
	if found == "" {
		found = m[1]
	}
	t := typeAt(root, p)
	if t == nil {
		return p, "has the wrong type (" + found + ")", "check the indentation of this line"
	}
	k, ok := kindFixes[t.Kind()]
	if !ok {
		k.want, k.fix = "a "+t.Kind().String(), "check the value's type"
	}
	fix := k.fix
	if t.Kind() == reflect.Struct {
		fix += " (keys: " + strings.Join(yamlFields(t), ", ") + ")"
	}
	what := fmt.Sprintf("must be %s, not %s", k.want, found)
	if len(p) == 0 {
		what = fmt.Sprintf("the document must be %s, not %s", k.want, found)
	}
	return p, what, fix
}

// typeAt resolves a YAML path to the Go type decoded there, or nil.
func typeAt(t reflect.Type, p path) reflect.Type {
	for _, seg := range p {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t == nil:
			return nil
		case t.Kind() == reflect.Slice:
			if _, ok := isIndex(seg); !ok {
				return nil
			}
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			f, ok := fieldByYAMLName(t, seg)
			if !ok {
				return nil
			}
			t = f.Type
		default:
			return nil
		}
	}
	return t
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name
}

func fieldByYAMLName(t reflect.Type, name string) (reflect.StructField, bool) {
	for f := range yamlStructFields(t) {
		if yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlFields lists the keys a struct accepts, in declaration order.
func yamlFields(t reflect.Type) []string {
	var names []string
	for f := range yamlStructFields(t) {
		names = append(names, yamlName(f))
	}
	return names
}

func yamlStructFields(t reflect.Type) func(func(reflect.StructField) bool) {
	return func(yield func(reflect.StructField) bool) {
		if t == nil || t.Kind() != reflect.Struct {
			return
		}
		for f := range t.Fields() {
			if !f.IsExported() || f.Tag.Get("yaml") == "-" {
				continue
			}
			if !yield(f) {
				return
			}
		}
	}
}
