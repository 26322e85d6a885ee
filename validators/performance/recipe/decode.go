package recipe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// decoder reads a recipe in two passes over one parse:
//
//  1. a structural walk of the yaml.Node tree against the Go types (through
//     their yaml tags), which is where every problem gets its line and YAML
//     path: yaml.v3's own errors carry a line but no path, and stop at the
//     first unknown field;
//  2. a strict decode (yaml.v3 Decoder with KnownFields) into Recipe, which
//     after a clean walk cannot fail. It is kept as the final word, so that a
//     gap in the walk can cost a precise message but never admit a field the
//     types do not have.
//
// The walk also records each path's node, so the semantic checks that follow
// can point at the line of the value they reject.
type decoder struct {
	file  string
	errs  []*Error
	nodes map[string]*yaml.Node // YAML path → value node ("" is the root)
	keys  map[string]int        // YAML path → line of its key, for mapping fields
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, nodes: map[string]*yaml.Node{}, keys: map[string]int{}}
}

// add records a problem at the line of path's node, or of its nearest
// recorded ancestor when path itself is absent (a missing field is reported
// where its parent is).
func (d *decoder) add(path, problem, fix string) *Error {
	return d.addAt(d.lineOf(path), path, problem, fix)
}

func (d *decoder) addAt(line int, path, problem, fix string) *Error {
	e := &Error{File: d.file, Line: line, Path: path, Problem: problem, Fix: fix}
	d.errs = append(d.errs, e)
	return e
}

func (d *decoder) result() error { return joinErrors(d.file, d.errs) }

// lineOf returns the line of path's key (or, for list entries, of the
// entry), walking up to the nearest ancestor the document has. The key line
// is preferred because a list or mapping value starts on the line after it.
func (d *decoder) lineOf(path string) int {
	for {
		if line, ok := d.keys[path]; ok {
			return line
		}
		if n, ok := d.nodes[path]; ok {
			return n.Line
		}
		if path == "" {
			return 0
		}
		path = parentPath(path)
	}
}

// parentPath strips the last ".key" or "[i]" from a path.
func parentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// shape is the expected document, for messages about its overall form.
const shape = "apiVersion: " + APIVersion + ", kind: " + Kind + ", then criteria, components, configuration and constraints"

// decode parses data and runs both passes; ok is false when the document is
// too broken for the semantic checks to say anything useful.
func (d *decoder) decode(data []byte) (r *Recipe, ok bool) {
	// yaml.v3 re-panics on internal errors it does not recognise; input must
	// never crash the tool, so that becomes a rejection.
	defer func() {
		if p := recover(); p != nil {
			d.addAt(0, "", fmt.Sprintf("could not be parsed: the YAML parser failed (%v)", p),
				"check that this is the recipe you meant to load; a recipe has "+shape)
			r, ok = nil, false
		}
	}()
	if len(data) > MaxSize {
		d.addAt(0, "", fmt.Sprintf("is over the %d-byte limit for a recipe", MaxSize),
			"check the path: a recipe is a short YAML file with "+shape)
		return nil, false
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.addAt(0, "", "is empty", "write a recipe: "+shape)
		} else {
			d.syntaxError(data, err)
		}
		return nil, false
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.syntaxError(data, err)
		return nil, false
	default:
		d.addAt(next.Line, "", "has a second YAML document here",
			"keep exactly one document: remove the '---' separator and what follows it")
		return nil, false
	}
	if len(doc.Content) == 0 || doc.Content[0].ShortTag() == "!!null" {
		d.addAt(doc.Line, "", "holds no data", "write a recipe: "+shape)
		return nil, false
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		d.addAt(root.Line, "", "is "+kindWord(root)+", not a mapping", "write a recipe: "+shape)
		return nil, false
	}

	d.walk(root, reflect.TypeFor[Recipe](), "")
	if len(d.errs) > 0 {
		return nil, false
	}

	r = &Recipe{}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(r); err != nil {
		// Unreachable while the walk covers the types; reported, not
		// swallowed, so that a gap fails closed.
		d.addAt(yamlErrorLine(err), "", "could not be decoded ("+err.Error()+")",
			"this is a bug in the recipe reader's checks; please report it with the recipe")
		return nil, false
	}
	return r, true
}

