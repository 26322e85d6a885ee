package bom

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
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
type locator struct{ root *yaml.Node }

func newLocator(root *yaml.Node) *locator { return &locator{root: root} }

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
	shape := "a mapping with the keys " + strings.Join(yamlstrict.Fields(rootType), ", ")
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

	c := &checker{file: file, lines: loc}
	for _, f := range yamlstrict.Walk(root, rootType, yamlstrict.WalkOptions{FollowAliases: true}) {
		c.errs = append(c.errs, structuralError(file, f))
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	typed := yaml.NewDecoder(bytes.NewReader(data))
	typed.KnownFields(true)
	if err := typed.Decode(out); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			// Unreachable while the walk covers the types; reported, not
			// swallowed, so that a gap fails closed.
			return nil, &FieldError{File: file, Problem: "could not be decoded (" + err.Error() + ")",
				Fix: "this is a bug in the loader's checks; please report it with the file", Err: err}
		}
		// yaml.v3 refuses some documents only when it decodes them
		// (excessive aliasing): placed like any syntax error.
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

// tagWords names YAML node tags in the user's terms.
var tagWords = map[string]string{
	"!!seq": "a list", "!!map": "a mapping", "!!str": "a string", "!!int": "a number",
	"!!float": "a number", "!!bool": "true/false", "!!null": "empty", "!!timestamp": "a date",
	"!!binary": "binary data",
}

// kindFixes says what a value of a Go kind is written as, and how.
var kindFixes = map[reflect.Kind]struct{ want, fix string }{
	reflect.String: {"a single value", "write a single value on this line, quoted if it contains ': ' or starts with a YAML special character"},
	reflect.Int:    {"a whole number", "write a whole number, e.g. 12"},
	reflect.Bool:   {"true or false", "write true or false, unquoted"},
	reflect.Slice:  {"a list", "write it as a list, one entry per line starting with '- '"},
	reflect.Struct: {"a mapping", "write it as key: value lines"},
}

// structuralError words a structural problem the walk found.
func structuralError(file string, f yamlstrict.Finding) *FieldError {
	fe := &FieldError{File: file, Line: f.Line, Path: f.Path}
	switch f.Kind {
	case yamlstrict.UnknownKey:
		parent := yamlstrict.ParentPath(f.Path)
		allowed := yamlstrict.Fields(f.Want)
		fe.Problem, fe.Fix = "is not a known field", "remove it, or correct its name"
		// By spelling only: bom's keys extend one another (module,
		// moduleVersion; controllerImage, controllerVersion), so a prefix
		// would pick by order.
		if s := yamlstrict.ClosestByEdits(f.Node.Value, allowed); s != "" {
			fe.Fix = fmt.Sprintf("did you mean %q?", s)
		}
		if len(allowed) > 0 {
			where := parent
			if where == "" {
				where = "the top level"
			}
			fe.Fix += fmt.Sprintf(" (fields allowed in %s: %s)", where, strings.Join(allowed, ", "))
		}
	case yamlstrict.DuplicateKey:
		fe.Problem = fmt.Sprintf("is defined twice (first at line %d)", f.First)
		fe.Fix = "delete one of the two; which one YAML tools keep differs, so the file must not rely on it"
	case yamlstrict.KeyNotAName:
		fe.Problem = "has a key that is " + tagWord(f.Node.ShortTag()) + ", not a name"
		fe.Fix = "write the keys as plain names: " + strings.Join(yamlstrict.Fields(f.Want), ", ")
	case yamlstrict.WrongKind:
		k, ok := kindFixes[f.Want.Kind()]
		if !ok {
			k.want, k.fix = "a "+f.Want.Kind().String(), "check the value's type"
		}
		fe.Fix = k.fix
		if f.Want.Kind() == reflect.Struct {
			fe.Fix += " (keys: " + strings.Join(yamlstrict.Fields(f.Want), ", ") + ")"
		}
		found := tagWord(f.Node.ShortTag())
		fe.Problem = fmt.Sprintf("must be %s, not %s", k.want, found)
		if f.Path == "" {
			fe.Problem = fmt.Sprintf("the document must be %s, not %s", k.want, found)
		}
	}
	return fe
}

func tagWord(tag string) string {
	if w, ok := tagWords[tag]; ok {
		return w
	}
	return yamlstrict.Quote(tag)
}
