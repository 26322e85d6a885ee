// Package yamlstrict holds the machinery the repository's hand-edited YAML
// readers share: reading exactly one document, placing yaml.v3's syntax
// errors on the right line (SyntaxError), the structural walk of a document
// against the reader's Go type (Walk), the strict decode that follows it
// (DecodeKnown), where a YAML path is written (Locator), the one located
// error type (Error), turning parser panics into rejections, and the pieces
// of helpful messages (closest-name suggestions, YAML paths, bounded
// problem lists, quoted user values).
//
// It knows nothing of any reader's wording beyond "is not valid YAML": each
// reader words what Walk finds itself, so that its messages stay its own.
package yamlstrict

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"
)

// ErrNoDocument is returned by ParseDocument for input that holds no YAML
// document at all: nothing, or only comments and blank lines.
var ErrNoDocument = errors.New("yamlstrict: no YAML document")

// SecondDocumentError is returned by ParseDocument when a second document
// follows the first: a strict reader takes one document per input, and
// yaml.v3 would otherwise ignore the rest without a word.
type SecondDocumentError struct {
	// Line is the 1-based line where the second document starts.
	Line int
}

func (e *SecondDocumentError) Error() string {
	return fmt.Sprintf("yamlstrict: line %d: a second YAML document starts here", e.Line)
}

// ParseDocument parses data, which must hold exactly one YAML document, into
// a node tree and returns the document node. The error is ErrNoDocument, a
// *SecondDocumentError, or otherwise yaml.v3's syntax error unchanged (pass
// it to LocateSyntaxError for its line).
//
// When the first document parsed, doc is returned even if err reports what
// follows it (a second document, or a syntax error after a '---'), so that a
// reader which ranks an empty document first can still check it.
func ParseDocument(data []byte) (doc *yaml.Node, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	doc = &yaml.Node{}
	if err := dec.Decode(doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrNoDocument
		}
		return nil, err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return doc, nil
	case err != nil:
		return doc, err
	default:
		return doc, &SecondDocumentError{Line: next.Line}
	}
}

// Root returns the top node of doc, a document node from ParseDocument, and
// whether the document holds data. An empty document ("---" alone) or an
// explicit null ("~", "null") holds none: a strict reader rejects it like an
// empty file rather than read it as a document with every field unset.
//
// root is nil only when doc has no content at all, which yaml.v3 does not
// produce; otherwise it is returned even when ok is false, because the null
// can be on a later line than the document start (after a "---" line).
func Root(doc *yaml.Node) (root *yaml.Node, ok bool) {
	if len(doc.Content) == 0 {
		return nil, false
	}
	root = doc.Content[0]
	return root, root.ShortTag() != "!!null"
}

// Recover turns a panic into a rejection: yaml.v3 re-panics on internal
// errors it does not recognise, and input must never crash the tool. A
// reader defers it around all its parsing, with a fail function that records
// problem (which says that the parser failed, and how) as the reader's error:
//
//	defer yamlstrict.Recover(func(problem string) { err = &Error{Problem: problem} })
//
// It must be deferred directly, as above: recover stops a panic only when
// called by the deferred function itself, not from a closure inside it.
func Recover(fail func(problem string)) {
	if p := recover(); p != nil {
		fail(fmt.Sprintf("could not be parsed: the YAML parser failed (%v)", p))
	}
}

// DecodeKnown is a strict reader's final word, after a Walk that found
// nothing: yaml.v3 decodes the first document of data into out (a pointer)
// and refuses any key out's type has no field for (KnownFields). After a
// clean Walk it cannot fail on the document's structure, so a
// *yaml.TypeError from it is a gap in the reader's checks, to be reported
// rather than swallowed (the reader fails closed); any other error is one
// yaml.v3 raises only while decoding (excessive aliasing), a syntax error
// to place with LocateSyntaxError, giving it DecodeKnown itself as the
// parse.
func DecodeKnown(data []byte, out any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(out)
}
