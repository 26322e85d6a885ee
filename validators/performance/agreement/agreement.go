// Package agreement checks that the shipped runtime deployed on a cluster is
// the one the recipe's GPU-NIC mapping renders: the "recipe → deployed →
// rendered agree" step that must pass before a benchmark derived from the
// deployed runtime may be called evidence about what ships (runtimeSource
// "shipped", see docs/design.md).
//
// A deployed object never equals its manifest byte for byte: the API server
// adds metadata (uid, resourceVersion, generation, creationTimestamp,
// managedFields), tools add labels and annotations (kubectl's
// last-applied-configuration, GitOps ownership labels), and the CRD's
// structural defaults fill in fields the manifest left out. None of these is
// a disagreement. So the comparison is made between the two objects as the
// API server would store them, both defaulted by the real apiextensions
// defaulting code against the pinned trainer CRDs (package schema), and it
// covers exactly what tcpxogen owns: the whole spec, and the labels and
// annotations the rendered runtime sets. Anything else in metadata, and
// status, is ignored.
package agreement

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tcpxogen/tcpxogen/validators/schema"
)

// trainerValidator is built once: loading the trainer CRDs parses several
// megabytes of OpenAPI schema, and the result is safe for concurrent use.
var trainerValidator = sync.OnceValues(schema.NewTrainer)

// Check compares the deployed ClusterTrainingRuntime with the rendered one and
// returns one line per difference, "path: deployed X vs rendered Y", in
// document order (labels, annotations, then the spec); nil when they agree. Paths name list elements by their name where
// they have one (containers[name=node].env[name=NCCL_ALGO].value), so a
// difference reads the same whatever the element's position.
//
// It defaults both objects with the trainer CRDs linked into this binary (see
// schema.NewTrainer). If that is impossible, or an object cannot be defaulted
// at all, Check cannot tell agreement from disagreement, and it fails closed:
// the single returned line says why the comparison could not be made. Callers
// that need to tell the two apart use Compare.
func Check(deployed, rendered *trainer.ClusterTrainingRuntime) []string {
	v, err := trainerValidator()
	if err == nil {
		var diffs []string
		if diffs, err = Compare(v, deployed, rendered); err == nil {
			return diffs
		}
	}
	return []string{"(comparison not possible): " + err.Error()}
}

// Compare is Check with the validator that defaults the objects supplied by
// the caller. The error is reserved for objects that cannot be compared at
// all (nil, not serializable, or of a kind the validator has no CRD for); it
// is never returned together with differences.
func Compare(v *schema.Validator, deployed, rendered *trainer.ClusterTrainingRuntime) ([]string, error) {
	if v == nil {
		return nil, errors.New("no schema validator to default the runtimes with: build one with schema.NewTrainer")
	}
	d, err := stored(v, "deployed", deployed)
	if err != nil {
		return nil, err
	}
	r, err := stored(v, "rendered", rendered)
	if err != nil {
		return nil, err
	}

	var diffs []string
	// Only the labels and annotations the rendered runtime sets: others on the
	// deployed object belong to whoever applied it (kubectl, a GitOps
	// controller, the validator's own install-id label) and are not part of
	// what tcpxogen ships.
	for _, field := range []string{"labels", "annotations"} {
		want, _, _ := unstructured.NestedStringMap(r.Object, "metadata", field)
		got, _, _ := unstructured.NestedStringMap(d.Object, "metadata", field)
		for _, k := range slices.Sorted(maps.Keys(want)) {
			path := "metadata." + field + key(k)
			gv, ok := got[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s: deployed absent vs rendered %s", path, show(want[k])))
				continue
			}
			diffs = append(diffs, diffValue(path, gv, want[k])...)
		}
	}
	diffs = append(diffs, diffValue("spec", d.Object["spec"], r.Object["spec"])...)
	return diffs, nil
}

