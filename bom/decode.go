package bom

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// maxFileSize bounds what a loader reads. The real files are a few KiB; the
// bound keeps a wrong path (a log, an image tarball) from being read whole.
const maxFileSize = 1 << 20

// path is a YAML path in yamlstrict's grammar: "images.daemon.reference",
// "pairs[2].installer".
type path string

func (p path) key(k string) path { return path(yamlstrict.JoinPath(string(p), k)) }

func (p path) index(i int) path { return path(yamlstrict.IndexPath(string(p), i)) }

// decodeStrict decodes data into out (a pointer to a struct) and returns the
// locator for later semantic checks. It rejects what yaml.v3 alone would
// accept silently: an empty file, a second document, unknown fields.
func decodeStrict(file string, data []byte, out any) (loc *yamlstrict.Locator, err error) {
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
	loc = yamlstrict.NewLocator(root)

	c := &checker{file: file, lines: loc}
	for _, f := range yamlstrict.Walk(root, rootType, yamlstrict.WalkOptions{FollowAliases: true}) {
		c.errs = append(c.errs, structuralError(file, f))
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	if err := yamlstrict.DecodeKnown(data, out); err != nil {
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
			return yamlstrict.DecodeKnown(b, reflect.New(rootType).Interface())
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
	fe := yamlstrict.SyntaxError(data, err, parse, syntaxFixes, "fix the YAML syntax")
	fe.File = file
	return fe
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
