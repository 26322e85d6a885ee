package yamlstrict

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tcpxogen/tcpxogen/internal/excerpt"
)

// JoinPath appends a mapping key to a YAML path: "a.b" and "c" make "a.b.c";
// the empty path is the document itself.
func JoinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// IndexPath appends a list index to a YAML path: "a" and 2 make "a[2]".
func IndexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// ParentPath strips the last ".key" or "[i]" from a YAML path; the parent of
// a top-level key is "", the document.
func ParentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// MaxProblems bounds how many problems Join reports. A wrong file or a
// pasted log can hold thousands; past the first screenful more of the same
// does not help, and an unbounded list would bury the first ones.
const MaxProblems = 20

// Join returns problems as one error: nil for none, the single problem
// itself (so that a caller can type-assert the common case), or all of them
// joined with errors.Join in the order given. Past MaxProblems it keeps the
// first MaxProblems and adds one that more builds, in the caller's error
// type, from a problem and fix saying how many were left out.
func Join[E error](problems []E, more func(problem, fix string) E) error {
	if len(problems) > MaxProblems {
		left := len(problems) - MaxProblems
		// The full slice expression makes append copy, so that the caller's
		// backing array is not overwritten.
		problems = append(problems[:MaxProblems:MaxProblems],
			more(fmt.Sprintf("%d more problem(s) not shown", left), "fix the problems above and run again"))
	}
	switch len(problems) {
	case 0:
		return nil
	case 1:
		return problems[0]
	}
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// MaxShown bounds, in runes, how much of a user's value a message repeats.
const MaxShown = 64

// Quote renders a user's value for a message: always quoted, so that
// whitespace, empty strings and control characters are visible and cannot
// garble a terminal, cut short past MaxShown runes with the full size
// stated, and with non-ASCII look-alikes named (excerpt.QuoteN).
func Quote(s string) string { return excerpt.QuoteN(s, MaxShown) }

// List joins words for a sentence with conj: "a", "a or b", "a, b or c".
func List(words []string, conj string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

// scalarWords names the tags of non-string scalars in a YAML user's terms.
var scalarWords = map[string]string{
	"!!int": "a number", "!!float": "a number", "!!bool": "true/false",
	"!!null": "empty", "!!timestamp": "a date", "!!binary": "binary data",
}

// KindWord names what n holds in a YAML user's terms, for messages such as
// "must be a list, not a number": "a mapping", "a list", or a scalar's kind
// ("a number", "true/false", "empty", ...). Readers word two cases their own
// way, so the caller supplies them: str, the word for a string ("a string",
// "text"), and quote, which renders a tag KindWord has no word for (a custom
// or verbatim tag) in "a value tagged <quote(tag)>".
func KindWord(n *yaml.Node, str string, quote func(string) string) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		tag := n.ShortTag()
		if tag == "!!str" {
			return str
		}
		if w, ok := scalarWords[tag]; ok {
			return w
		}
		return "a value tagged " + quote(tag)
	}
	return "an unexpected node"
}