// walk checks n against type t: mappings against the struct's yaml fields
// (unknown and duplicate keys), lists against slices, and scalars against
// strings. It records each visited node under its path.
func (d *decoder) walk(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		// Rejected rather than resolved: a recipe is short, an alias makes
		// the line of a value ambiguous, and expanding aliases is how YAML
		// bombs multiply a small file.
		d.addAt(n.Line, path, "uses a YAML anchor or alias", "write the value out in full")
		return
	}
	d.nodes[path] = n
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	null := n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
	switch t.Kind() {
	case reflect.Struct:
		if null {
			return // absent; the semantic checks say whether it is required
		}
		if n.Kind != yaml.MappingNode {
			d.addAt(n.Line, path, "is "+kindWord(n)+", not a mapping",
				"write it as a mapping with the fields "+orList(fieldNames(t)))
			return
		}
		d.mapping(n, t, path)
	case reflect.Slice:
		if null {
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.addAt(n.Line, path, "is "+kindWord(n)+", not a list",
				"write one entry per line, each starting with '- '")
			return
		}
		for i, item := range n.Content {
			d.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.String:
		d.scalar(n, t, path)
	default:
		// Unreachable: the recipe types hold only the kinds above.
		d.addAt(n.Line, path, fmt.Sprintf("has Go type %s, which the recipe reader does not handle", t),
			"this is a bug in the recipe reader; please report it")
	}
}

// mapping checks a mapping's keys. The first of duplicate keys is walked, so
// the rest of the document is still checked.
func (d *decoder) mapping(n *yaml.Node, t reflect.Type, path string) {
	fields := fieldTypes(t)
	names := fieldNames(t)
	where := path
	if where == "" {
		where = "a recipe"
	}
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.addAt(k.Line, path, "has a key that is "+kindWord(k)+", not a name",
				"write the keys as plain names: "+orList(names))
			continue
		}
		p := joinPath(path, k.Value)
		if line, dup := first[k.Value]; dup {
			d.addAt(k.Line, p, fmt.Sprintf("is set twice (first at line %d)", line),
				"delete one of the two; YAML tools disagree on which one wins, so the recipe must not rely on either")
			continue
		}
		first[k.Value] = k.Line
		d.keys[p] = k.Line
		ft, known := fields[k.Value]
		if !known {
			d.addAt(k.Line, p, "is not a known field", unknownFieldFix(k.Value, names, where))
			continue
		}
		d.walk(v, ft, p)
	}
}

// scalar checks a string field. Only text is accepted: a value YAML reads as
// a number, boolean or date is a string only by accident of spelling, and
// other YAML readers (sigs.k8s.io/yaml, used by kubectl) would convert it. A
// Threshold also takes a plain number (value: 300). Null reads as "", which
// the semantic checks report as missing.
func (d *decoder) scalar(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.ScalarNode {
		d.addAt(n.Line, path, "is "+kindWord(n)+", not a single value", "write one value on the line of its key")
		return
	}
	switch tag := n.ShortTag(); {
	case tag == "!!str", tag == "!!null":
	case t == reflect.TypeFor[Threshold]() && (tag == "!!int" || tag == "!!float"):
	default:
		key := path[strings.LastIndexAny(path, ".")+1:]
		d.addAt(n.Line, path, "is "+kindWord(n)+", not text",
			"quote the value if it is meant as text, e.g. "+key+": "+strconv.Quote(n.Value))
	}
}

// fieldTypes maps a struct's yaml keys to their field types.
func fieldTypes(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		if name := yamlName(f); name != "" {
			out[name] = f.Type
		}
	}
	return out
}

