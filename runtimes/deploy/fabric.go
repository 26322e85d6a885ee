// Package deploy writes what ships in the forms platform teams install
// with: a Helm chart and a kustomize base per fabric. Both are generated
// from the typed objects `render runtime`, `render components` and `render
// benchmark` print (one Fabric.Render per fabric), never from a second
// template of the wiring: the chart is those objects encoded as YAML with
// the few fields a cluster's values decide (the GPU-NIC annotation, the
// node selector, the tolerations, the worker image, the benchmark's
// namespace) replaced by template expressions over .Values; the kustomize
// base is those objects as resources.
//
// The fabrics are a table keyed by the --fabric name (Lookup, Names), so a
// second fabric is one entry.
package deploy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// Cluster is what a cluster decides of what ships: the values of the chart,
// the flags of `render runtime`.
type Cluster struct {
	// Interfaces is the GPU-NIC mapping in the form of the values document
	// (`render runtime --values`); the fabric validates it.
	Interfaces []interfaces.Binding
	// NodeSelector, Tolerations and WorkerImage are runtimes.Options'; nil
	// or empty keeps the runtime's defaults.
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	WorkerImage  string
	// BenchmarkNamespace, when set, adds the NCCL benchmark derived from the
	// runtime, in that namespace (`render benchmark --namespace`).
	BenchmarkNamespace string
}

// Objects are the typed objects a fabric ships for a cluster.
type Objects struct {
	// Runtime is the ClusterTrainingRuntime TrainJobs name.
	Runtime any
	// Components are the node components (DaemonSets), in order.
	Components []any
	// Benchmark is the derived benchmark TrainingRuntime, nil unless
	// Cluster.BenchmarkNamespace was set.
	Benchmark any
}

// Fabric is one fabric's entry: what the chart and the base need to know
// of it beyond its objects.
type Fabric struct {
	// Name is the --fabric value and the last element of the goldens' paths.
	Name string
	// Description is the chart's description.
	Description string
	// Runtime and Benchmark name the ClusterTrainingRuntime and the
	// benchmark TrainingRuntime: the file names of their templates.
	Runtime, Benchmark string
	// NodeContainer is the runtime's worker container, whose image is the
	// worker image.
	NodeContainer string

	// ValuesKey is the key of the mapping in the values document.
	ValuesKey string
	// NICs are the GPU NICs the mapping binds, in annotation order.
	NICs []string
	// DefaultInterface and DefaultNetwork are the pod's default binding,
	// first in the annotation.
	DefaultInterface, DefaultNetwork string
	// NetworkNamePattern and MaxNetworkNameLength are everything a mapped
	// Network's name must meet; SharedNetworkRule is why two NICs may not
	// share one; MachineType is the machine whose NICs these are.
	NetworkNamePattern   string
	MaxNetworkNameLength int
	SharedNetworkRule    string
	MachineType          string
	// DefaultNodeSelector is the runtime's node selector when none is
	// given.
	DefaultNodeSelector map[string]string

	// Pins says what a chart or base of the fabric is pinned to, for its
	// headers ("NCCL plugin installer v1.0.15 (tcpxo-daemon v1.0.21)"), and
	// PinAnnotations the same as Chart.yaml annotations.
	Pins           func(in *runtimes.Inputs) string
	PinAnnotations func(in *runtimes.Inputs) map[string]string
	// GoldenVersion is the version the committed chart is stamped with in
	// place of the tool's, so that `go generate` writes the same bytes in
	// every checkout: the pinned installer's.
	GoldenVersion func(in *runtimes.Inputs) string

	// Example is the mapping the committed goldens are rendered with.
	Example func() []interfaces.Binding
	// DefaultWorkerImage is the worker image when none is given, pinned.
	DefaultWorkerImage func(in *runtimes.Inputs) string
	// Render builds the objects for a cluster, refusing a bad Cluster as
	// `render runtime` refuses its flags.
	Render func(in *runtimes.Inputs, c Cluster) (Objects, error)
}

// fabrics is every fabric a chart and a base are written for, by name.
var fabrics = map[string]Fabric{
	tcpxo.Name: tcpxo,
}

// Names returns the fabric names, sorted: the values --fabric takes.
func Names() []string { return slices.Sorted(maps.Keys(fabrics)) }

// Lookup returns the fabric named name, or an error naming the supported
// ones.
func Lookup(name string) (Fabric, error) {
	f, ok := fabrics[name]
	if !ok {
		return Fabric{}, fmt.Errorf("--fabric %q is not a supported fabric: want one of %s", name, strings.Join(Names(), ", "))
	}
	return f, nil
}

