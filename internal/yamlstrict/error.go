package yamlstrict

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is the one located rejection of the repository's hand-edited YAML
// readers (the BOM files, the recipe, the interfaces values file): where it
// is, what is wrong, and what to do. Readers return every problem they find
// at once (see Errors), so a file is fixed in one pass; use errors.As to
// reach the individual problems.
type Error struct {
	// File is the path or name the data was read from, as given by the
	// caller; empty when the caller adds it by wrapping.
	File string
	// Line is 1-based; 0 when the problem is not tied to a line (an empty
	// file, or input that has no lines, such as a flag).
	Line int
	// Path names the value: a YAML path ("images.daemon.reference",
	// "tcpxoInterfaces[2].network") or, for input without one, what the user
	// wrote ("eth8"). Empty for problems with the whole input.
	Path string
	// Problem says what is wrong, in words that follow Path.
	Problem string
	// Fix says what to do about it.
	Fix string
	// Err is the underlying cause, if there is one.
	Err error
}

// Error renders "file:line: path problem: fix", the form editors and CI
// annotators jump to; "line N: " without a file.
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + " ")
	}
	b.WriteString(e.Problem)
	if e.Fix != "" {
		b.WriteString(": " + e.Fix)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Errors orders errs by line (stable, so problems on one line keep the order
// they were found in) and returns them as Join does, the problems past
// MaxProblems counted in one more of file.
func Errors(file string, errs []*Error) error {
	slices.SortStableFunc(errs, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	return Join(errs, func(problem, fix string) *Error { return &Error{File: file, Problem: problem, Fix: fix} })
}
