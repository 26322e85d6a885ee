package fabric

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/names"
)

// Fabric is one inter-node GPU fabric whose wiring tcpxogen ships: the
// registry every fabric-dependent command, builder and check takes its
// fabric from (the --fabric flag's values, the machine types a pool may
// have, the names of what ships). A fabric's image-derived facts are not
// here: they come from its installer image (generated/<Name>).
type Fabric struct {
	// Name is the --fabric value and the generated package's name.
	Name string
	// Title is how messages and documents name the fabric.
	Title string
	// MachineTypes are the GKE machine types the fabric serves, each
	// with its accelerator label; no two fabrics share one.
	MachineTypes []MachineType
	// Runtime is the shipped ClusterTrainingRuntime's name (a fabric whose
	// env differs per machine type ships one per type, RuntimeFor).
	Runtime string
	// RuntimePerMachineType says the fabric ships a runtime per machine
	// type (gIB: its env differs in the tuner config), named RuntimeFor.
	RuntimePerMachineType bool
	// Benchmark is the name of the NCCL benchmark derived from Runtime
	// (one per machine type where the runtime is, BenchmarkFor).
	Benchmark string
	// InstallerDaemonSet is the node component that prepares a node.
	InstallerDaemonSet string
	// rules is the fabric's rule set (Rules).
	rules *RuleSet
}

// MachineType is one GKE machine type with what identifies its nodes.
type MachineType struct {
	// Name is the node.kubernetes.io/instance-type value.
	Name string
	// Accelerator is the cloud.google.com/gke-accelerator value.
	Accelerator string
	// GPUName is what `nvidia-smi --query-gpu=name` prints on such a node:
	// the answer the profile sandbox gives a script that probes the GPU.
	GPUName string
	// GPU is the recipe's criteria.accelerator value for the machine's GPU
	// (h100, h200, b200).
	GPU string
}

// Node labels that identify a machine.
// DRANETLabel is the label GKE sets on the nodes of a pool set up for
// managed DRANET (value "true"), and DRANETDeviceClass the DeviceClass its
// RDMA NICs are claimed through (Google's managed DRANET documentation, and
// its nccl-test-managed-rdma.yaml in container-engine-accelerators'
// gpudirect-rdma/). DRANET is the other attachment mode of the RDMA NICs,
// exclusive with the multi-network Device networks every fabric here uses.
const (
	DRANETLabel       = "cloud.google.com/gke-networking-dra-driver"
	DRANETDeviceClass = "mrdma.google.com"
)

const (
	// InstanceTypeLabel decides the fabric: the accelerator label alone
	// cannot tell A3 High from A3 Edge (both nvidia-h100-80gb).
	InstanceTypeLabel = "node.kubernetes.io/instance-type"
	AcceleratorLabel  = "cloud.google.com/gke-accelerator"
)

// The fabrics. Sources: A3 Mega's machine type and accelerator label are
// GKE's (Google's nccl-tcpxo-installer.yaml selects
// nvidia-h100-mega-80gb); A3 Ultra's and A4's are Google's
// nccl-rdma-installer.yaml (nvidia-h200-141gb, nvidia-b200) and "Create a
// custom AI-optimized GKE cluster which uses A4 or A3 Ultra". GPU names:
// NVIDIA's product names as nvidia-smi prints them (H100 80GB HBM3, H200,
// B200); they only feed the sandbox's declared probe answers.
var (
	TCPXO = Fabric{
		Name:  "tcpxo",
		Title: "GPUDirect-TCPXO",
		MachineTypes: []MachineType{
			{Name: "a3-megagpu-8g", Accelerator: "nvidia-h100-mega-80gb", GPUName: "NVIDIA H100 80GB HBM3", GPU: "h100"},
		},
		Runtime:            names.Runtime,
		Benchmark:          names.Benchmark,
		InstallerDaemonSet: names.InstallerDaemonSet,
		rules:              TCPXORules,
	}
	GIB = Fabric{
		Name:  "gib",
		Title: "GPUDirect-RDMA (NCCL/gIB)",
		MachineTypes: []MachineType{
			{Name: "a3-ultragpu-8g", Accelerator: "nvidia-h200-141gb", GPUName: "NVIDIA H200", GPU: "h200"},
			{Name: "a4-highgpu-8g", Accelerator: "nvidia-b200", GPUName: "NVIDIA B200", GPU: "b200"},
		},
		Runtime:               names.RuntimeRDMA,
		RuntimePerMachineType: true,
		Benchmark:             names.BenchmarkRDMA,
		InstallerDaemonSet:    names.InstallerDaemonSetRDMA,
		rules:                 GIBRules,
	}
)

// Unserved are machine types that share an accelerator label with a
// served one, or look like one, and that no fabric here serves: A3 High
// and A3 Edge (nvidia-h100-80gb) use GPUDirect-TCPX, 4 NICs (AICR issue
// #2290 records SKU-agnostic recipes picking TCPXO parts there and running
// over TCP).
var Unserved = map[string]string{
	"a3-highgpu-8g": "A3 High uses GPUDirect-TCPX (4 GPU NICs), which tcpxogen does not serve",
	"a3-edgegpu-8g": "A3 Edge uses GPUDirect-TCPX (4 GPU NICs), which tcpxogen does not serve",
}

