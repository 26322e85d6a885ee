package rendercmd

import (
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// nodeSelectors returns every nodeSelector in the YAML documents of out.
func nodeSelectors(t *testing.T, out string) []map[string]any {
	t.Helper()
	var found []map[string]any
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if sel, ok := c.(map[string]any); ok && k == "nodeSelector" {
					found = append(found, sel)
				}
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	for doc := range strings.SplitSeq(out, "\n---\n") {
		var v any
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatalf("output is not YAML: %v", err)
		}
		walk(v)
	}
	if len(found) == 0 {
		t.Fatalf("no nodeSelector in the output:\n%s", out)
	}
	return found
}

// render's --node-selector takes what discover's and check cluster's take,
// a label selector, as far as a nodeSelector can express it: its equality
// terms, comma-separated, and the flag may still be repeated.
func TestNodeSelectorTakesALabelSelectorsEqualityTerms(t *testing.T) {
	want := map[string]any{"pool": "a3", "zone": "us-east5-a", "tier": "gpu", "cloud.google.com/gke-nodepool": "a3-mega"}
	args := []string{"--interfaces", valid,
		"--node-selector", "pool=a3,zone==us-east5-a",
		"--node-selector", " tier = gpu ",
		"--node-selector", "cloud.google.com/gke-nodepool=a3-mega"}
	for _, cmd := range []string{"runtime", "benchmark"} {
		code, out, stderr := render(t, append([]string{cmd}, args...)...)
		if code != cli.ExitOK {
			t.Fatalf("render %s: exit %d: %s", cmd, code, stderr)
		}
		for _, sel := range nodeSelectors(t, out) {
			if !reflect.DeepEqual(sel, want) {
				t.Errorf("render %s: nodeSelector %v, want %v", cmd, sel, want)
			}
		}
	}
}

// A set-based term is refused with exit 2, naming the flag, the term and
// why, in render runtime and render benchmark alike; nothing is printed.
func TestNodeSelectorRefusesSetBasedTerms(t *testing.T) {
	for arg, what := range map[string]string{
		"pool!=a3":             `"pool!=a3" is a set-based term (not equal)`,
		"pool in (a3,b3)":      `"pool in (a3,b3)" is a set-based term (one of a set)`,
		"zone=x,pool in (a,b)": `"pool in (a,b)" is a set-based term (one of a set)`,
		"pool notin (a3)":      `"pool notin (a3)" is a set-based term (none of a set)`,
		"!pool":                `"!pool" is a set-based term (the label is absent)`,
		"pool":                 `"pool" is a set-based term (the label exists)`,
		"pool=a3,gpu":          `"gpu" is a set-based term (the label exists)`,
		"gpus>4":               `"gpus>4" is a set-based term (a numeric comparison)`,
	} {
		for _, cmd := range []string{"runtime", "benchmark"} {
			code, out, stderr := render(t, cmd, "--interfaces", valid, "--node-selector", arg)
			for _, w := range []string{"--node-selector ", what, "matches labels by equality only", "key=value"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("render %s --node-selector %q: stderr lacks %q: %s", cmd, arg, w, stderr)
				}
			}
			if code != cli.ExitUsage || out != "" {
				t.Errorf("render %s --node-selector %q: exit %d, %d bytes printed; want exit 2 and nothing", cmd, arg, code, len(out))
			}
		}
	}
}

func TestNodeSelectorRefusesMalformedTerms(t *testing.T) {
	for arg, want := range map[string]string{
		"pool=a3,":      `--node-selector "pool=a3,": want key=value`,
		"pool=a3,,x=y":  `--node-selector "pool=a3,,x=y": want key=value`,
		"=a3":           `--node-selector "=a3": want key=value`,
		"pool=a,pool=b": `--node-selector "pool=a,pool=b": key "pool" is already selected with value "a"`,
		"pool=a,b":      `"b" is a set-based term`,
	} {
		code, out, stderr := render(t, "runtime", "--interfaces", valid, "--node-selector", arg)
		if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, want) {
			t.Errorf("--node-selector %q: exit %d, stderr %q; want exit 2 and %q", arg, code, stderr, want)
		}
	}
}