// tcpxo is GPUDirect-TCPXO on A3 Mega: torch-distributed-tcpxo, the
// installer DaemonSet and the NRI device injector.
var tcpxo = Fabric{
	Name:                 "tcpxo",
	Description:          "GPUDirect-TCPXO on GKE A3 Mega: the Kubeflow Trainer runtime " + names.Runtime + " with the fabric's wiring, the NCCL plugin installer DaemonSet and the NRI device injector, pinned from one installer release",
	Runtime:              names.Runtime,
	Benchmark:            names.Benchmark,
	NodeContainer:        runtimes.NodeContainer,
	ValuesKey:            interfaces.YAMLKey,
	NICs:                 interfaces.GPUInterfaces(),
	DefaultInterface:     interfaces.DefaultInterface,
	DefaultNetwork:       interfaces.DefaultNetwork,
	NetworkNamePattern:   interfaces.NetworkNamePattern(),
	MaxNetworkNameLength: interfaces.MaxNetworkNameLength,
	SharedNetworkRule:    interfaces.SharedNetworkRule,
	MachineType:          interfaces.MachineType,
	DefaultNodeSelector:  map[string]string{runtimes.AcceleratorLabel: runtimes.AcceleratorValue},
	Example:              func() []interfaces.Binding { return runtimes.ExampleInterfaces().Bindings() },
	DefaultWorkerImage:   func(in *runtimes.Inputs) string { return in.BOM.Images.Worker.Reference },
	Render:               renderTCPXO,
	Pins: func(in *runtimes.Inputs) string {
		return fmt.Sprintf("NCCL plugin installer %s (tcpxo-daemon %s)", in.Facts.PluginVersion, in.Facts.DaemonVersion)
	},
	PinAnnotations: func(in *runtimes.Inputs) map[string]string {
		return map[string]string{"tcpxogen.dev/installer": in.Facts.PluginVersion, "tcpxogen.dev/daemon": in.Facts.DaemonVersion}
	},
	GoldenVersion: func(in *runtimes.Inputs) string { return in.Facts.PluginVersion },
}

func renderTCPXO(in *runtimes.Inputs, c Cluster) (Objects, error) {
	m, err := interfaces.FromBindings(c.Interfaces)
	if err != nil {
		return Objects{}, err
	}
	opts := runtimes.Options{Interfaces: m, NodeSelector: c.NodeSelector, Tolerations: c.Tolerations, WorkerImage: c.WorkerImage}
	rt, err := runtimes.TorchRuntime(in, opts)
	if err != nil {
		return Objects{}, err
	}
	objs := Objects{Runtime: rt}
	for _, ds := range runtimes.Components(in) {
		objs.Components = append(objs.Components, ds)
	}
	if c.BenchmarkNamespace != "" {
		// As `render benchmark` derives it: from the runtime for the same
		// options, run from the pinned installer image.
		if objs.Benchmark, err = benchmark.ForCluster(in, opts, benchmark.Overrides{Namespace: c.BenchmarkNamespace}); err != nil {
			return Objects{}, err
		}
	}
	return objs, nil
}

// ChartDir and KustomizeDir are where the committed chart and base of f
// are, relative to the module root: goldens `go generate ./...` writes.
func (f Fabric) ChartDir() string     { return "deploy/helm/" + f.Name }
func (f Fabric) KustomizeDir() string { return "deploy/kustomize/" + f.Name }

// Goldens renders the committed chart and kustomize base of every fabric,
// by repo-relative path. The chart's version and appVersion are the pinned
// installer's version, not the tool's, so that `go generate ./...` writes
// the same bytes in every checkout; `render chart` stamps the tool's.
func Goldens(in *runtimes.Inputs) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, name := range Names() {
		f := fabrics[name]
		chart, err := Chart(in, f, f.GoldenVersion(in))
		if err != nil {
			return nil, fmt.Errorf("the %s chart: %w", name, err)
		}
		for p, data := range chart {
			out[f.ChartDir()+"/"+p] = data
		}
		base, err := Kustomize(in, f, Cluster{Interfaces: f.Example()}, true)
		if err != nil {
			return nil, fmt.Errorf("the %s kustomize base: %w", name, err)
		}
		for p, data := range base {
			out[f.KustomizeDir()+"/"+p] = data
		}
	}
	return out, nil
}

// GoldenDirs are the repo-relative directories Goldens writes into, one
// chart and one base per fabric: what a copy of the checkout needs to hold
// the committed charts and bases.
func GoldenDirs() []string {
	var dirs []string
	for _, name := range Names() {
		dirs = append(dirs, fabrics[name].ChartDir(), fabrics[name].KustomizeDir())
	}
	return dirs
}
