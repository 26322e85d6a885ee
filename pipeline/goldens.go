package pipeline

import (
	"maps"
	"path"

	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/pipeline/docgen"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/admission"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/deploy"
)

// Render is the table of goldens: every committed artefact downstream of
// the generated constants (the runtime and component manifests, the derived
// benchmark, the emitter's own golden, the admission policies, each
// fabric's Helm chart and kustomize base under deploy/, and the generated
// documentation pages), keyed by repo-relative path. Run writes
// them and bom-check re-renders them through it, so the two can never
// disagree about what "current" means. It owns the set of goldens and their
// paths, not how each is built (runtimes, benchmark, emit, admission,
// docgen). root is the checkout the documentation pages and realization
// matrices are read from.
func Render(root string, in *runtimes.Inputs) (map[string][]byte, error) {
	rt, err := runtimes.TorchRuntime(in, runtimes.Options{Interfaces: runtimes.ExampleInterfaces()})
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	header := append(runtimes.GoldenHeader(in.Facts, names.Runtime),
		"EXAMPLE VALUES: the networking.gke.io/interfaces networks below are examples.",
		"Render the runtime for your cluster with:",
		"  tcpxogen render runtime --interfaces eth1=<network>,...,eth8=<network>")
	if files[runtimes.GoldenRuntime], err = runtimes.Encode(runtimes.FormatYAML, header, rt); err != nil {
		return nil, err
	}
	var components []any
	for _, ds := range runtimes.Components(in) {
		components = append(components, ds)
	}
	if files[runtimes.GoldenComponents], err = runtimes.Encode(runtimes.FormatYAML, runtimes.GoldenHeader(in.Facts, "Cluster-side components"), components...); err != nil {
		return nil, err
	}
	if files[benchmark.GoldenPath], err = benchmark.Golden(rt, in.Facts); err != nil {
		return nil, err
	}
	if err := renderGIB(in, files); err != nil {
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
	deployed, err := deploy.Goldens(in)
	if err != nil {
		return nil, err
	}
	maps.Copy(files, deployed)
	pages, err := docgen.Pages(root, in)
	if err != nil {
		return nil, err
	}
	maps.Copy(files, pages)
	return files, nil
}

// renderGIB adds the gIB fabric's goldens: its runtime for each machine
// type it serves, rendered with Google's network names, the benchmark
// derived from each, and its components.
func renderGIB(in *runtimes.Inputs, files map[string][]byte) error {
	for _, mt := range fabric.GIB.MachineTypes {
		rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: runtimes.ExampleRDMAInterfaces(), MachineType: mt.Name})
		if err != nil {
			return err
		}
		header := append(runtimes.GIBGoldenHeader(in.GIB, fabric.GIB.RuntimeFor(mt.Name)+" ("+mt.Name+")"),
			"EXAMPLE VALUES: the networks below are the names Google's docs use (rdma-0..rdma-7).",
			"NO IMAGE: each TrainJob sets spec.trainer.image, built for CUDA "+gibCUDA(in)+" or later (the gIB release notes' minimum CUDA runtime).",
			"Render the runtime for your cluster with:",
			"  tcpxogen render runtime --fabric gib --machine-type "+mt.Name+" --interfaces eth2=<network>,...,eth9=<network>")
		if files[runtimes.GoldenRDMARuntime(mt.Name)], err = runtimes.Encode(runtimes.FormatYAML, header, rt); err != nil {
			return err
		}
		if files[runtimes.GoldenRDMABenchmark(mt.Name)], err = benchmark.GIBGolden(rt, in.GIB, mt.Name); err != nil {
			return err
		}
	}
	var components []any
	for _, ds := range runtimes.RDMAComponents(in) {
		components = append(components, ds)
	}
	var err error
	files[runtimes.GoldenRDMAComponents], err = runtimes.Encode(runtimes.FormatYAML, runtimes.GIBGoldenHeader(in.GIB, "Cluster-side gIB components"), components...)
	return err
}

// gibCUDA is the minimum CUDA runtime the pinned gIB release names.
func gibCUDA(in *runtimes.Inputs) string {
	if r, ok := in.Releases.GIBReleaseFor(in.GIB.PluginVersion); ok && r.CUDA != "" {
		return r.CUDA
	}
	return "(not published: see bom/releases.yaml)"
}

// Elsewhere are the generated artefacts another `go generate` directive
// writes (see generated/generate.go), as path patterns (path.Match) with
// the directive: they come from binaries this package cannot link (the
// CLI's own help texts; the realization matrix, which links every trainer
// version in turn) or from the module cache. With Render's keys and
// generated/ they are every generated file of the tree; the orphan test
// holds the tree to that.
var Elsewhere = map[string]string{
	"docs/commands.md":                                      "tools/tcpxogen/generate.go: tcpxogen help --markdown",
	"validators/linkedtrainer/crds/*/*.yaml":                "generated/generate.go: tools/copycrds",
	"testdata/installer/*/layers/*/plugins/*.so":            "generated/generate.go: tools/placeholders (each tree's needed.json)",
	"testdata/gib-installer/*/layers/*/opt/gib/lib64/*.so*": "generated/generate.go: tools/placeholders (each tree's needed.json)",
	"validators/realize/testdata/compat-*.json":             "generated/generate.go: tools/compat, once per trainer version",
	"validators/realize/crddefaults/*.json":                 "generated/generate.go: tools/compat --crd-defaults, once per trainer version",
}

// GeneratedElsewhere reports whether a repo-relative path is one of
// Elsewhere's artefacts.
func GeneratedElsewhere(rel string) bool {
	for pattern := range Elsewhere {
		if ok, _ := path.Match(pattern, rel); ok {
			return true
		}
	}
	return false
}
