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
// The fabrics are a table with an entry per fabric of the registry
// (internal/fabric), which names them: Lookup takes the --fabric value and
// refuses an unknown one with the registry's message. An entry's NICs,
// values key and machine types come from its interfaces.Layout.
//
// A fabric whose env differs per machine type (gIB: set_nccl_env.sh
// names a tuner config per machine type) ships one runtime per machine
// type (fabric.Fabric.RuntimeFor), and its chart carries them all: each
// runtime's template is the object `render runtime --fabric gib
// --machine-type T` prints for the example mapping, with the cluster's
// fields templated, rendered when T is listed in the machineTypes value.
// machineTypes defaults to every machine type of the fabric, because a
// runtime selects only its machine type's nodes (node affinity on
// node.kubernetes.io/instance-type) and the installer DaemonSet already
// covers every one of them: a cluster with one pool gets a runtime its
// TrainJobs never name, never a pod on the wrong machine. One mapping
// serves every listed machine type, since GKE Networks are cluster
// objects and Google's documented setup attaches every GPU pool of a
// cluster to the same rdma-0..rdma-7. gIB ships no default worker image
// (its release needs a newer CUDA than the BOM's worker image has), so
// workerImage is optional and a runtime without it is exactly what
// `render runtime` prints. There is no gIB benchmark in the chart: no
// benchmark derivation for gIB exists to render it from.
package deploy

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
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
	// MachineTypes are the machine types to ship a runtime for, for a
	// fabric with one runtime per machine type (Fabric.PerMachineType);
	// empty: every machine type of the fabric. Another fabric refuses them.
	MachineTypes []string
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
	// Runtimes are the ClusterTrainingRuntimes TrainJobs name: one, or one
	// per machine type in the fabric's registry order.
	Runtimes []Runtime
	// Components are the node components (DaemonSets), in order.
	Components []any
	// Benchmark is the derived benchmark TrainingRuntime, nil unless
	// Cluster.BenchmarkNamespace was set.
	Benchmark any
}

// Runtime is one shipped ClusterTrainingRuntime.
type Runtime struct {
	// Name is the runtime's name; MachineType the machine type it serves,
	// "" for a fabric with one runtime for all.
	Name, MachineType string
	Object            any
}

// all returns the runtimes and then the components, as render prints them.
func (o Objects) all() []any {
	var out []any
	for _, rt := range o.Runtimes {
		out = append(out, rt.Object)
	}
	return append(out, o.Components...)
}

// OptionalNIC says what an interface a mapping may leave out is for, in the
// words of the fabric's validator (runtimes/interfaces).
type OptionalNIC struct {
	// Role is what the NIC carries ("the gVNIC network"); Example the name
	// Google's documentation gives its Network.
	Role, Example string
}

// Fabric is one fabric's entry: what the chart and the base need to know
// of it beyond its objects.
type Fabric struct {
	// Registry is the fabric's entry in the registry: its name (the
	// --fabric value and the last element of the goldens' paths), its
	// machine types and its runtime's name.
	Registry fabric.Fabric
	// Layout is the fabric's NIC wiring: the NICs a mapping binds, the
	// values key of the mapping, the machine types.
	Layout interfaces.Layout
	// Description is the chart's description.
	Description string
	// Benchmark names the benchmark TrainingRuntime, the file name of its
	// template; "" for a fabric whose chart carries no benchmark.
	Benchmark string
	// NodeContainer is the runtime's worker container, whose image is the
	// worker image.
	NodeContainer string

	// MappingName names the mapping ("GPU-NIC to GKE Network mapping"),
	// NICWord one NIC it binds ("GPU NIC"), Segment what each NIC's
	// Network stands for ("VPC"), as the fabric's validator words them.
	MappingName, NICWord, Segment string
	// OptionalNICs are the Layout's optional interfaces, by name.
	OptionalNICs map[string]OptionalNIC
	// SharedNetworkRule is why two NICs may not share one Network.
	SharedNetworkRule string
	// Discover is the command that writes a values file of the mapping
	// from a cluster, "" where there is none: the user reads the Networks
	// (NetworkSource says how).
	Discover, NetworkSource string
	// DefaultNodeSelector is the runtime's node selector when none is
	// given; nil where the runtime selects its nodes by node affinity alone.
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
	// DefaultWorkerImage is the worker image when none is given, pinned;
	// "" for a fabric whose runtime ships without one.
	DefaultWorkerImage func(in *runtimes.Inputs) string
	// NoWorkerImage says, for a fabric without a default worker image,
	// what each TrainJob's image must then be.
	NoWorkerImage func(in *runtimes.Inputs) string
	// Render builds the objects for a cluster, refusing a bad Cluster as
	// `render runtime` refuses its flags.
	Render func(in *runtimes.Inputs, c Cluster) (Objects, error)
}

// Name is the fabric's name in the registry: the --fabric value.
func (f Fabric) Name() string { return f.Registry.Name }

// Runtimes names the runtimes of the fabric, one per machine type in
// registry order for a fabric with a runtime per machine type.
func (f Fabric) Runtimes() []string { return f.Registry.ShippedRuntimes() }

// PerMachineType says the fabric ships a runtime per machine type
// (the registry's RuntimePerMachineType).
func (f Fabric) PerMachineType() bool { return f.Registry.RuntimePerMachineType }

// NICs are the interfaces every mapping binds, in NIC order.
func (f Fabric) NICs() []string { return f.Layout.GPUInterfaces() }

