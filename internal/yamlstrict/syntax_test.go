package yamlstrict

import (
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestSplitMessage(t *testing.T) {
	for _, tc := range []struct {
		in       string
		line     int
		wantText string
	}{
		{"yaml: line 3: found a tab character that violates indentation", 3, "found a tab character that violates indentation"},
		{"yaml: mapping values are not allowed in this context", 0, "mapping values are not allowed in this context"},
		{"line 12: field x not found in type main.T", 12, "field x not found in type main.T"}, // a *yaml.TypeError entry
		{"no prefix at all", 0, "no prefix at all"},
		{"", 0, ""},
	} {
		line, text := SplitMessage(tc.in)
		if line != tc.line || text != tc.wantText {
			t.Errorf("SplitMessage(%q) = %d, %q; want %d, %q", tc.in, line, text, tc.line, tc.wantText)
		}
	}
}

// syntaxErr returns the syntax error ParseDocument reports for in.
func syntaxErr(t *testing.T, in string) error {
	t.Helper()
	_, err := ParseDocument([]byte(in))
	var second *SecondDocumentError
	if err == nil || errors.Is(err, ErrNoDocument) || errors.As(err, &second) {
		t.Fatalf("ParseDocument(%q) = %v, want a syntax error", in, err)
	}
	return err
}

func TestLocateSyntaxError(t *testing.T) {
	for _, tc := range []struct {
		name, in     string
		yamlLine     int // the line yaml.v3 itself reports, to show why the scan is needed
		line         int
		wantFragment string
	}{
		// Parser errors: yaml.v3 reports the line before the one at fault.
		{"list entry after a mapping's key", "- a\nb: 1\n", 1, 2, "did not find expected '-' indicator"},
		{"list entry outdented", "a:\n  - x\n - y\n", 2, 3, "did not find expected key"},
		{"unclosed flow list", "a: [1, 2\n", 1, 1, "did not find expected ',' or ']'"},
		// Errors on the first line carry no line at all.
		{"colon in a plain value", "a: b: c\nx: 1\n", 0, 1, "mapping values are not allowed"},
		{"reserved indicator", "a: @x\nb: 1\n", 0, 1, "cannot start any token"},
		{"colon in a plain value, later", "x: 1\ny: 2\na: b: c\n", 3, 3, "mapping values are not allowed"},
		{"tab indentation", "a: 1\n\tb: 2\n", 2, 2, "tab character"},
		// ParseAll reaches past a '---', where one Decode would stop.
		{"after a separator", "a: 1\n---\nb: [\n", 3, 3, "did not find expected node content"},
		{"no final newline", "a: 1\nb: [", 2, 2, "did not find expected node content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := syntaxErr(t, tc.in)
			if got, _ := SplitMessage(err.Error()); got != tc.yamlLine {
				t.Errorf("yaml.v3 now reports line %d, not %d (%v); update the case", got, tc.yamlLine, err)
			}
			line, msg := LocateSyntaxError([]byte(tc.in), err, ParseAll)
			if line != tc.line || !strings.Contains(msg, tc.wantFragment) || strings.HasPrefix(msg, "yaml:") {
				t.Errorf("LocateSyntaxError = %d, %q; want %d and yaml.v3's message containing %q without its prefix", line, msg, tc.line, tc.wantFragment)
			}
		})
	}
}

// TestLocateSyntaxErrorCustomParse locates an error that only a stricter
// parse than ParseAll reports, the way a reader decoding into a struct with
// KnownFields does.
func TestLocateSyntaxErrorCustomParse(t *testing.T) {
	type doc struct{ A []int }
	strict := func(b []byte) error {
		var d doc
		return yaml.Unmarshal(b, &d)
	}
	in := []byte("a:\n  - 1\n  - [\n")
	err := strict(in)
	if err == nil {
		t.Fatal("no error from the strict parse")
	}
	if line, _ := LocateSyntaxError(in, err, strict); line != 3 {
		t.Errorf("line = %d, want 3", line)
	}
}

// TestLocateSyntaxErrorFallback: when the scan does not find the message
// (here the parse given never fails), yaml.v3's own number is used.
func TestLocateSyntaxErrorFallback(t *testing.T) {
	in := "- a\nb: 1\n"
	err := syntaxErr(t, in)
	line, msg := LocateSyntaxError([]byte(in), err, func([]byte) error { return nil })
	if line != 1 || msg != "did not find expected '-' indicator" {
		t.Errorf("LocateSyntaxError = %d, %q; want yaml.v3's line 1 and its message", line, msg)
	}
}

