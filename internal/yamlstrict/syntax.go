package yamlstrict

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var linePrefix = regexp.MustCompile(`^(?:yaml: )?(?:line (\d+): )?`)

// SplitMessage splits a yaml.v3 message ("yaml: line 3: found a tab") into
// the line it reports (0 when it reports none) and its text. The entries of
// a *yaml.TypeError ("line 3: field x not found") have the same form.
func SplitMessage(msg string) (line int, text string) {
	m := linePrefix.FindStringSubmatch(msg)
	line, _ = strconv.Atoi(m[1])
	return line, msg[len(m[0]):]
}

// scanBudget bounds the bytes the prefix scan in LocateSyntaxError parses in
// total. The scan is quadratic in the input's length; the files these
// readers take are a few KiB, far inside the budget, and a huge input falls
// back to yaml.v3's own line number instead of stalling the tool.
const scanBudget = 4 << 20

// LocateSyntaxError returns the line of err, a syntax error that parse (the
// parse that failed, e.g. ParseAll) reported for data, and yaml.v3's message
// without its "yaml: line N: " prefix.
//
// yaml.v3's own line cannot be trusted: it reports parser errors (as opposed
// to scanner errors) one line early, some scanner errors with no line at all,
// and the message does not say which kind it is. So the line is found by
// parsing growing prefixes of data, one line more each time, until the same
// message first appears; yaml.v3's number is only the fallback when the scan
// does not find it or runs out of budget. The line is 0 when neither can say.
func LocateSyntaxError(data []byte, err error, parse func([]byte) error) (line int, msg string) {
	return locateSyntaxError(data, err, parse, scanBudget)
}

// locateSyntaxError is LocateSyntaxError with the scan's budget, in bytes
// parsed, as a parameter, so that tests can exhaust it cheaply.
func locateSyntaxError(data []byte, err error, parse func([]byte) error, budget int) (line int, msg string) {
	reported, msg := SplitMessage(err.Error())
	if line = scanForLine(data, msg, parse, budget); line == 0 {
		line = reported
	}
	return line, msg
}

func scanForLine(data []byte, msg string, parse func([]byte) error, budget int) int {
	end := 0
	for n := 1; end < len(data); n++ {
		if i := bytes.IndexByte(data[end:], '\n'); i < 0 {
			end = len(data)
		} else {
			end += i + 1
		}
		if budget -= end; budget < 0 {
			return 0
		}
		if err := parse(data[:end]); err != nil {
			if _, m := SplitMessage(err.Error()); m == msg {
				return n
			}
		}
	}
	return 0
}

// ParseAll parses every document in data into node trees and returns the
// first error. It is the parse to give LocateSyntaxError for an error from
// ParseDocument: unlike a single Decode, it also reaches an error after a
// '---'.
func ParseAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
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

// Hint is advice for a yaml.v3 syntax error whose message contains Fragment.
type Hint struct{ Fragment, Fix string }

// Hints is an ordered table of advice for syntax errors.
type Hints []Hint

// Fix returns the advice of the first hint whose fragment msg contains, or
// fallback when none does; a table lists more specific fragments first.
func (hs Hints) Fix(msg, fallback string) string {
	for _, h := range hs {
		if strings.Contains(msg, h.Fragment) {
			return h.Fix
		}
	}
	return fallback
}

// SyntaxHints is advice for the syntax errors a hand-edited file most often
// has. A reader with advice of its own puts it in a table of its own, before
// these if they still apply. Do not modify it: the readers share it.
var SyntaxHints = Hints{
	{Fragment: "tab character", Fix: "indent with spaces; YAML does not allow tabs in indentation"},
	{Fragment: "cannot start any token", Fix: "indent with spaces if this line starts with a tab, or quote the value if it starts with a character YAML reserves (@, `, %, !, &, *, |, >)"},
	{Fragment: "mapping values are not allowed", Fix: "quote the value if it contains ': ', and check this line's indentation"},
	{Fragment: "did not find expected ',' or", Fix: "close the bracket or brace opened here, and separate entries with ','"},
	{Fragment: "did not find expected key", Fix: "align this line with the other keys of its mapping, or start each list entry with '- '"},
}

// SyntaxError is the one rejection of a document that is not valid YAML:
// err, a syntax error that parse reported for data, placed on the line it
// is really on (LocateSyntaxError), with yaml.v3's message in its Problem
// and, as its Fix, the advice of the first of hints that applies or
// fallback. The reader fills in File and Path as its other errors have
// them.
func SyntaxError(data []byte, err error, parse func([]byte) error, hints Hints, fallback string) *Error {
	line, msg := LocateSyntaxError(data, err, parse)
	return &Error{Line: line, Problem: "is not valid YAML (" + msg + ")", Fix: hints.Fix(msg, fallback), Err: err}
}
