// Package excerpt quotes a piece of user input for an error message.
//
// Inputs reach messages verbatim today in many places, and an input can be
// anything: a 900 KB value, a whole data file that a symlink pointed at a
// secret, or a name that looks right but is not ("NCCL_DEBUG" with a
// Cyrillic 'Е'). Quote bounds what is shown, escapes everything outside
// printable ASCII so nothing garbles a terminal or hides in plain sight, and
// names the runes a reader cannot tell apart from ASCII by eye.
package excerpt

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/runenames"
)

// Max is how many runes of a value Quote shows: enough for any name, path or
// table row a message needs, small enough that an input repeated in several
// messages cannot flood a terminal.
const Max = 80

// maxNamed bounds how many distinct suspicious runes are named: the first
// few are what a reader needs to find the problem.
const maxNamed = 3

// Quote renders s for a message, showing at most Max runes.
func Quote(s string) string { return QuoteN(s, Max) }

// QuoteN renders s for a message: double-quoted, with every rune outside
// printable ASCII escaped (\u0435, \x00), cut to at most limit runes with the
// full size stated, and followed by the Unicode names of the first
// non-ASCII or non-printable runes it shows, e.g.
//
//	"NCCL_D\u0415BUG" (non-ASCII U+0415 CYRILLIC CAPITAL LETTER IE)
//
// The result is at most about 12×limit+250 bytes whatever s holds.
func QuoteN(s string, limit int) string {
	limit = max(limit, 1)
	shown, cut := s, false
	if utf8.RuneCountInString(s) > limit {
		n := 0
		for i := range s {
			if n == limit {
				shown, cut = s[:i], true
				break
			}
			n++
		}
	}
	var b strings.Builder
	b.WriteString(strconv.QuoteToASCII(shown))
	if cut {
		fmt.Fprintf(&b, "… (first %d characters of %d bytes)", limit, len(s))
	}
	if names := suspicious(shown); len(names) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(names, ", "))
		b.WriteString(")")
	}
	return b.String()
}

// Rune names one rune for a message: 'a' for printable ASCII, else its code
// point and Unicode name, e.g. "U+0435 CYRILLIC SMALL LETTER IE".
func Rune(r rune) string {
	if r < utf8.RuneSelf && unicode.IsPrint(r) {
		return strconv.QuoteRune(r)
	}
	return describe(r)
}

func describe(r rune) string {
	switch {
	case r == utf8.RuneError:
		return "an invalid UTF-8 byte"
	case r < utf8.RuneSelf:
		return fmt.Sprintf("non-printable U+%04X %s", r, name(r))
	}
	return fmt.Sprintf("non-ASCII U+%04X %s", r, name(r))
}

func name(r rune) string {
	if n := runenames.Name(r); n != "" && !strings.HasPrefix(n, "<") {
		return n
	}
	if unicode.IsControl(r) {
		return "(a control character)"
	}
	return "(unnamed)"
}

// suspicious names the distinct runes of s outside printable ASCII, in order
// of appearance, at most maxNamed of them.
func suspicious(s string) []string {
	var out []string
	seen := map[rune]bool{}
	extra := 0
	for _, r := range s {
		// A tab is escaped but not named: logs and tables are full of them.
		if r < utf8.RuneSelf && unicode.IsPrint(r) || r == '\t' || seen[r] {
			continue
		}
		seen[r] = true
		if len(out) == maxNamed {
			extra++
			continue
		}
		out = append(out, describe(r))
	}
	if extra > 0 {
		out = append(out, fmt.Sprintf("and %d more", extra))
	}
	return out
}
