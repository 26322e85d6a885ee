package requirements

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/internal/structdiff"
)

// Kind is what sort of element a path holds.
type Kind string

// The element kinds the table covers. A rendered leaf outside these kinds
// (names, labels, commands, probes' timing) is held by other checks.
const (
	Capability    Kind = "capability"
	Privilege     Kind = "privilege"
	Device        Kind = "device"
	Annotation    Kind = "annotation"
	HostNamespace Kind = "host namespace"
	Port          Kind = "port"
	Image         Kind = "image"
	Env           Kind = "env"
	Mount         Kind = "mount"
	Volume        Kind = "volume"
	Resource      Kind = "resource"
	// Limit is a process limit a program sets for itself: the benchmark
	// ranks' open-files limit, in the launcher's argv.
	Limit Kind = "limit"
)

// classes map a leaf's path to the element it belongs to: the first pattern
// that matches wins, and its first group is the element's path. The paths
// are structdiff's (named list elements by name, a scalar list's elements by
// value), so one pattern covers the runtime, the benchmark and the
// DaemonSets alike.
var classes = []struct {
	kind Kind
	word string // a literal every matching path contains: a cheap filter before the pattern
	re   *regexp.Regexp
}{
	{Capability, ".capabilities.add[", regexp.MustCompile(`^(.*\.securityContext\.capabilities\.add\[[^\]]+\])$`)},
	{Privilege, ".privileged", regexp.MustCompile(`^(.*\.securityContext\.privileged)$`)},
	// A list under an annotation whose entries are keyed by path is the
	// NRI device injector's: each entry is one device.
	{Device, "[path=", regexp.MustCompile(`^(.*\.annotations\["[^"]+"\]\((?:YAML|JSON)\)\[path=[^\]]+\])`)},
	{Annotation, ".annotations", regexp.MustCompile(`^(.*\.annotations(?:\.[A-Za-z0-9_-]+|\["[^"]+"\]))`)},
	{HostNamespace, ".spec.host", regexp.MustCompile(`^(.*\.spec\.host(?:Network|PID|IPC))$`)},
	{Port, ".port", regexp.MustCompile(`^(.*\.(?:tcpSocket|httpGet|grpc)\.port)$`)},
	{Port, ".ports[", regexp.MustCompile(`^(.*\.ports\[[^\]]+\])`)},
	{Image, ".image", regexp.MustCompile(`^(.*(?:\.containers|\.initContainers)\[name=[^\]]+\]\.image)$`)},
	{Env, ".env[name=", regexp.MustCompile(`^(.*\.env\[name=[^\]]+\])`)},
	{Mount, ".volumeMounts[name=", regexp.MustCompile(`^(.*\.volumeMounts\[name=[^\]]+\])`)},
	{Volume, ".volumes[name=", regexp.MustCompile(`^(.*\.volumes\[name=[^\]]+\])`)},
	// A scalar list element is named by its value: the argv entry that
	// raises a limit is one element.
	{Limit, "ulimit ", regexp.MustCompile(`^(.*\.(?:command|args)\[[^\]]*ulimit [^\]]*\])$`)},
	{Resource, ".resources.", regexp.MustCompile(`^(.*\.resources\.(?:limits|requests)(?:\.[A-Za-z0-9_-]+|\["[^"]+"\]))$`)},
}

// Element is one classified element of a rendered object: the leaves under
// its path, by their path relative to it ("" for the element itself).
type Element struct {
	Artefact string // repo-relative golden path
	Object   string // Kind/name
	Path     string
	Kind     Kind
	Leaves   map[string]string
}

// Objects converts typed API objects to their JSON shape, as the API
// server and the goldens see them.
func Objects(typed ...any) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(typed))
	for i, o := range typed {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i+1, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// Elements walks every object of one artefact and returns its classified
// elements in document order.
func Elements(artefact string, objs ...map[string]any) []Element {
	var out []Element
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		meta, _ := o["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		index := map[string]int{}
		walk("", o, false, func(path, value string) {
			for _, c := range classes {
				if !strings.Contains(path, c.word) {
					continue
				}
				m := c.re.FindStringSubmatch(path)
				if m == nil {
					continue
				}
				i, ok := index[m[1]]
				if !ok {
					i = len(out)
					index[m[1]] = i
					out = append(out, Element{Artefact: artefact, Object: kind + "/" + name, Path: strings.TrimPrefix(m[1], "."), Kind: c.kind, Leaves: map[string]string{}})
				}
				out[i].Leaves[path[len(m[1]):]] = value
				return
			}
		})
	}
	return out
}

// walk calls leaf for every scalar under v. A string under an annotations
// map that holds a YAML or JSON list or object (the NRI device list, the
// multi-network interfaces) is walked as the document it is.
func walk(path string, v any, underAnnotations bool, leaf func(path, value string)) {
	switch t := v.(type) {
	case map[string]any, []any:
		for _, c := range children(path, v, underAnnotations) {
			walk(c.path, c.value, c.underAnnotations, leaf)
		}
	case string:
		if underAnnotations {
			if doc, tag, ok := document(t); ok {
				walk(path+"("+tag+")", doc, false, leaf)
				return
			}
		}
		leaf(path, t)
	case nil:
		leaf(path, "null")
	default:
		leaf(path, fmt.Sprint(t))
	}
}

// child is one member of a map or list with the path walk gives it.
type child struct {
	path             string
	value            any
	underAnnotations bool
	key              string // the map key, or "" in a list
	index            int    // the list index
}

// children lists a map's members in key order or a list's in list order,
// each with its path: a map key by structdiff's grammar, a list element by
// the field that names it, by its value when it is a scalar, else by index.
func children(path string, v any, underAnnotations bool) []child {
	var out []child
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			out = append(out, child{path + structdiff.Key(k), t[k], underAnnotations || k == "annotations", k, 0})
		}
	case []any:
		key := listKey(t)
		for i, e := range t {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case key != "":
				p = fmt.Sprintf("%s[%s=%s]", path, key, e.(map[string]any)[key])
			case isScalar(e):
				p = fmt.Sprintf("%s[%v]", path, e)
			}
			out = append(out, child{p, e, false, "", i})
		}
	}
	return out
}

// listKey is the field that names a list's elements: "name" as structdiff
// matches them, else "path" (the NRI device list); "" when no field names
// every element uniquely.
func listKey(list []any) string {
	for _, key := range []string{"name", "path"} {
		seen := map[string]bool{}
		ok := len(list) > 0
		for _, e := range list {
			m, isMap := e.(map[string]any)
			n, isString := m[key].(string)
			if !isMap || !isString || n == "" || seen[n] {
				ok = false
				break
			}
			seen[n] = true
		}
		if ok {
			return key
		}
	}
	return ""
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

// document parses an annotation value that is a structured document.
func document(s string) (any, string, bool) {
	trimmed := strings.TrimSpace(s)
	tag := "YAML"
	switch {
	case strings.HasPrefix(trimmed, "[") || strings.HasPrefix(trimmed, "{"):
		tag = "JSON"
	case strings.HasPrefix(trimmed, "- "):
	default:
		return nil, "", false
	}
	var doc any
	if err := yaml.Unmarshal([]byte(s), &doc); err != nil || isScalar(doc) {
		return nil, "", false
	}
	return doc, tag, true
}
