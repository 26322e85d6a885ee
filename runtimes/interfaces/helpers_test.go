package interfaces

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// canonical is a valid mapping in canonical form; tests derive variants of it.
const canonical = "eth1=net-1,eth2=net-2,eth3=net-3,eth4=net-4,eth5=net-5,eth6=net-6,eth7=net-7,eth8=net-8"

// pairs returns the eight canonical pairs with the given replacements
// (interface → whole pair, "" to drop the pair), joined by commas.
func pairs(replace map[string]string) string {
	var out []string
	for i := 1; i <= 8; i++ {
		iface := fmt.Sprintf("eth%d", i)
		p := fmt.Sprintf("%s=net-%d", iface, i)
		if r, ok := replace[iface]; ok {
			p = r
		}
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ",")
}

// problems flattens an error returned by this package into its *Error values,
// failing the test if anything else is in it.
func problems(t *testing.T, err error) []*Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var out []*Error
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, inner := range j.Unwrap() {
				walk(inner)
			}
			return
		}
		var pe *Error
		if !errors.As(e, &pe) {
			t.Fatalf("error %T %q is not an *Error", e, e)
		}
		out = append(out, pe)
	}
	walk(err)
	return out
}

// want is one expected rejection: its Path exactly, its Line (when the
// caller checks lines), and a fragment of its message.
type want struct {
	entry    string
	line     int
	fragment string
}

// checkProblems asserts that err holds exactly the expected rejections, in
// order, each complete (a problem and a fix).
func checkProblems(t *testing.T, err error, checkLines bool, wants ...want) {
	t.Helper()
	got := problems(t, err)
	if len(got) != len(wants) {
		var lines []string
		for _, g := range got {
			lines = append(lines, "  "+g.Error())
		}
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(wants), strings.Join(lines, "\n"))
	}
	for i, w := range wants {
		g := got[i]
		if g.Problem == "" || g.Fix == "" {
			t.Errorf("problem %d is incomplete: %#v", i, g)
		}
		if g.Path != w.entry {
			t.Errorf("problem %d: Path = %q, want %q (%s)", i, g.Path, w.entry, g)
		}
		if !strings.Contains(g.Error(), w.fragment) {
			t.Errorf("problem %d: %q\ndoes not contain %q", i, g.Error(), w.fragment)
		}
		if checkLines && g.Line != w.line {
			t.Errorf("problem %d: Line = %d, want %d (%s)", i, g.Line, w.line, g)
		}
	}
}
