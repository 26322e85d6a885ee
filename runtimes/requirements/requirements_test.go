package requirements

import (
	"slices"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

func inputs(t testing.TB) *runtimes.Inputs {
	t.Helper()
	in, err := shipped.LoadInputs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func shippedArtefacts(t testing.TB, in *runtimes.Inputs) map[string][]any {
	t.Helper()
	arts, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	return arts
}

func findings(t testing.TB, in *runtimes.Inputs, arts map[string][]any) []Finding {
	t.Helper()
	rows, err := Table(in)
	if err != nil {
		t.Fatal(err)
	}
	elems, err := ElementsOf(arts)
	if err != nil {
		t.Fatal(err)
	}
	return Check(rows, elems)
}

// TestShippedMeetsTable: what the builders render carries every required
// element and nothing the table does not explain.
func TestShippedMeetsTable(t *testing.T) {
	in := inputs(t)
	for _, f := range findings(t, in, shippedArtefacts(t, in)) {
		t.Error(f)
	}
}

// TestUnexplainedElementFails: an element the builders add without a row
// is reported, naming it, so the table cannot fall behind what ships.
func TestUnexplainedElementFails(t *testing.T) {
	in := inputs(t)
	rows, err := Table(in)
	if err != nil {
		t.Fatal(err)
	}
	arts := shippedArtefacts(t, in)
	rt := arts[runtimes.GoldenRuntime][0].(*trainer.ClusterTrainingRuntime)
	d := &rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.InitContainers[0]
	d.SecurityContext.Capabilities.Add = append(d.SecurityContext.Capabilities.Add, "SYS_ADMIN")
	elems, err := ElementsOf(arts)
	if err != nil {
		t.Fatal(err)
	}
	got := Check(rows, elems)
	if len(got) != 1 || got[0].Problem != Unexplained || !strings.Contains(got[0].String(), "capabilities.add[SYS_ADMIN]") {
		t.Fatalf("want one unexplained SYS_ADMIN, got %v", got)
	}
}

// Issue 38, item 1: every capability row names the source that requires
// its spelling (NVIDIA cluster-readiness-engine #438: containerd drops the
// CAP_ prefix), so a shipped CAP_NET_ADMIN is not the required NET_ADMIN:
// NET_ADMIN is missing, naming that source, and CAP_NET_ADMIN is a name no
// row can explain, with the name to write.
func TestPrefixedCapabilityIsNotTheElement(t *testing.T) {
	in := inputs(t)
	rows, err := Table(in)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		if r.Kind == Capability {
			n++
			if !strings.Contains(r.Source, "written without the CAP_ prefix: containerd drops") || !strings.Contains(r.Source, "NVIDIA cluster-readiness-engine issue #438") {
				t.Errorf("capability row %s: source %q does not name the prefix rule", r.Path, r.Source)
			}
		}
	}
	if n == 0 {
		t.Fatal("no capability rows")
	}
	arts := shippedArtefacts(t, in)
	rt := arts[runtimes.GoldenRuntime][0].(*trainer.ClusterTrainingRuntime)
	d := &rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.InitContainers[0]
	i := slices.Index(d.SecurityContext.Capabilities.Add, "NET_ADMIN")
	if d.Name != names.DaemonContainer || i < 0 {
		t.Fatalf("the shipped runtime's first init container is %s with %v", d.Name, d.SecurityContext.Capabilities.Add)
	}
	d.SecurityContext.Capabilities.Add[i] = "CAP_NET_ADMIN"
	elems, err := ElementsOf(arts)
	if err != nil {
		t.Fatal(err)
	}
	got := Check(rows, elems)
	if len(got) != 2 || got[0].Problem != Missing || got[1].Problem != Unexplained {
		t.Fatalf("want NET_ADMIN missing and CAP_NET_ADMIN unexplained, got %v", got)
	}
	for _, w := range []string{"capabilities.add[NET_ADMIN] is absent", "written without the CAP_ prefix", "NVIDIA cluster-readiness-engine issue #438", "runtimes/wiring.go"} {
		if !strings.Contains(got[0].String(), w) {
			t.Errorf("%q lacks %q", got[0], w)
		}
	}
	for _, w := range []string{"capabilities.add[CAP_NET_ADMIN]", "containerd drops a capability name written with the CAP_ prefix", "NVIDIA cluster-readiness-engine issue #438", "write NET_ADMIN"} {
		if !strings.Contains(got[1].String(), w) {
			t.Errorf("%q lacks %q", got[1], w)
		}
	}
	if strings.Contains(got[1].String(), "add a row") {
		t.Errorf("%q asks for a row for a name containerd drops", got[1])
	}
}

// TestReferenceRowsAreRequired: the wiring reference the user guide prints
// (one row per shipped element) names only elements the table requires, so
// the documentation and the release gate describe the same wiring.
func TestReferenceRowsAreRequired(t *testing.T) {
	in := inputs(t)
	rows, err := Table(in)
	if err != nil {
		t.Fatal(err)
	}
	rt := shippedArtefacts(t, in)[runtimes.GoldenRuntime][0].(*trainer.ClusterTrainingRuntime)
	refs, err := runtimes.Reference(rt, in.Overrides, in.Facts.PluginVersion)
	if err != nil {
		t.Fatal(err)
	}
	pod := replicatedPod("node")
	for _, ref := range refs {
		prefix := map[string]string{
			"annotation": pod + `.metadata.annotations["` + ref.Name + `"]`,
			"sidecar":    pod + ".spec.initContainers[name=" + ref.Name + "]",
			"volume":     pod + ".spec.volumes[name=" + ref.Name + "]",
			"resource":   pod + worker + `.resources.limits["` + ref.Name + `"]`,
			"env":        pod + worker + ".env[name=" + ref.Name + "]",
		}[ref.Kind]
		found := slices.ContainsFunc(rows, func(r Row) bool {
			if r.Artefact != runtimes.GoldenRuntime {
				return false
			}
			if ref.Kind == "capability" {
				return strings.HasSuffix(r.Path, ".securityContext.capabilities.add["+ref.Name+"]")
			}
			return prefix != "" && strings.HasPrefix(r.Path, prefix)
		})
		if !found {
			t.Errorf("the wiring reference lists %s %s, which no requirement covers", ref.Kind, ref.Name)
		}
	}
}

// TestReplicatedJobNamesWithinTrainerBound: every runtime we ship (the
// training runtime and the benchmark) keeps its replicatedJob names within
// what trainer v2.4.0 accepts, and a longer one is named with its source.
func TestReplicatedJobNamesWithinTrainerBound(t *testing.T) {
	arts := shippedArtefacts(t, inputs(t))
	jobs := 0
	for _, rel := range Artefacts {
		objs, err := Objects(arts[rel]...)
		if err != nil {
			t.Fatal(err)
		}
		if f := NameBounds(rel, objs...); len(f) > 0 {
			t.Errorf("%s: %v", rel, f)
		}
		for _, o := range objs {
			spec, _ := o["spec"].(map[string]any)
			tpl, _ := spec["template"].(map[string]any)
			inner, _ := tpl["spec"].(map[string]any)
			list, _ := inner["replicatedJobs"].([]any)
			jobs += len(list)
			for _, j := range list {
				j.(map[string]any)["name"] = "launcher-with-a-longer-name"
			}
		}
		for _, f := range NameBounds(rel, objs...) {
			if msg := f.String(); !strings.Contains(msg, "27 characters, over the 20") || !strings.Contains(msg, "PR 4394") {
				t.Errorf("finding does not give the length, the bound and its source: %s", msg)
			}
			jobs--
		}
	}
	if jobs != 0 {
		t.Errorf("%d renamed replicatedJobs were not found over the bound", jobs)
	}
}