// stored returns obj as the API server would store it: pruned and defaulted
// by the CRD's structural schema. Findings do not stop the comparison: a
// deployed object was admitted by the server whatever this validator thinks,
// and what matters here is only whether the two stored forms differ.
func stored(v *schema.Validator, which string, obj *trainer.ClusterTrainingRuntime) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, fmt.Errorf("the %s ClusterTrainingRuntime is nil", which)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting the %s ClusterTrainingRuntime %q: %w", which, obj.Name, err)
	}
	// The typed object's TypeMeta is often empty (clients strip it on
	// decode); the kind is known, and the validator routes by it.
	u["apiVersion"] = trainer.GroupVersion.String()
	u["kind"] = trainer.ClusterTrainingRuntimeKind
	rep, err := v.ValidateObject(&unstructured.Unstructured{Object: u})
	if err != nil {
		return nil, fmt.Errorf("defaulting the %s ClusterTrainingRuntime %q: %w", which, obj.Name, err)
	}
	if rep.Defaulted == nil {
		return nil, fmt.Errorf("defaulting the %s ClusterTrainingRuntime %q: the validator could not apply the CRD defaults (%v); check that it loads the trainer CRDs", which, obj.Name, rep.Err())
	}
	return rep.Defaulted, nil
}

// diffValue compares two JSON-shaped values (as decoded by encoding/json or
// the unstructured converter) and describes every difference under path.
func diffValue(path string, got, want any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		return diffMap(path, g, w)
	case []any:
		g, ok := got.([]any)
		if !ok {
			break
		}
		return diffList(path, g, w)
	case string:
		g, ok := got.(string)
		if !ok || g == w {
			break
		}
		// A JSON document inside a string (the multi-network annotation)
		// is compared as JSON, so the difference names the entry that
		// changed instead of printing two long strings.
		if gj, wj, ok := bothJSON(g, w); ok {
			return diffValue(path+"(JSON)", gj, wj)
		}
		return []string{fmt.Sprintf("%s: deployed %s vs rendered %s", path, showString(g, w), showString(w, g))}
	}
	if equalScalars(got, want) {
		return nil
	}
	return []string{fmt.Sprintf("%s: deployed %s vs rendered %s", path, show(got), show(want))}
}

func diffMap(path string, got, want map[string]any) []string {
	keys := slices.AppendSeq(slices.Collect(maps.Keys(got)), maps.Keys(want))
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var out []string
	for _, k := range keys {
		p := path + key(k)
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			out = append(out, fmt.Sprintf("%s: deployed absent vs rendered %s", p, show(w)))
		case !wok:
			out = append(out, fmt.Sprintf("%s: deployed %s vs rendered absent", p, show(g)))
		default:
			out = append(out, diffValue(p, g, w)...)
		}
	}
	return out
}

// diffList compares lists of named objects (containers, env, volumes,
// volumeMounts, replicatedJobs, ...) by name, and any other list by index.
// For named lists the order of the common elements is compared as well:
// order is meaningful for env ($(VAR) references expand only from earlier
// entries) and for init containers (they start in order).
func diffList(path string, got, want []any) []string {
	gn, gok := names(got)
	wn, wok := names(want)
	if !gok || !wok {
		var out []string
		for i := range max(len(got), len(want)) {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(got):
				out = append(out, fmt.Sprintf("%s: deployed absent vs rendered %s", p, show(want[i])))
			case i >= len(want):
				out = append(out, fmt.Sprintf("%s: deployed %s vs rendered absent", p, show(got[i])))
			default:
				out = append(out, diffValue(p, got[i], want[i])...)
			}
		}
		return out
	}
	gi := index(gn)
	wi := index(wn)
	var out []string
	var gOrder, wOrder []string
	for _, n := range wn {
		p := path + "[name=" + n + "]"
		j, ok := gi[n]
		if !ok {
			out = append(out, fmt.Sprintf("%s: deployed absent vs rendered %s", p, show(want[wi[n]])))
			continue
		}
		wOrder = append(wOrder, n)
		out = append(out, diffValue(p, got[j], want[wi[n]])...)
	}
	for _, n := range gn {
		if _, ok := wi[n]; !ok {
			out = append(out, fmt.Sprintf("%s[name=%s]: deployed %s vs rendered absent", path, n, show(got[gi[n]])))
			continue
		}
		gOrder = append(gOrder, n)
	}
	if !slices.Equal(gOrder, wOrder) {
		// gOrder and wOrder hold the same names, so they first differ
		// somewhere inside both; a few names from there show the swap.
		i := 0
		for gOrder[i] == wOrder[i] {
			i++
		}
		out = append(out, fmt.Sprintf("%s: order differs from element %d: deployed [%s] vs rendered [%s]", path, i, orderWindow(gOrder, i), orderWindow(wOrder, i)))
	}
	return out
}

// orderWindow lists a few names of an order from position i on.
func orderWindow(order []string, i int) string {
	const shown = 3
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

// key renders a map key as a path step: .name for identifiers, ["k"] for keys
// with dots or slashes (label and annotation keys).
func key(k string) string {
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