// budgetDoc is the one-line-early error of TestLocateSyntaxError after n
// lines of padding: yaml.v3 reports line n, the error is on line n+1.
func budgetDoc(n int) []byte { return []byte(strings.Repeat("k: v\n", n) + "- a\n") }

// countingParse is ParseAll, adding the bytes it is given to *total.
func countingParse(total *int) func([]byte) error {
	return func(b []byte) error {
		*total += len(b)
		return ParseAll(b)
	}
}

func TestLocateSyntaxErrorBudget(t *testing.T) {
	const budget = 64 << 10
	for _, tc := range []struct {
		name  string
		lines int
		want  int
	}{
		// 100 lines of 5 bytes parse about 25 KB of prefixes: the scan
		// finds the line yaml.v3 misreports.
		{"within the budget", 100, 101},
		// The scan is quadratic: 300 lines would parse about 225 KB. It
		// stops at the budget and falls back to yaml.v3's own line.
		{"over the budget", 300, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := budgetDoc(tc.lines)
			var parsed int
			line, _ := locateSyntaxError(data, syntaxErr(t, string(data)), countingParse(&parsed), budget)
			if line != tc.want {
				t.Errorf("line = %d, want %d", line, tc.want)
			}
			if parsed > budget {
				t.Errorf("the scan parsed %d bytes, over the budget of %d", parsed, budget)
			}
		})
	}
}

// TestLocateSyntaxErrorRealBudget checks that LocateSyntaxError is bounded
// by scanBudget; it parses the whole budget, so it is skipped with -short.
func TestLocateSyntaxErrorRealBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("parses scanBudget bytes")
	}
	// 2000 lines of 5 bytes would parse about 10 MB of prefixes.
	data := budgetDoc(2000)
	var parsed int
	if line, _ := LocateSyntaxError(data, syntaxErr(t, string(data)), countingParse(&parsed)); line != 2000 {
		t.Errorf("line = %d, want yaml.v3's own 2000", line)
	}
	if parsed > scanBudget || parsed < scanBudget/2 {
		t.Errorf("the scan parsed %d bytes, want close to but within the budget of %d", parsed, scanBudget)
	}
}

func TestParseAll(t *testing.T) {
	if err := ParseAll([]byte("a: 1\n---\nb: 2\n---\n")); err != nil {
		t.Errorf("ParseAll of three good documents = %v", err)
	}
	if err := ParseAll(nil); err != nil {
		t.Errorf("ParseAll(nil) = %v", err)
	}
	if err := ParseAll([]byte("a: 1\n---\nb: 2\n---\nc: [\n")); err == nil {
		t.Error("ParseAll missed an error in the third document")
	}
}

func TestHintsFix(t *testing.T) {
	hs := Hints{
		{Fragment: "tab character", Fix: "specific"},
		{Fragment: "tab", Fix: "general"},
	}
	for _, tc := range []struct{ msg, want string }{
		{"found a tab character that violates indentation", "specific"}, // the first match wins
		{"a tab", "general"},
		{"something else", "fallback"},
	} {
		if got := hs.Fix(tc.msg, "fallback"); got != tc.want {
			t.Errorf("Fix(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
	if got := Hints(nil).Fix("anything", "fallback"); got != "fallback" {
		t.Errorf("empty table: Fix = %q, want the fallback", got)
	}
}

// TestSyntaxHintsMatchYAML keeps SyntaxHints honest: every fragment must
// still occur in the message yaml.v3 gives for the mistake it is about.
func TestSyntaxHintsMatchYAML(t *testing.T) {
	mistakes := map[string]string{
		"tab character":                  "a: 1\n\tb: 2\n",
		"cannot start any token":         "a: @b\n",
		"mapping values are not allowed": "a: b: c\n",
		"did not find expected ',' or":   "a: [1, 2\n",
		"did not find expected key":      "a:\n  - x\n - y\n",
	}
	for _, h := range SyntaxHints {
		in, ok := mistakes[h.Fragment]
		if !ok {
			t.Errorf("no example mistake for the hint %q", h.Fragment)
			continue
		}
		_, msg := LocateSyntaxError([]byte(in), syntaxErr(t, in), ParseAll)
		if got := SyntaxHints.Fix(msg, ""); got != h.Fix {
			t.Errorf("%q: yaml.v3 says %q, which gets the advice %q, want %q", in, msg, got, h.Fix)
		}
	}
}
