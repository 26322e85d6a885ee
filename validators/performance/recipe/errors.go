package recipe

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// Error is one problem with a recipe. Parse reports every problem it finds,
// joined with errors.Join in line order; use errors.As (or Unwrap() []error on
// the joined error) to reach them.
type Error struct {
	// File is the name given to Parse (Load passes the path).
	File string
	// Line is the 1-based line of the bad field; 0 for problems with the file
	// as a whole (empty, oversized).
	Line int
	// Path is the YAML path of the bad field, e.g.
	// configuration.gke.tcpxoInterfaces[3].network; empty for the document.
	Path string
	// Problem says what is wrong, Fix what to do about it.
	Problem string
	Fix     string
	// Err is the underlying cause, if any: an *interfaces.Error, a YAML
	// syntax error.
	Err error
}

// Error renders "file:line: path: problem: fix", the form editors and CI
// annotators jump to.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	if e.Fix != "" {
		b.WriteString(": ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// joinErrors orders problems by line (stable, so problems on one line keep the
// order they were found in) and returns nil, the single *Error, or all joined,
// at most yamlstrict.MaxProblems and a count of the rest.
func joinErrors(file string, errs []*Error) error {
	slices.SortStableFunc(errs, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	return yamlstrict.Join(errs, func(problem, fix string) *Error { return &Error{File: file, Problem: problem, Fix: fix} })
}

// quoted renders user input for a message: always quoted, so whitespace and
// control characters are visible, and cut short when long.
func quoted(s string) string { return yamlstrict.Quote(s) }

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string { return yamlstrict.List(words, "or") }

// suggest words the fix for a value that is not one of candidates.
func suggest(value string, candidates []string, what string) string {
	list := "use " + orList(candidates)
	if s := yamlstrict.Closest(value, candidates); s != "" {
		return "did you mean " + s + "? " + what + " is one of " + orList(candidates)
	}
	return list
}
