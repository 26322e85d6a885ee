// Package goldens renders every committed artifact downstream of the
// generated constants: the runtime and component manifests, the derived
// benchmark, the emitter's own golden, the admission policies and the
// generated documentation pages. `render goldens` writes them and the
// coupling check re-renders them, from one function, so the two can never
// disagree about what "current" means. It owns the set of goldens and their
// paths, not how each is built (runtimes, derive, emit, admission, docgen).
package pipeline

import (
	"maps"

	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/pipeline/docgen"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/admission"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
)

// Render returns every golden keyed by repo-relative path. root is the
// checkout the documentation pages and realization matrices are read from.
func Render(root string, in *runtimes.Inputs) (map[string][]byte, error) {
	files, err := runtimes.Goldens(in)
	if err != nil {
		return nil, err
	}
	rt, err := runtimes.TorchRuntime(in, runtimes.Options{Interfaces: runtimes.ExampleInterfaces()})
	if err != nil {
		return nil, err
	}
	if files[benchmark.GoldenPath], err = benchmark.Golden(rt, in.Facts); err != nil {
		return nil, err
	}
	if files[emit.FixtureGolden], err = emit.Go("tcpxo", emit.FixtureFacts()); err != nil {
		return nil, err
	}
	policies, err := admission.Goldens(in)
	if err != nil {
		return nil, err
	}
	maps.Copy(files, policies)
	pages, err := docgen.Pages(root, in)
	if err != nil {
		return nil, err
	}
	maps.Copy(files, pages)
	return files, nil
}
