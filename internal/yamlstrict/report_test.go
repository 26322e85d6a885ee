package yamlstrict

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestPaths(t *testing.T) {
	p := JoinPath("", "configuration")
	p = JoinPath(p, "gke")
	p = JoinPath(p, "tcpxoInterfaces")
	p = IndexPath(p, 3)
	p = JoinPath(p, "network")
	if want := "configuration.gke.tcpxoInterfaces[3].network"; p != want {
		t.Fatalf("built %q, want %q", p, want)
	}
	var up []string
	for p != "" {
		p = ParentPath(p)
		up = append(up, p)
	}
	want := []string{"configuration.gke.tcpxoInterfaces[3]", "configuration.gke.tcpxoInterfaces", "configuration.gke", "configuration", ""}
	if fmt.Sprint(up) != fmt.Sprint(want) {
		t.Errorf("parents %q, want %q", up, want)
	}
	if got := IndexPath("", 0); got != "[0]" {
		t.Errorf(`IndexPath("", 0) = %q, want "[0]"`, got)
	}
}

type testErr struct{ problem, fix string }

func (e *testErr) Error() string { return e.problem + ": " + e.fix }

func more(problem, fix string) *testErr { return &testErr{problem, fix} }

func problems(n int) []*testErr {
	ps := make([]*testErr, n)
	for i := range ps {
		ps[i] = &testErr{problem: fmt.Sprint("problem ", i)}
	}
	return ps
}

func TestJoin(t *testing.T) {
	if err := Join(problems(0), more); err != nil {
		t.Errorf("Join of none = %v, want nil", err)
	}

	one := problems(1)
	if err := Join(one, more); err != error(one[0]) {
		t.Errorf("Join of one = %#v, want the problem itself", err)
	}

	three := problems(3)
	err := Join(three, more)
	j, ok := err.(interface{ Unwrap() []error })
	if !ok || len(j.Unwrap()) != 3 {
		t.Fatalf("Join of three = %#v, want all three joined", err)
	}
	for i, e := range j.Unwrap() {
		if e != error(three[i]) {
			t.Errorf("joined[%d] = %v, want %v: the order given", i, e, three[i])
		}
	}

	exactly := problems(MaxProblems)
	if got := len(Join(exactly, more).(interface{ Unwrap() []error }).Unwrap()); got != MaxProblems {
		t.Errorf("Join of MaxProblems kept %d, want all", got)
	}
}

func TestJoinBound(t *testing.T) {
	ps := problems(MaxProblems + 88)
	backing := ps[:cap(ps)]
	err := Join(ps, more)
	got := err.(interface{ Unwrap() []error }).Unwrap()
	if len(got) != MaxProblems+1 {
		t.Fatalf("Join kept %d problems, want %d and a count of the rest", len(got), MaxProblems+1)
	}
	var last *testErr
	if !errors.As(got[MaxProblems], &last) || last.problem != "88 more problem(s) not shown" || last.fix != "fix the problems above and run again" {
		t.Errorf("last = %#v, want the count of the 88 left out, in the caller's type", got[MaxProblems])
	}
	if backing[MaxProblems].problem != fmt.Sprint("problem ", MaxProblems) {
		t.Errorf("Join overwrote the caller's slice: element %d is %v", MaxProblems, backing[MaxProblems])
	}
}

func TestQuote(t *testing.T) {
	long := strings.Repeat("é", MaxShown)
	escaped := strings.Repeat(`\u00e9`, MaxShown)
	const e = " (non-ASCII U+00E9 LATIN SMALL LETTER E WITH ACUTE)"
	for _, tc := range []struct{ in, want string }{
		{"net-1", `"net-1"`},
		{"", `""`},
		{" net-1", `" net-1"`},
		{"a\x1b[2Jb", `"a\x1b[2Jb" (non-printable U+001B (a control character))`}, // a terminal escape stays visible and inert
		{long, `"` + escaped + `"` + e},                                           // MaxShown runes, multi-byte, are shown whole
		{long + "z", `"` + escaped + `"… (first 64 characters of 129 bytes)` + e},
		{"NCCL_D\u0415BUG", `"NCCL_D\u0415BUG" (non-ASCII U+0415 CYRILLIC CAPITAL LETTER IE)`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%.20q) = %.80q, want %.80q", tc.in, got, tc.want)
		}
	}
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a", "b"}, "a or b"},
		{[]string{"a", "b", "c"}, "a, b or c"},
	} {
		if got := List(tc.words, "or"); got != tc.want {
			t.Errorf("List(%q) = %q, want %q", tc.words, got, tc.want)
		}
	}
}

func TestKindWord(t *testing.T) {
	brackets := func(s string) string { return "<" + s + ">" }
	for _, tc := range []struct{ in, want string }{
		{"{a: 1}", "a mapping"},
		{"[1]", "a list"},
		{"x", "text"}, // the caller's word for a string
		{"'3'", "text"},
		{"3", "a number"},
		{"3.5", "a number"},
		{"true", "true/false"},
		{"~", "empty"},
		{"2024-01-02", "a date"},
		{"!!binary aGk=", "binary data"},
		{"!custom x", "a value tagged <!custom>"}, // the caller's quoting
		{"!<plain> x", "a value tagged <plain>"},  // a verbatim tag loses its "!"
		{"!!map x", "a value tagged <!!map>"},     // a scalar, whatever its tag says
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(tc.in), &n); err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if got := KindWord(n.Content[0], "text", brackets); got != tc.want {
			t.Errorf("KindWord(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := KindWord(&yaml.Node{Kind: yaml.AliasNode}, "text", brackets); got != "an unexpected node" {
		t.Errorf("KindWord(alias) = %q, want %q", got, "an unexpected node")
	}
}
