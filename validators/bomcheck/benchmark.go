package bomcheck

import (
	"context"
	"fmt"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
)

func checkBenchmarkWiring(_ context.Context, t *Tree) Result {
	files := []string{runtimes.GoldenRuntime, benchmark.GoldenPath}
	bm := t.manifest(benchmark.GoldenPath)
	if bm == nil {
		if _, missing := t.ManifestErrs[benchmark.GoldenPath]; missing {
			return Result{Status: Empty, Message: "no benchmark manifest (" + benchmark.GoldenPath + "): nothing to compare", Files: files}
		}
	}
	shipped, err := typedObject[trainer.ClusterTrainingRuntime](t, runtimes.GoldenRuntime, trainer.ClusterTrainingRuntimeKind)
	if err != nil {
		return fail(files, regenerate, "%v", err)
	}
	bench, err := typedObject[trainer.TrainingRuntime](t, benchmark.GoldenPath, trainer.TrainingRuntimeKind)
	if err != nil {
		return fail(files, regenerate, "%v", err)
	}
	if diffs := benchmark.WiringEqual(shipped, bench); len(diffs) > 0 {
		return fail(files, "derive the benchmark from the shipped runtime ("+regenerate+"); never edit it by hand",
			"the benchmark would measure other wiring than ships: %s", strings.Join(diffs, "; "))
	}
	return pass("%s/%s carries the shipped wiring", bench.Namespace, bench.Name)
}

// typedObject decodes the first object of kind in a loaded manifest.
func typedObject[T any](t *Tree, rel, kind string) (*T, error) {
	m := t.manifest(rel)
	if m == nil {
		return nil, fmt.Errorf("%s did not load: %v", rel, t.ManifestErrs[rel])
	}
	for _, o := range m.Objects {
		if o.GetKind() == kind {
			var out T
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &out); err != nil {
				return nil, fmt.Errorf("%s: %w", rel, err)
			}
			return &out, nil
		}
	}
	return nil, fmt.Errorf("%s holds no %s", rel, kind)
}
