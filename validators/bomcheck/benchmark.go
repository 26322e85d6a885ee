package bomcheck

import (
	"context"
	"fmt"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
)

// benchmarkPairs are the benchmark goldens, each with the golden of the
// shipped runtime it is derived from: TCPXO's, then gIB's per machine type.
func benchmarkPairs() [][2]string {
	pairs := [][2]string{{runtimes.GoldenRuntime, benchmark.GoldenPath}}
	for _, mt := range fabric.GIB.MachineTypeNames() {
		pairs = append(pairs, [2]string{runtimes.GoldenRDMARuntime(mt), runtimes.GoldenRDMABenchmark(mt)})
	}
	return pairs
}

func checkBenchmarkWiring(_ context.Context, t *Tree) Result {
	var files, carried []string
	for _, pair := range benchmarkPairs() {
		files = append(files, pair[0], pair[1])
	}
	for i, pair := range benchmarkPairs() {
		shippedPath, benchPath := pair[0], pair[1]
		pairFiles := pair[:]
		if t.manifest(benchPath) == nil {
			if _, missing := t.ManifestErrs[benchPath]; missing && i == 0 {
				// TCPXO's reading of a tree without a benchmark, unchanged.
				return Result{Status: Empty, Message: "no benchmark manifest (" + benchPath + "): nothing to compare", Files: files}
			}
		}
		shipped, err := typedObject[trainer.ClusterTrainingRuntime](t, shippedPath, trainer.ClusterTrainingRuntimeKind)
		if err != nil {
			return fail(pairFiles, regenerate, "%v", err)
		}
		bench, err := typedObject[trainer.TrainingRuntime](t, benchPath, trainer.TrainingRuntimeKind)
		if err != nil {
			return fail(pairFiles, regenerate, "%v", err)
		}
		if diffs := benchmark.WiringEqual(shipped, bench); len(diffs) > 0 {
			return fail(pairFiles, "derive the benchmark from the shipped runtime ("+regenerate+"); never edit it by hand",
				"%s would measure other wiring than %s ships: %s", benchPath, shippedPath, strings.Join(diffs, "; "))
		}
		carried = append(carried, bench.Namespace+"/"+bench.Name)
	}
	return pass("%s carry the shipped wiring", strings.Join(carried, ", "))
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
