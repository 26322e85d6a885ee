package recipe

import (
	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// Error is one problem with a recipe, the located error every YAML reader
// shares. Parse reports every problem it finds, in line order; use errors.As
// to reach them. Err is the underlying cause, if any: an error of the
// interfaces package, a YAML syntax error.
type Error = yamlstrict.Error

// joinErrors orders problems by line and returns nil, the single *Error, or
// all joined, at most yamlstrict.MaxProblems and a count of the rest.
func joinErrors(file string, errs []*Error) error { return yamlstrict.Errors(file, errs) }

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
