package excerpt

import (
	"strconv"
	"strings"
	"testing"
)

func TestQuoteNamesLookAlikes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"NCCL_DEBUG", []string{`"NCCL_DEBUG"`}},
		{"NCCL_D\u0415BUG", []string{`"NCCL_D\u0415BUG"`, "non-ASCII U+0415 CYRILLIC CAPITAL LETTER IE"}},
		{"nccl_d\u0435bug", []string{"U+0435 CYRILLIC SMALL LETTER IE"}},
		{"ＮCCL", []string{`"\uff2eCCL"`, "U+FF2E FULLWIDTH LATIN CAPITAL LETTER N"}},
		{"eth\u200b1", []string{`"eth\u200b1"`, "U+200B ZERO WIDTH SPACE"}},
		{"a\x00b\x1b[2J", []string{`"a\x00b\x1b[2J"`, "non-printable U+0000", "non-printable U+001B"}},
		{"\xff", []string{"an invalid UTF-8 byte"}},
		{"a\tb", []string{`"a\tb"`}},
	} {
		got := Quote(tc.in)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("Quote(%+q) = %s, want it to contain %s", tc.in, got, w)
			}
		}
		if strings.ContainsFunc(got, func(r rune) bool { return r > 0x7e && r != '…' || r < 0x20 }) {
			t.Errorf("Quote(%+q) = %s carries a raw non-printable or non-ASCII rune", tc.in, got)
		}
	}
	if got := Quote("a\tb"); strings.Contains(got, "U+0009") {
		t.Errorf("Quote names the tab: %s", got)
	}
}

func TestQuoteIsBounded(t *testing.T) {
	for _, in := range []string{
		strings.Repeat("x", 900<<10),
		strings.Repeat("\U0010FFFF", 100<<10),
		strings.Repeat("\u0430\u0431\u0432\u0433\u0434", 50<<10),
	} {
		got := Quote(in)
		if len(got) > 12*Max+250 {
			t.Errorf("Quote of %d bytes is %d bytes long, more than the documented bound %d", len(in), len(got), 12*Max+250)
		}
		if want := "characters of " + strconv.Itoa(len(in)) + " bytes"; !strings.Contains(got, want) {
			t.Errorf("Quote of %d bytes = %s, want the full size stated (%s)", len(in), got, want)
		}
	}
	if got := Quote("\u0430\u0431\u0432\u0433\u0434"); !strings.Contains(got, "and 2 more") {
		t.Errorf("Quote names more than a few runes without saying so: %s", got)
	}
}

func TestRune(t *testing.T) {
	for in, want := range map[rune]string{'a': "'a'", '\u0435': "non-ASCII U+0435 CYRILLIC SMALL LETTER IE", 0: "non-printable U+0000 (a control character)"} {
		if got := Rune(in); got != want {
			t.Errorf("Rune(%U) = %q, want %q", in, got, want)
		}
	}
}
