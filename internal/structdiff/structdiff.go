// Package structdiff is the one structural differ for wiring and manifests:
// it compares two JSON-shaped values (as decoded by encoding/json or the
// unstructured converter) and names every difference by a path that reads
// the same whatever an element's position.
//
// Lists whose elements are objects with distinct names (containers, env,
// volumes, volumeMounts, replicatedJobs) are matched by name, and the order
// of their common elements is compared as well: order is meaningful for env
// ($(VAR) references expand only from earlier entries) and for init
// containers (they start in order). Other lists compare by index.
package structdiff

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Diff is one difference between the two sides, "from" and "to".
type Diff struct {
	// Path names the element: spec.containers[name=node].env[name=X].value.
	Path string
	// From and To are the two values; FromAbsent and ToAbsent say a side
	// has no value at Path.
	From, To             any
	FromAbsent, ToAbsent bool
	// Reordered says the list at Path holds the same named elements in
	// another order, first differing at element Index; From and To are
	// then the two orders of the common names ([]string).
	Reordered bool
	Index     int
}

// Format renders d as "path: FROM X vs TO Y", naming the sides fromName and
// toName ("deployed", "rendered").
func (d Diff) Format(fromName, toName string) string {
	if d.Reordered {
		f, _ := d.From.([]string)
		t, _ := d.To.([]string)
		return fmt.Sprintf("%s: order differs from element %d: %s [%s] vs %s [%s]", d.Path, d.Index, fromName, orderWindow(f, d.Index), toName, orderWindow(t, d.Index))
	}
	side := func(v, other any, absent bool) string {
		if absent {
			return "absent"
		}
		s, sok := v.(string)
		o, ook := other.(string)
		if sok && ook {
			return showString(s, o)
		}
		return show(v)
	}
	return fmt.Sprintf("%s: %s %s vs %s %s", d.Path, fromName, side(d.From, d.To, d.FromAbsent), toName, side(d.To, d.From, d.ToAbsent))
}

// Values compares from and to and returns every difference under path, in
// document order (map keys sorted, named lists in to's order).
func Values(path string, from, to any) []Diff {
	switch t := to.(type) {
	case map[string]any:
		f, ok := from.(map[string]any)
		if !ok {
			break
		}
		return diffMap(path, f, t)
	case []any:
		f, ok := from.([]any)
		if !ok {
			break
		}
		return diffList(path, f, t)
	case string:
		f, ok := from.(string)
		if !ok || f == t {
			break
		}
		// A JSON document inside a string (the multi-network annotation)
		// is compared as JSON, so the difference names the entry that
		// changed instead of printing two long strings.
		if fj, tj, ok := bothJSON(f, t); ok {
			return Values(path+"(JSON)", fj, tj)
		}
	}
	if equalScalars(from, to) {
		return nil
	}
	return []Diff{{Path: path, From: from, To: to}}
}

func diffMap(path string, from, to map[string]any) []Diff {
	keys := slices.AppendSeq(slices.Collect(maps.Keys(from)), maps.Keys(to))
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var out []Diff
	for _, k := range keys {
		p := path + Key(k)
		f, fok := from[k]
		t, tok := to[k]
		// An object set on one side only is reported at its leaves
		// ("securityContext.privileged", not "securityContext").
		if _, isMap := t.(map[string]any); isMap && f == nil {
			f, fok = map[string]any{}, true
		}
		if _, isMap := f.(map[string]any); isMap && t == nil {
			t, tok = map[string]any{}, true
		}
		switch {
		case !fok:
			out = append(out, Diff{Path: p, To: t, FromAbsent: true})
		case !tok:
			out = append(out, Diff{Path: p, From: f, ToAbsent: true})
		default:
			out = append(out, Values(p, f, t)...)
		}
	}
	return out
}

