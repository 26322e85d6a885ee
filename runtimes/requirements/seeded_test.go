package requirements

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// edit applies f to the member at target under v (a map or list whose path
// is path), with the paths walk gives; f returns the new value, or keep
// false to remove the member. It reports whether target was found.
func edit(path string, v any, underAnnotations bool, target string, f func(any) (any, bool)) bool {
	for _, c := range children(path, v, underAnnotations) {
		if c.path == target {
			nv, keep := f(c.value)
			set(v, c, nv, keep)
			return true
		}
		if !strings.HasPrefix(target, c.path) || !strings.ContainsAny(target[len(c.path):len(c.path)+1], ".[(") {
			continue
		}
		if s, ok := c.value.(string); ok && c.underAnnotations {
			doc, tag, ok := document(s)
			if !ok {
				return false
			}
			// The document is walked under a wrapper so that a change at
			// its root (a list's element) can be written back.
			wrapper := map[string]any{"doc": doc}
			inner := strings.Replace(target, c.path+"("+tag+")", c.path+"("+tag+").doc", 1)
			if !edit(c.path+"("+tag+")", wrapper, false, inner, f) {
				return false
			}
			var data []byte
			var err error
			if tag == "JSON" {
				data, err = json.Marshal(wrapper["doc"])
			} else {
				data, err = yaml.Marshal(wrapper["doc"])
			}
			if err != nil {
				panic(err) // a document that decoded re-encodes
			}
			set(v, c, string(data), true)
			return true
		}
		return edit(c.path, c.value, c.underAnnotations, target, f)
	}
	return false
}

func set(parent any, c child, nv any, keep bool) {
	switch p := parent.(type) {
	case map[string]any:
		if keep {
			p[c.key] = nv
		} else {
			delete(p, c.key)
		}
	case []any:
		if keep {
			p[c.index] = nv
		} else {
			// Removing from a slice in place is not visible to the map
			// holding it; callers hold lists through their parent, so the
			// element is marked and swept by sweep.
			p[c.index] = removed{}
		}
	}
}

type removed struct{}

// sweep drops the elements set marks as removed.
func sweep(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = sweep(e)
		}
	case []any:
		out := t[:0]
		for _, e := range t {
			if _, gone := e.(removed); !gone {
				out = append(out, sweep(e))
			}
		}
		return out
	}
	return v
}

// rendered is what ships, converted once: each object's JSON shape and
// its elements, for the seeded defects to change one object at a time.
type rendered struct {
	artefact string
	typed    any
	object   string
	u        map[string]any
	elements []Element
}

func render(t *testing.T, arts map[string][]any) []rendered {
	t.Helper()
	var out []rendered
	for rel, objs := range arts {
		for _, o := range objs {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				t.Fatal(err)
			}
			meta, _ := u["metadata"].(map[string]any)
			out = append(out, rendered{rel, o, fmt.Sprintf("%s/%s", u["kind"], meta["name"]), u, Elements(rel, u)})
		}
	}
	return out
}

// seed applies f at the row's element (its path joined with leaf) in the
// object that holds it, converts that object back to its type, as a
// builder that produced the changed object would, and returns the
// elements of everything that ships with that one change.
func seed(t *testing.T, objs []rendered, r Row, leaf string, f func(any) (any, bool)) []Element {
	t.Helper()
	var out []Element
	found := false
	for _, o := range objs {
		if o.artefact != r.Artefact || o.object != r.Object {
			out = append(out, o.elements...)
			continue
		}
		found = true
		u := runtime.DeepCopyJSON(o.u)
		if !edit("", u, false, "."+r.Path+leaf, f) {
			t.Fatalf("%s: no %s in %s to change", r.Artefact, r.Path+leaf, r.Object)
		}
		u = sweep(u).(map[string]any)
		typed := reflect.New(reflect.TypeOf(o.typed).Elem()).Interface()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, typed); err != nil {
			t.Fatalf("the changed %s is no longer a %T: %v", r.Object, o.typed, err)
		}
		back, err := Objects(typed)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Elements(o.artefact, back...)...)
	}
	if !found {
		t.Fatalf("no object %s in %s", r.Object, r.Artefact)
	}
	return out
}

// neighbour is the smallest change of a value that keeps its type valid:
// a flipped bool, the next number or quantity, a suffixed string.
func neighbour(v any) any {
	switch x := v.(type) {
	case bool:
		return !x
	case int64:
		return x + 1
	case float64:
		return x + 1
	case string:
		if q, err := resource.ParseQuantity(x); err == nil {
			q.Add(resource.MustParse("1"))
			return q.String()
		}
		return x + "-seeded"
	}
	panic(fmt.Sprintf("no neighbour for %T", v))
}

// TestSeededDefects: for every row of the table, drop its element from
// what the builders render, and change each value it requires; the check
// must fail for that row, naming its source and the file that ships it.
// The table drives it, so a new row is covered the moment it is written.
func TestSeededDefects(t *testing.T) {
	in := inputs(t)
	rows, err := Table(in)
	if err != nil {
		t.Fatal(err)
	}
	objs := render(t, shippedArtefacts(t, in))
	for _, r := range rows {
		t.Run(r.Artefact+"/"+r.Object+"/"+r.Path, func(t *testing.T) {
			// A dropped field the type cannot leave unset (a port) reads
			// back as its zero value, and a value changed to its zero value
			// (hostNetwork false) is omitted: either finding names the row.
			expect(t, Check(rows, seed(t, objs, r, "", func(any) (any, bool) { return nil, false })), r, Missing, Changed)
			for leaf := range r.Want {
				expect(t, Check(rows, seed(t, objs, r, leaf, func(v any) (any, bool) { return neighbour(v), true })), r, Changed, Missing)
			}
		})
	}
}

func expect(t *testing.T, got []Finding, r Row, ps ...Problem) {
	t.Helper()
	for _, f := range got {
		if slices.Contains(ps, f.Problem) && f.Row != nil && f.Row.Path == r.Path && f.Row.Object == r.Object {
			msg := f.String()
			for _, part := range []string{r.Path, r.Source, r.ShippedBy, r.Artefact} {
				if !strings.Contains(msg, part) {
					t.Errorf("the finding does not name %q: %s", part, msg)
				}
			}
			return
		}
	}
	t.Errorf("a seeded defect of %s went unnoticed (want %v); findings: %v", r.Path, ps, got)
}
