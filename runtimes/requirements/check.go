package requirements

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
)

// Problem says which way a check failed.
type Problem string

const (
	// Missing: a required element is not in what ships.
	Missing Problem = "missing"
	// Changed: a required element ships with another value.
	Changed Problem = "changed"
	// Unexplained: a shipped element has no row in the table.
	Unexplained Problem = "unexplained"
)

// Finding is one disagreement between the table and what ships.
type Finding struct {
	Problem Problem
	Row     *Row     // nil for Unexplained
	Element *Element // nil for Missing
	Leaf    string   // for Changed: the leaf that differs
}

// Describe names an element: its kind and path.
func Describe(kind Kind, path string) string {
	return fmt.Sprintf("%s %s", kind, path)
}

func (f Finding) String() string {
	switch f.Problem {
	case Missing:
		r := f.Row
		return fmt.Sprintf("%s (%s): %s is absent; required by %s; shipped by %s: a change there removed it",
			r.Artefact, r.Object, Describe(r.Kind, r.Path), r.Source, r.ShippedBy)
	case Changed:
		r, e := f.Row, f.Element
		got, ok := e.Leaves[f.Leaf]
		shown := "absent"
		if ok {
			shown = excerpt.Quote(got)
		}
		return fmt.Sprintf("%s (%s): %s is %s, not %s; required by %s; shipped by %s: a change there altered it",
			r.Artefact, r.Object, Describe(r.Kind, r.Path+f.Leaf), shown, excerpt.Quote(r.Want[f.Leaf]), r.Source, r.ShippedBy)
	case TooLong:
		return f.tooLong()
	default:
		e := f.Element
		if name, ok := prefixedCapability(e); ok {
			plain, _ := fabric.Unprefixed(name)
			return fmt.Sprintf("%s: %s (%s) ships, a name no requirement can explain: %s (%s); write %s",
				e.Artefact, Describe(e.Kind, e.Path), e.Object, fabric.CapPrefixDropped, fabric.CapPrefixSource, plain)
		}
		return fmt.Sprintf("%s: %s (%s) ships but no requirement explains it: add a row with its published source to the requirements table (runtimes/requirements/table.go), or stop shipping it",
			e.Artefact, Describe(e.Kind, e.Path), e.Object)
	}
}

// prefixedCapability returns the name of a capability element written with
// the CAP_ prefix.
func prefixedCapability(e *Element) (string, bool) {
	i := strings.LastIndex(e.Path, "[")
	if e.Kind != Capability || i < 0 || !strings.HasSuffix(e.Path, "]") {
		return "", false
	}
	name := e.Path[i+1 : len(e.Path)-1]
	_, ok := fabric.Unprefixed(name)
	return name, ok
}

func key(artefact, object, path string) string { return artefact + "\x00" + object + "\x00" + path }

// Check holds elements to the table both ways: every row must be shipped
// with its wanted leaves, and every shipped element must have a row.
// Findings come in the table's order, then the elements'.
func Check(rows []Row, elems []Element) []Finding {
	byKey := make(map[string]*Element, len(elems))
	for i := range elems {
		e := &elems[i]
		byKey[key(e.Artefact, e.Object, e.Path)] = e
	}
	explained := make(map[string]bool, len(rows))
	var out []Finding
	for i := range rows {
		r := &rows[i]
		k := key(r.Artefact, r.Object, r.Path)
		explained[k] = true
		e, ok := byKey[k]
		if !ok || e.Kind != r.Kind {
			out = append(out, Finding{Problem: Missing, Row: r})
			continue
		}
		for _, leaf := range slices.Sorted(maps.Keys(r.Want)) {
			if got, ok := e.Leaves[leaf]; !ok || got != r.Want[leaf] {
				out = append(out, Finding{Problem: Changed, Row: r, Element: e, Leaf: leaf})
			}
		}
	}
	for i := range elems {
		e := &elems[i]
		if !explained[key(e.Artefact, e.Object, e.Path)] {
			out = append(out, Finding{Problem: Unexplained, Element: e})
		}
	}
	return out
}

// Artefacts are the goldens the table covers.
var Artefacts = append([]string{runtimes.GoldenRuntime, runtimes.GoldenComponents, runtimes.GoldenBenchmark}, gibArtefacts()...)

// Render builds the covered artefacts in memory, as typed objects by golden
// path, exactly as `go generate` renders them.
func Render(in *runtimes.Inputs) (map[string][]any, error) {
	rt, err := runtimes.TorchRuntime(in, runtimes.Options{Interfaces: runtimes.ExampleInterfaces()})
	if err != nil {
		return nil, err
	}
	bench, err := benchmark.GoldenRuntime(rt, in.Facts)
	if err != nil {
		return nil, err
	}
	var comps []any
	for _, ds := range runtimes.Components(in) {
		comps = append(comps, ds)
	}
	out := map[string][]any{runtimes.GoldenRuntime: {rt}, runtimes.GoldenComponents: comps, runtimes.GoldenBenchmark: {bench}}
	if err := renderGIB(in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ElementsOf walks rendered artefacts (typed objects by golden path).
func ElementsOf(artefacts map[string][]any) ([]Element, error) {
	var out []Element
	for _, rel := range slices.Sorted(maps.Keys(artefacts)) {
		objs, err := Objects(artefacts[rel]...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		out = append(out, Elements(rel, objs...)...)
	}
	return out, nil
}

// Summary joins findings for one message, bounded.
func Summary(findings []Finding, limit int) string {
	lines := make([]string, 0, min(len(findings), limit)+1)
	for i, f := range findings {
		if i == limit {
			lines = append(lines, fmt.Sprintf("… and %d more", len(findings)-limit))
			break
		}
		lines = append(lines, f.String())
	}
	return strings.Join(lines, "\n  ")
}