// fieldNames lists a struct's yaml keys in declaration order, for messages.
func fieldNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if name := yamlName(f); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// yamlName is the key yaml.v3 uses for a field; "" for fields it skips.
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return strings.ToLower(f.Name)
	}
	return name
}

func unknownFieldFix(name string, allowed []string, where string) string {
	list := "the fields of " + where + " are " + orList(allowed)
	switch s := closest(name, allowed); {
	case name == "<<":
		return "merge keys are not supported: write the fields out; " + list
	case s != "":
		return "did you mean " + s + "? " + list
	}
	return "remove it, or correct its name; " + list
}

var tagWords = map[string]string{
	"!!str": "text", "!!int": "a number", "!!float": "a number", "!!bool": "true/false",
	"!!null": "empty", "!!timestamp": "a date", "!!binary": "binary data",
}

// kindWord names a node's kind in a YAML user's terms.
func kindWord(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if w, ok := tagWords[n.ShortTag()]; ok {
			return w
		}
		return "a value tagged " + quoted(n.ShortTag())
	}
	return "an unexpected node"
}

var yamlLinePrefix = regexp.MustCompile(`^(?:yaml: )?(?:line (\d+): )?`)

// yamlErrorLine reads the line number out of a yaml.v3 error, 0 if none.
func yamlErrorLine(err error) int {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	m := yamlLinePrefix.FindStringSubmatch(msg)
	line, _ := strconv.Atoi(m[1])
	return line
}

// syntaxHints maps fragments of yaml.v3 syntax errors to advice; the first
// match wins.
var syntaxHints = []struct{ fragment, fix string }{
	{"did not find expected comment or line break", `quote a value that starts with '>' or '|', e.g. value: ">= 300"; unquoted, YAML reads them as the start of a block of text`},
	{"tab character", "indent with spaces; YAML does not allow tabs in indentation"},
	{"cannot start any token", "indent with spaces if this line starts with a tab, or quote the value if it starts with a character YAML reserves (@, `, %, !, &, *, |, >)"},
	{"mapping values are not allowed", "quote the value if it contains ': ', and check this line's indentation"},
	{"did not find expected ',' or", "close the bracket or brace opened here, and separate entries with ','"},
	{"did not find expected key", "align this line with the other keys of its mapping, or start each list entry with '- '"},
}

// syntaxError records a YAML syntax error. yaml.v3 reports parser errors one
// line early and some scanner errors with no line at all; so the line is found
// by parsing growing prefixes of the document until the same error first
// appears. The library's number is the fallback when the scan's budget runs
// out.
func (d *decoder) syntaxError(data []byte, err error) {
	m := yamlLinePrefix.FindStringSubmatch(err.Error())
	reported, _ := strconv.Atoi(m[1])
	msg := err.Error()[len(m[0]):]
	line := syntaxErrorLine(data, msg)
	if line == 0 {
		line = reported
	}
	fix := "fix the YAML syntax; a recipe has " + shape
	for _, h := range syntaxHints {
		if strings.Contains(msg, h.fragment) {
			fix = h.fix
			break
		}
	}
	e := d.addAt(line, "", "is not valid YAML ("+msg+")", fix)
	e.Err = err
}

// syntaxScanBudget bounds the bytes syntaxErrorLine parses in total (the scan
// is quadratic in the document's length); a real recipe is far inside it.
const syntaxScanBudget = 4 << 20

func syntaxErrorLine(data []byte, msg string) int {
	end, budget := 0, syntaxScanBudget
	for n := 1; end < len(data); n++ {
		if i := bytes.IndexByte(data[end:], '\n'); i < 0 {
			end = len(data)
		} else {
			end += i + 1
		}
		if budget -= end; budget < 0 {
			return 0
		}
		if err := parseAll(data[:end]); err != nil {
			if m := yamlLinePrefix.FindStringSubmatch(err.Error()); err.Error()[len(m[0]):] == msg {
				return n
			}
		}
	}
	return 0
}

// parseAll parses every document in b, so the prefix scan also finds errors
// after a '---'.
func parseAll(b []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
