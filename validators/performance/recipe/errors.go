package recipe

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
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

// maxProblems bounds one report: past a screenful more of the same does not
// help, and an unbounded list would bury the first problems.
const maxProblems = 20

// joinErrors orders problems by line (stable, so problems on one line keep the
// order they were found in) and returns nil, the single *Error, or all joined.
func joinErrors(file string, errs []*Error) error {
	slices.SortStableFunc(errs, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	if len(errs) > maxProblems {
		more := len(errs) - maxProblems
		errs = append(errs[:maxProblems:maxProblems], &Error{File: file,
			Problem: fmt.Sprintf("%d more problem(s) not shown", more),
			Fix:     "fix the problems above and run again"})
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}

// maxShown bounds how much of a user's value a message repeats.
const maxShown = 64

// quoted renders user input for a message: always quoted, so whitespace and
// control characters are visible, and cut short when long.
func quoted(s string) string {
	if utf8.RuneCountInString(s) > maxShown {
		return strconv.Quote(string([]rune(s)[:maxShown])) + "…"
	}
	return strconv.Quote(s)
}

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// closest returns the candidate that name most likely misspells: the same
// letters in another case, a prefix either way, or at most two edits away;
// "" when none is close.
func closest(name string, candidates []string) string {
	lower := strings.ToLower(name)
	best, bestDist := "", 3
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lower == lc || len(lower) >= 3 && (strings.HasPrefix(lc, lower) || strings.HasPrefix(lower, lc)) {
			return c
		}
		if d := editDistance(lower, lc); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance, bounded because the inputs are
// keys a user typed and a pathological one must stay cheap.
func editDistance(a, b string) int {
	const limit = 64
	if len(a) > limit || len(b) > limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// suggest words the fix for a value that is not one of candidates.
func suggest(value string, candidates []string, what string) string {
	list := "use " + orList(candidates)
	if s := closest(value, candidates); s != "" {
		return "did you mean " + s + "? " + what + " is one of " + orList(candidates)
	}
	return list
}