// AllNICs are every interface a mapping may bind, required and optional,
// in NIC order (the annotation's): the order of a Mapping's bindings.
func (f Fabric) AllNICs() []string {
	var bs []interfaces.Binding
	for i, n := range append(f.Layout.OptionalInterfaces(), f.NICs()...) {
		bs = append(bs, interfaces.Binding{Interface: n, Network: fmt.Sprintf("n%d", i)})
	}
	m, err := f.Layout.FromBindings(bs)
	if err != nil {
		panic(fmt.Sprintf("deploy: every NIC of %s bound to its own network is refused: %v", f.Layout, err)) // a constant input: a bug
	}
	var out []string
	for _, b := range m.Bindings() {
		out = append(out, b.Interface)
	}
	return out
}

// ValuesKey is the key of the mapping in the values document, as `render
// runtime --values` reads it.
func (f Fabric) ValuesKey() string { return f.Layout.YAMLKey() }

// entries is every fabric's entry; the registry names them.
var entries = []Fabric{tcpxo, gib}

// Names returns the fabric names: the registry's, the values --fabric
// takes.
func Names() []string { return fabric.Names() }

// Lookup returns the fabric named name; an unknown name is the registry's
// error, which lists the fabrics.
func Lookup(name string) (Fabric, error) {
	reg, err := fabric.Lookup(name)
	if err != nil {
		return Fabric{}, err
	}
	i := slices.IndexFunc(entries, func(f Fabric) bool { return f.Name() == reg.Name })
	if i < 0 {
		return Fabric{}, fmt.Errorf("fabric %s has no chart or kustomize base", reg.Name)
	}
	return entries[i], nil
}

// tcpxo is GPUDirect-TCPXO on A3 Mega: torch-distributed-tcpxo, the
// installer DaemonSet and the NRI device injector.
var tcpxo = Fabric{
	Registry:            fabric.TCPXO,
	Layout:              interfaces.TCPXO,
	Description:         "GPUDirect-TCPXO on GKE A3 Mega: the Kubeflow Trainer runtime " + fabric.TCPXO.Runtime + " with the fabric's wiring, the NCCL plugin installer DaemonSet and the NRI device injector, pinned from one installer release",
	Benchmark:           names.Benchmark,
	NodeContainer:       runtimes.NodeContainer,
	MappingName:         "GPU-NIC to GKE Network mapping",
	NICWord:             "GPU NIC",
	Segment:             "VPC",
	SharedNetworkRule:   interfaces.SharedNetworkRule,
	Discover:            "tcpxogen discover -o values > values.yaml",
	DefaultNodeSelector: map[string]string{fabric.AcceleratorLabel: fabric.TCPXO.MachineTypes[0].Accelerator},
	Example:             func() []interfaces.Binding { return runtimes.ExampleInterfaces().Bindings() },
	DefaultWorkerImage:  func(in *runtimes.Inputs) string { return in.BOM.Images.Worker.Reference },
	Render:              renderTCPXO,
	Pins: func(in *runtimes.Inputs) string {
		return fmt.Sprintf("NCCL plugin installer %s (tcpxo-daemon %s)", in.Facts.PluginVersion, in.Facts.DaemonVersion)
	},
	PinAnnotations: func(in *runtimes.Inputs) map[string]string {
		return map[string]string{"tcpxogen.dev/installer": in.Facts.PluginVersion, "tcpxogen.dev/daemon": in.Facts.DaemonVersion}
	},
	GoldenVersion: func(in *runtimes.Inputs) string { return in.Facts.PluginVersion },
}

func renderTCPXO(in *runtimes.Inputs, c Cluster) (Objects, error) {
	if len(c.MachineTypes) > 0 {
		return Objects{}, fmt.Errorf("machine types are for a fabric with a runtime per machine type; %s serves %s only", fabric.TCPXO.Runtime, strings.Join(fabric.TCPXO.MachineTypeNames(), ", "))
	}
	m, err := interfaces.TCPXO.FromBindings(c.Interfaces)
	if err != nil {
		return Objects{}, err
	}
	opts := runtimes.Options{Interfaces: m, NodeSelector: c.NodeSelector, Tolerations: c.Tolerations, WorkerImage: c.WorkerImage}
	rt, err := runtimes.TorchRuntime(in, opts)
	if err != nil {
		return Objects{}, err
	}
	objs := Objects{Runtimes: []Runtime{{Name: rt.Name, Object: rt}}}
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
func (f Fabric) ChartDir() string     { return "deploy/helm/" + f.Name() }
func (f Fabric) KustomizeDir() string { return "deploy/kustomize/" + f.Name() }

// Goldens renders the committed chart and kustomize base of every fabric,
// by repo-relative path. The chart's version and appVersion are the pinned
// installer's version, not the tool's, so that `go generate ./...` writes
// the same bytes in every checkout; `render chart` stamps the tool's.
func Goldens(in *runtimes.Inputs) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range entries {
		chart, err := Chart(in, f, f.GoldenVersion(in))
		if err != nil {
			return nil, fmt.Errorf("the %s chart: %w", f.Name(), err)
		}
		for p, data := range chart {
			out[f.ChartDir()+"/"+p] = data
		}
		base, err := Kustomize(in, f, Cluster{Interfaces: f.Example()}, true)
		if err != nil {
			return nil, fmt.Errorf("the %s kustomize base: %w", f.Name(), err)
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
	for _, f := range entries {
		dirs = append(dirs, f.ChartDir(), f.KustomizeDir())
	}
	return dirs
}
