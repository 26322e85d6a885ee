package recipe

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
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
// The parse also locates each path, so the semantic checks that follow can
// point at the line of the value they reject.
type decoder struct {
	file  string
	errs  []*Error
	lines *yamlstrict.Locator
}

func newDecoder(file string) *decoder { return &decoder{file: file} }

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
// entry), or of the nearest ancestor the document has. The key line is
// preferred because a list or mapping value starts on the line after it.
func (d *decoder) lineOf(path string) int {
	line, _ := d.lines.Line(path)
	return line
}

// joinPath is yamlstrict.JoinPath under the name validate.go uses.
func joinPath(path, key string) string { return yamlstrict.JoinPath(path, key) }

// shape is the expected document, for messages about its overall form.
const shape = "apiVersion: " + APIVersion + ", kind: " + Kind + ", then criteria, components, configuration and constraints"

// decode parses data and runs both passes; ok is false when the document is
// too broken for the semantic checks to say anything useful.
func (d *decoder) decode(data []byte) (r *Recipe, ok bool) {
	// Input must never crash the tool, even through a yaml.v3 bug.
	defer yamlstrict.Recover(func(problem string) {
		d.addAt(0, "", problem, "check that this is the recipe you meant to load; a recipe has "+shape)
		r, ok = nil, false
	})
	if len(data) > MaxSize {
		d.addAt(0, "", fmt.Sprintf("is over the %d-byte limit for a recipe", MaxSize),
			"check the path: a recipe is a short YAML file with "+shape)
		return nil, false
	}

	doc, err := yamlstrict.ParseDocument(data)
	var second *yamlstrict.SecondDocumentError
	switch {
	case errors.Is(err, yamlstrict.ErrNoDocument):
		d.addAt(0, "", "is empty", "write a recipe: "+shape)
		return nil, false
	case errors.As(err, &second):
		d.addAt(second.Line, "", "has a second YAML document here",
			"keep exactly one document: remove the '---' separator and what follows it")
		return nil, false
	case err != nil:
		d.syntaxError(data, err)
		return nil, false
	}
	root, hasData := yamlstrict.Root(doc)
	if !hasData {
		d.addAt(doc.Line, "", "holds no data", "write a recipe: "+shape)
		return nil, false
	}
	if root.Kind != yaml.MappingNode {
		d.addAt(root.Line, "", "is "+kindWord(root)+", not a mapping", "write a recipe: "+shape)
		return nil, false
	}

	d.lines = yamlstrict.NewLocator(root)
	for _, f := range yamlstrict.Walk(root, reflect.TypeFor[Recipe](), yamlstrict.WalkOptions{Scalar: recipeScalar}) {
		d.finding(f)
	}
	if len(d.errs) > 0 {
		return nil, false
	}

	r = &Recipe{}
	if err := yamlstrict.DecodeKnown(data, r); err != nil {
		// Unreachable while the walk covers the types; reported, not
		// swallowed, so that a gap fails closed.
		d.addAt(yamlErrorLine(err), "", "could not be decoded ("+err.Error()+")",
			"this is a bug in the recipe reader's checks; please report it with the recipe")
		return nil, false
	}
	return r, true
}

// finding words a structural problem of the document.
func (d *decoder) finding(f yamlstrict.Finding) {
	switch f.Kind {
	case yamlstrict.AliasUsed:
		// Rejected rather than resolved: a recipe is short, an alias makes
		// the line of a value ambiguous, and expanding aliases is how YAML
		// bombs multiply a small file.
		d.addAt(f.Line, f.Path, "uses a YAML anchor or alias", "write the value out in full")
	case yamlstrict.KeyNotAName:
		d.addAt(f.Line, f.Path, "has a key that is "+kindWord(f.Node)+", not a name",
			"write the keys as plain names: "+orList(yamlstrict.Fields(f.Want)))
	case yamlstrict.DuplicateKey:
		d.addAt(f.Line, f.Path, fmt.Sprintf("is set twice (first at line %d)", f.First),
			"delete one of the two; YAML tools disagree on which one wins, so the recipe must not rely on either")
	case yamlstrict.UnknownKey:
		where := yamlstrict.ParentPath(f.Path)
		if where == "" {
			where = "a recipe"
		}
		d.addAt(f.Line, f.Path, "is not a known field", yamlstrict.UnknownFieldFix(f.Node.Value, yamlstrict.Fields(f.Want), where, "or"))
	case yamlstrict.WrongKind:
		switch f.Want.Kind() {
		case reflect.Struct:
			d.addAt(f.Line, f.Path, "is "+kindWord(f.Node)+", not a mapping",
				"write it as a mapping with the fields "+orList(yamlstrict.Fields(f.Want)))
		case reflect.Slice:
			d.addAt(f.Line, f.Path, "is "+kindWord(f.Node)+", not a list",
				"write one entry per line, each starting with '- '")
		default:
			if f.Node.Kind != yaml.ScalarNode {
				d.addAt(f.Line, f.Path, "is "+kindWord(f.Node)+", not a single value", "write one value on the line of its key")
				return
			}
			key := f.Path[strings.LastIndexAny(f.Path, ".")+1:]
			d.addAt(f.Line, f.Path, "is "+kindWord(f.Node)+", not text",
				"quote the value if it is meant as text, e.g. "+key+": "+strconv.Quote(f.Node.Value))
		}
	}
}

// recipeScalar accepts only text for a string field: a value YAML reads as
// a number, boolean or date is a string only by accident of spelling, and
// other YAML readers (sigs.k8s.io/yaml, used by kubectl) would convert it. A
// Threshold also takes a plain number (value: 300). Null reads as "", which
// the semantic checks report as missing.
func recipeScalar(n *yaml.Node, t reflect.Type) bool {
	switch tag := n.ShortTag(); {
	case tag == "!!str":
		return t.Kind() == reflect.String
	case t == reflect.TypeFor[Threshold]():
		return tag == "!!int" || tag == "!!float"
	}
	return false
}

// kindWord names a node's kind in a YAML user's terms; a recipe's values are
// "text", as the scalar check's messages call them.
func kindWord(n *yaml.Node) string { return yamlstrict.KindWord(n, "text", quoted) }

// yamlErrorLine reads the line number out of a yaml.v3 error, 0 if none.
func yamlErrorLine(err error) int {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	line, _ := yamlstrict.SplitMessage(msg)
	return line
}

// syntaxHints is yamlstrict's advice, after the one mistake thresholds
// invite: an unquoted ">= 300" reads as the start of a block scalar.
var syntaxHints = append(yamlstrict.Hints{
	{Fragment: "did not find expected comment or line break", Fix: `quote a value that starts with '>' or '|', e.g. value: ">= 300"; unquoted, YAML reads them as the start of a block of text`},
}, yamlstrict.SyntaxHints...)

// syntaxError records a yaml.v3 syntax error from ParseDocument, with the
// line it is really on (yaml.v3's own number can be a line early).
func (d *decoder) syntaxError(data []byte, err error) {
	e := yamlstrict.SyntaxError(data, err, yamlstrict.ParseAll, syntaxHints, "fix the YAML syntax; a recipe has "+shape)
	e.File = d.file
	d.errs = append(d.errs, e)
}
