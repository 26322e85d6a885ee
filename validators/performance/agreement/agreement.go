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
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tcpxogen/tcpxogen/internal/structdiff"
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

	var diffs []structdiff.Diff
	// Only the labels and annotations the rendered runtime sets: others on the
	// deployed object belong to whoever applied it (kubectl, a GitOps
	// controller, the validator's own install-id label) and are not part of
	// what tcpxogen ships.
	for _, field := range []string{"labels", "annotations"} {
		want, _, _ := unstructured.NestedStringMap(r.Object, "metadata", field)
		got, _, _ := unstructured.NestedStringMap(d.Object, "metadata", field)
		for _, k := range slices.Sorted(maps.Keys(want)) {
			path := "metadata." + field + structdiff.Key(k)
			gv, ok := got[k]
			if !ok {
				diffs = append(diffs, structdiff.Diff{Path: path, To: want[k], FromAbsent: true})
				continue
			}
			diffs = append(diffs, structdiff.Values(path, gv, want[k])...)
		}
	}
	diffs = append(diffs, structdiff.Values("spec", d.Object["spec"], r.Object["spec"])...)
	var out []string
	for _, d := range diffs {
		out = append(out, d.Format("deployed", "rendered"))
	}
	return out, nil
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