func diffList(path string, from, to []any) []Diff {
	fn, fok := names(from)
	tn, tok := names(to)
	if !fok || !tok {
		var out []Diff
		for i := range max(len(from), len(to)) {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(from):
				out = append(out, Diff{Path: p, To: to[i], FromAbsent: true})
			case i >= len(to):
				out = append(out, Diff{Path: p, From: from[i], ToAbsent: true})
			default:
				out = append(out, Values(p, from[i], to[i])...)
			}
		}
		return out
	}
	fi, ti := index(fn), index(tn)
	var out []Diff
	for _, n := range tn {
		p := path + "[name=" + n + "]"
		if j, ok := fi[n]; ok {
			out = append(out, Values(p, from[j], to[ti[n]])...)
		} else {
			out = append(out, Diff{Path: p, To: to[ti[n]], FromAbsent: true})
		}
	}
	for _, n := range fn {
		if _, ok := ti[n]; !ok {
			out = append(out, Diff{Path: path + "[name=" + n + "]", From: from[fi[n]], ToAbsent: true})
		}
	}
	if fo, to, i, moved := Order(fn, tn); moved {
		out = append(out, Diff{Path: path, From: fo, To: to, Reordered: true, Index: i})
	}
	return out
}

// Order compares the relative order of the names two lists share and
// returns those names in each list's order, and where they first differ.
func Order(from, to []string) (fromOrder, toOrder []string, at int, differs bool) {
	fset, tset := make(map[string]bool, len(from)), make(map[string]bool, len(to))
	for _, n := range from {
		fset[n] = true
	}
	for _, n := range to {
		tset[n] = true
	}
	for _, n := range from {
		if tset[n] {
			fromOrder = append(fromOrder, n)
		}
	}
	for _, n := range to {
		if fset[n] {
			toOrder = append(toOrder, n)
		}
	}
	for i := range min(len(fromOrder), len(toOrder)) {
		if fromOrder[i] != toOrder[i] {
			return fromOrder, toOrder, i, true
		}
	}
	return fromOrder, toOrder, 0, false
}

// orderWindow lists a few names of an order from position i on.
func orderWindow(order []string, i int) string {
	const shown = 3
	if i > len(order) {
		i = len(order)
	}
	end := min(len(order), i+shown)
	s := strings.Join(order[i:end], ", ")
	if end < len(order) {
		s += ", …"
	}
	return s
}

// names returns the "name" of every element when each is an object with a
// distinct non-empty string name, the condition for comparing by name.
func names(list []any) ([]string, bool) {
	out := make([]string, 0, len(list))
	seen := map[string]bool{}
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		n, ok := m["name"].(string)
		if !ok || n == "" || seen[n] {
			return nil, false
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, true
}

func index(names []string) map[string]int {
	m := make(map[string]int, len(names))
	for i, n := range names {
		m[n] = i
	}
	return m
}

// equalScalars compares leaves. Numbers are compared by value because the
// two sides may decode the same JSON number as int64 and float64.
func equalScalars(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func bothJSON(a, b string) (any, any, bool) {
	parse := func(s string) (any, bool) {
		t := strings.TrimSpace(s)
		if t == "" || (t[0] != '[' && t[0] != '{') {
			return nil, false
		}
		var v any
		if err := json.Unmarshal([]byte(t), &v); err != nil {
			return nil, false
		}
		return v, true
	}
	av, aok := parse(a)
	bv, bok := parse(b)
	return av, bv, aok && bok
}

// Key renders a map key as a path step: .name for identifiers, ["k"] for
// keys with dots or slashes (label and annotation keys).
func Key(k string) string {
	if k != "" && strings.IndexFunc(k, func(r rune) bool {
		return !(r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0 {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

// maxShown bounds a value printed in a difference; a whole container spec
// would otherwise fill the screen.
const maxShown = 160

// showContext is how much of a long string is shown around its first
// difference from the other side.
const showContext = 40

func show(v any) string {
	if s, ok := v.(string); ok {
		if len(s) > maxShown {
			return strconv.Quote(s[:maxShown]) + fmt.Sprintf("… (%d bytes)", len(s))
		}
		return strconv.Quote(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if len(b) > maxShown {
		return string(b[:maxShown]) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return string(b)
}

// showString quotes s; a long s is cut to a window around where it first
// differs from other, so the change is visible without printing both whole.
func showString(s, other string) string {
	if len(s) <= maxShown {
		return strconv.Quote(s)
	}
	p := 0
	for p < len(s) && p < len(other) && s[p] == other[p] {
		p++
	}
	start := max(0, p-showContext)
	end := min(len(s), p+showContext)
	out := strconv.Quote(s[start:end])
	if start > 0 {
		out = "…" + out
	}
	if end < len(s) {
		out += "…"
	}
	return out + fmt.Sprintf(" (%d bytes, differs at byte %d)", len(s), p)
}
