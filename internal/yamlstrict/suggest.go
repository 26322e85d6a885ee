package yamlstrict

import "strings"

// maxEdits is how many single-letter edits a misspelling may be away from
// the name it is taken for; more, and the suggestion is more often wrong
// than helpful.
const maxEdits = 2

// Closest returns the candidate that name most likely misspells: the same
// letters in another case, a prefix either way for names of three letters or
// more ("interface" for "interfaceName"), or at most two edits away; "" when
// none is close. A case or prefix match wins at once, in candidate order;
// otherwise the fewest edits win, the earlier candidate on a tie.
func Closest(name string, candidates []string) string {
	lower := strings.ToLower(name)
	return closest(lower, candidates, func(c, lc string) bool {
		return lower == lc || len(lower) >= 3 && (strings.HasPrefix(lc, lower) || strings.HasPrefix(lower, lc))
	})
}

// ClosestByEdits is Closest without the prefix rule: the same letters in
// another case (as strings.EqualFold compares them), or at most two edits
// away. It suits candidates that extend one another (module, moduleVersion),
// where a prefix matches several and Closest would pick by their order.
func ClosestByEdits(name string, candidates []string) string {
	return closest(strings.ToLower(name), candidates, func(c, _ string) bool {
		return strings.EqualFold(c, name)
	})
}

// closest returns the first candidate c for which match(c, lower-cased c)
// holds, or else the candidate fewest edits (and at most maxEdits) from
// lower, the lower-cased name.
func closest(lower string, candidates []string, match func(c, lc string) bool) string {
	best, bestDist := "", maxEdits+1
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if match(c, lc) {
			return c
		}
		if d := editDistance(lower, lc); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// UnknownFieldFix advises on a mapping key, name, that is not one of the
// allowed fields of where ("the document", "a recipe", a YAML path): merge
// keys are not supported, a near miss is named, and otherwise the key should
// go. The allowed fields follow, joined with conj ("and" or "or").
func UnknownFieldFix(name string, allowed []string, where, conj string) string {
	list := "the fields of " + where + " are " + List(allowed, conj)
	if name == "<<" {
		return "merge keys are not supported: write the fields out; " + list
	}
	if s := Closest(name, allowed); s != "" {
		return "did you mean " + s + "? " + list
	}
	return "remove it, or correct its name; " + list
}

// maxEditInput bounds the strings editDistance compares. The inputs are keys
// a user typed, so a pathological one (a pasted line, a megabyte-long key)
// must stay cheap. A longer string counts as maxEditInput edits from
// anything, which is never close. That costs no suggestion a reader makes:
// the candidates are field names far shorter than the bound, and a string
// more than maxEdits longer than a candidate is not within maxEdits of it.
const maxEditInput = 64

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	if len(a) > maxEditInput || len(b) > maxEditInput {
		return maxEditInput
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