// UnservedAccelerators are the accelerator labels of Unserved's machine
// types: A3 High and A3 Edge share nvidia-h100-80gb.
var UnservedAccelerators = map[string]string{
	"nvidia-h100-80gb": "A3 High and A3 Edge use GPUDirect-TCPX (4 GPU NICs), which tcpxogen does not serve",
}

// Fabrics lists every fabric, the default (TCPXO) first.
func Fabrics() []Fabric { return []Fabric{TCPXO, GIB} }

// Default is the fabric of a command run without --fabric: today's
// behaviour.
const Default = "tcpxo"

// Names lists the fabrics' names, for flag help and messages.
func Names() []string {
	var out []string
	for _, f := range Fabrics() {
		out = append(out, f.Name)
	}
	return out
}

// Lookup returns the fabric named name; an unknown name is an error that
// lists the fabrics.
func Lookup(name string) (Fabric, error) {
	for _, f := range Fabrics() {
		if f.Name == name {
			return f, nil
		}
	}
	return Fabric{}, fmt.Errorf("unknown fabric %q: use one of %s", name, strings.Join(Names(), ", "))
}

// Rules is f's rule set: what keeps a workload's env on the fabric
// (Classify, Check, EntryRules, Table). A fabric not from this registry
// (Lookup, Fabrics) has none.
func (f Fabric) Rules() *RuleSet { return f.rules }

// MachineType returns the machine type of f named name.
func (f Fabric) MachineType(name string) (MachineType, bool) {
	i := slices.IndexFunc(f.MachineTypes, func(m MachineType) bool { return m.Name == name })
	if i < 0 {
		return MachineType{}, false
	}
	return f.MachineTypes[i], true
}

// MachineTypeForGPU returns the machine type of f whose GPU is gpu (a
// recipe's criteria.accelerator: h200).
func (f Fabric) MachineTypeForGPU(gpu string) (MachineType, bool) {
	i := slices.IndexFunc(f.MachineTypes, func(m MachineType) bool { return m.GPU == gpu })
	if i < 0 {
		return MachineType{}, false
	}
	return f.MachineTypes[i], true
}

// MachineTypeNames lists f's machine types in registry order.
func (f Fabric) MachineTypeNames() []string {
	out := make([]string, len(f.MachineTypes))
	for i, m := range f.MachineTypes {
		out[i] = m.Name
	}
	return out
}

// Accelerators lists f's accelerator label values in registry order.
func (f Fabric) Accelerators() []string {
	out := make([]string, len(f.MachineTypes))
	for i, m := range f.MachineTypes {
		out[i] = m.Accelerator
	}
	return out
}

// RuntimeFor is the name of the runtime f ships for machine type mt when
// its env differs per machine type: the role name with the machine type.
func (f Fabric) RuntimeFor(mt string) string { return f.Runtime + "-" + mt }

// ShippedRuntime is the ClusterTrainingRuntime f ships for its machine type
// mt: TCPXO's one runtime, or RuntimeFor(mt) for a fabric whose env differs
// per machine type (gIB).
func (f Fabric) ShippedRuntime(mt string) string {
	if f.RuntimePerMachineType {
		return f.RuntimeFor(mt)
	}
	return f.Runtime
}

// ShippedBenchmark is the benchmark TrainingRuntime `render benchmark`
// derives from ShippedRuntime(mt): TCPXO's one, or BenchmarkFor(mt).
func (f Fabric) ShippedBenchmark(mt string) string {
	if f.RuntimePerMachineType {
		return f.BenchmarkFor(mt)
	}
	return f.Benchmark
}

// ShippedRuntimes are the ClusterTrainingRuntimes f ships, one per machine
// type (ShippedRuntime), in the order of its machine types.
func (f Fabric) ShippedRuntimes() []string {
	var out []string
	for _, mt := range f.MachineTypes {
		if n := f.ShippedRuntime(mt.Name); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// BenchmarkFor is the name of the benchmark derived from RuntimeFor(mt).
func (f Fabric) BenchmarkFor(mt string) string { return f.Benchmark + "-" + mt }

// ForMachineType returns the fabric that serves machine type mt (the
// node.kubernetes.io/instance-type value). A machine type no fabric
// serves is an error saying why.
func ForMachineType(mt string) (Fabric, error) {
	for _, f := range Fabrics() {
		if _, ok := f.MachineType(mt); ok {
			return f, nil
		}
	}
	if why, ok := Unserved[mt]; ok {
		return Fabric{}, fmt.Errorf("machine type %s: %s", mt, why)
	}
	var served []string
	for _, f := range Fabrics() {
		for _, m := range f.MachineTypes {
			served = append(served, m.Name+" ("+f.Name+")")
		}
	}
	return Fabric{}, fmt.Errorf("machine type %q is served by no fabric: tcpxogen serves %s", mt, strings.Join(served, ", "))
}
