package realize

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/kubeflow/trainer/v2/pkg/constants"

	"github.com/tcpxogen/tcpxogen/internal/wiring"
)

// What a case's Expect reports through. The expectations run in two
// places: under go test, and in the compat command, which has no
// testing.T and must record a failure in the report row rather than abort.
// Check is the small part of testing.T they need (Errorf), and the
// expect* helpers below are the assertions the cases are written in.

// Check collects expectation failures. Tests report them with t.Error; the
// compat command records them in the row and fails.
type Check struct {
	failures []string
}

// Errorf records a failure.
func (c *Check) Errorf(format string, args ...any) {
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

// Failures returns what failed, in order.
func (c *Check) Failures() []string { return c.failures }

// failing to fail.
func expectLaunch(c *Check, o *Outcome, failing ...string) {
	if !o.Launch.Judged {
		c.Errorf("launch not judged: %s", o.Launch.Summary)
		return
	}
	var got []string
	for _, p := range o.Launch.Problems {
		got = append(got, p.Check)
	}
	if !slices.Equal(got, failing) {
		c.Errorf("launch checks failing = %q, want %q (%s)", got, failing, o.Launch.Summary)
	}
}

// expectChanges requires the non-addition changes to be exactly want.
func expectChanges(c *Check, o *Outcome, want ...wiring.Change) {
	got := map[wiring.Change]bool{}
	for _, ch := range o.Changes {
		if !ch.IsAddition() {
			got[ch] = true
		}
	}
	for _, w := range want {
		if !got[w] {
			c.Errorf("missing change %q", w)
		}
		delete(got, w)
	}
	for _, ch := range o.Changes {
		if got[ch] {
			c.Errorf("unexpected change %q", ch)
		}
	}
}

func expectAdded(c *Check, o *Outcome, want ...wiring.Change) {
	for _, w := range want {
		found := false
		for _, ch := range o.Changes {
			found = found || ch == w
		}
		if !found {
			c.Errorf("missing addition %q", w)
		}
	}
}

func expectAddedPath(c *Check, o *Outcome, what, path string) {
	for _, ch := range o.Changes {
		if ch.What == what && ch.Path == path {
			return
		}
	}
	c.Errorf("missing %s %s", what, path)
}

func expectNodes(c *Check, o *Outcome, n int32) {
	nj := o.NodeJob()
	if nj == nil {
		c.Errorf("realized JobSet has no %s replicated job", constants.Node)
		return
	}
	if p := ptr.Deref(nj.Template.Spec.Parallelism, -1); p != n {
		c.Errorf("node parallelism = %d, want %d", p, n)
	}
	if p := ptr.Deref(nj.Template.Spec.Completions, -1); p != n {
		c.Errorf("node completions = %d, want %d", p, n)
	}
}

func expectEnv(c *Check, o *Outcome, want map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(want)) {
		got, ok := o.NodeEnv(k)
		if !ok {
			c.Errorf("node env %s unset, want %q", k, want[k])
		} else if got != want[k] {
			c.Errorf("node env %s = %q, want %q", k, got, want[k])
		}
	}
}

func expectEnvUnset(c *Check, o *Outcome, names ...string) {
	for _, k := range names {
		if got, ok := o.NodeEnv(k); ok {
			c.Errorf("node env %s = %q, want unset", k, got)
		}
	}
}

// expectEnvCount guards against an upsert that appends instead of
// replacing: with duplicates the container's last value would win, whatever
// a by-name diff says.
func expectEnvCount(c *Check, o *Outcome, name string, n int) {
	count := 0
	for _, e := range o.Wiring.NodeEnv {
		if e.Name == name {
			count++
		}
	}
	if count != n {
		c.Errorf("node env %s appears %d times, want %d", name, count, n)
	}
}

// expectGPUs checks the node container's nvidia.com/gpu limit and request;
// "" means absent.
func expectGPUs(c *Check, o *Outcome, limit, request string) {
	for _, x := range []struct {
		kind string
		list corev1.ResourceList
		want string
	}{{"limits", o.Wiring.NodeResources.Limits, limit}, {"requests", o.Wiring.NodeResources.Requests, request}} {
		q, ok := x.list[gpuResource]
		switch {
		case x.want == "" && ok:
			c.Errorf("node %s %s = %s, want absent", x.kind, gpuResource, q.String())
		case x.want != "" && !ok:
			c.Errorf("node %s %s absent, want %s", x.kind, gpuResource, x.want)
		case x.want != "" && q.Cmp(resource.MustParse(x.want)) != 0:
			c.Errorf("node %s %s = %s, want %s", x.kind, gpuResource, q.String(), x.want)
		}
	}
}

// expectSnapshot checks the runtime snapshot ConfigMap is there exactly
// when the version writes one, and that it holds the runtime.
func expectSnapshot(c *Check, o *Outcome) {
	cm := o.Other("ConfigMap", BareTrainJobName+"-runtime-snapshot")
	switch {
	case o.Behavior.RuntimeSnapshot && cm == nil:
		c.Errorf("no %s-runtime-snapshot ConfigMap", BareTrainJobName)
	case !o.Behavior.RuntimeSnapshot && cm != nil:
		c.Errorf("unexpected runtime snapshot ConfigMap %s", cm.GetName())
	case cm != nil:
		data, _, _ := unstructured.NestedString(cm.Object, "data", "runtime")
		if !strings.Contains(data, "name: "+o.Runtime.GetName()) {
			c.Errorf("runtime snapshot does not hold runtime %s", o.Runtime.GetName())
		}
	}
}
