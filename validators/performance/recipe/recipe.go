// Package recipe reads the performance validator's recipe: a small, strictly
// typed YAML file that says what a cluster is (criteria), which components it
// is supposed to run, how its GPU NICs are wired (configuration), and what the
// benchmark must reach (constraints).
//
// The recipe is what the validator's policy decisions hang on: whether the
// trainer is a declared component decides whether the validator may install
// and tear it down (see package lifecycle), the GPU-NIC mapping is what the
// shipped runtime is rendered with, and the bandwidth floor is the pass mark.
// A half-read recipe would silently change any of these, so reading is
// strict: unknown fields, duplicate keys, values of the wrong type, unknown
// criteria, component or constraint names and an invalid mapping are all
// rejected, every problem at once, each with the file, line and YAML path of
// the bad field and a fix.
//
//	apiVersion: tcpxogen.dev/v1alpha1
//	kind: Recipe
//	criteria: {service: gke, accelerator: h100, intent: training, platform: kubeflow}
//	components:
//	  - name: kubeflow-trainer
//	    version: v2.2.0
//	  - name: nccl-tcpxo-installer
//	configuration:
//	  gke:
//	    tcpxoInterfaces:
//	      - {interfaceName: eth1, network: gpu-nic-1}
//	      ...
//	      - {interfaceName: eth8, network: gpu-nic-8}
//	constraints:
//	  - name: nccl-all-reduce-bw
//	    value: ">= 300"
//
// A recipe for GPUDirect-RDMA with NCCL/gIB says fabric: gib, maps the RDMA
// NICs under configuration.gke.rdmaInterfaces (eth2..eth9, and eth1 when
// the cluster has the gVNIC network), names its machine by
// criteria.accelerator (h200: a3-ultragpu-8g, b200: a4-highgpu-8g) and
// sets one floor: nccl-all-gather-bw (the collective of Google's NCCL test)
// or nccl-all-reduce-bw, which names the collective the benchmark runs.
package recipe

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

const (
	// APIVersion and Kind identify a recipe document. They are checked so
	// that a Kubernetes manifest or another tool's file passed by mistake is
	// rejected up front instead of failing field by field.
	APIVersion = "tcpxogen.dev/v1alpha1"
	Kind       = "Recipe"

	// ComponentTrainer is the component name that declares Kubeflow Trainer.
	ComponentTrainer = "kubeflow-trainer"

	// ConstraintAllReduceBW is the bus-bandwidth floor of nccl-tests
	// all_reduce_perf, in GB/s.
	ConstraintAllReduceBW = "nccl-all-reduce-bw"
	// ConstraintAllGatherBW is the bus-bandwidth floor of nccl-tests
	// all_gather_perf, in GB/s: gIB recipes only.
	ConstraintAllGatherBW = "nccl-all-gather-bw"

	// MaxSize bounds what Load and Parse read. A real recipe is well under
	// 4 KiB; the bound keeps a wrong path (a log, an image) from being parsed
	// whole.
	MaxSize = 1 << 20
)

// Recipe is a validated recipe. Values come from Load or Parse; the exported
// fields mirror the document for reporting, and the accessors return the
// values validation derived from them.
type Recipe struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	// Fabric is the fabric the cluster's GPU NICs carry (internal/fabric):
	// tcpxo when absent, or gib.
	Fabric        string        `yaml:"fabric"`
	Criteria      Criteria      `yaml:"criteria"`
	Components    []Component   `yaml:"components"`
	Configuration Configuration `yaml:"configuration"`
	Constraints   []Constraint  `yaml:"constraints"`

	// Derived by validation; see the accessors.
	mapping     interfaces.Mapping
	floorOp     string
	floorGbps   float64
	floorName   string
	machineType string
}

// Criteria say what kind of cluster and workload the recipe is for.
type Criteria struct {
	Service     string `yaml:"service"`
	Accelerator string `yaml:"accelerator"`
	Intent      string `yaml:"intent"`
	Platform    string `yaml:"platform"`
}

// Component is a component the cluster is declared to run. A declared
// component is part of the deployment: the validator never installs or
// removes it, and fails if it is missing.
type Component struct {
	Name string `yaml:"name"`
	// Version is optional; when given it is a semantic version (v2.2.0).
	Version string `yaml:"version"`
}

// Configuration holds per-service settings. Only the section of the recipe's
// service may be present.
type Configuration struct {
	GKE *GKEConfiguration `yaml:"gke"`
}

// GKEConfiguration is the GKE section.
type GKEConfiguration struct {
	// TCPXOInterfaces binds the pod's GPU NICs eth1..eth8 to this cluster's
	// Device-type GKE Networks; see package interfaces for the rules.
	TCPXOInterfaces []interfaces.Binding `yaml:"tcpxoInterfaces"`
	// RDMAInterfaces binds a gIB pod's RDMA NICs eth2..eth9 (and eth1, the
	// gVNIC network, when named) to this cluster's networks: fabric: gib
	// only (interfaces.RDMA).
	RDMAInterfaces []interfaces.Binding `yaml:"rdmaInterfaces"`
}

// Constraint is a named pass mark for a measured value.
type Constraint struct {
	Name  string    `yaml:"name"`
	Value Threshold `yaml:"value"`
}

// Threshold is a constraint's value as written: ">= 300", "> 300" or "300".
// It is a distinct type so that the reader accepts an unquoted number here
// (value: 300), while every other string field requires text.
type Threshold string

// DeclaresTrainer reports whether Kubeflow Trainer is a declared component,
// which decides the trainer lifecycle policy: a declared trainer is used and
// never touched, an undeclared one may be installed and torn down.
func (r *Recipe) DeclaresTrainer() bool {
	return r.Declares(ComponentTrainer)
}

// Declares reports whether the named component is declared.
func (r *Recipe) Declares(name string) bool {
	for _, c := range r.Components {
		if c.Name == name {
			return true
		}
	}
	return false
}

// Interfaces returns the validated GPU-NIC mapping of the GKE section; the
// zero Mapping when the recipe is not for GKE (renderers refuse it).
func (r *Recipe) Interfaces() interfaces.Mapping { return r.mapping }

// Floor returns the bandwidth constraint: the comparison (">=" or ">"; a
// bare number means ">=") and the floor in GB/s, always positive.
func (r *Recipe) Floor() (op string, gbps float64) { return r.floorOp, r.floorGbps }

// FloorConstraint is the name of the bandwidth constraint the floor is
// (ConstraintAllReduceBW, or for gIB ConstraintAllGatherBW): which
// collective the benchmark runs.
func (r *Recipe) FloorConstraint() string { return r.floorName }

// FabricName is the recipe's fabric: tcpxo when it names none.
func (r *Recipe) FabricName() string {
	if r.Fabric == "" {
		return fabric.Default
	}
	return r.Fabric
}

// MachineType is the machine type a gIB recipe's criteria.accelerator names
// (a3-ultragpu-8g for h200, a4-highgpu-8g for b200); "" for TCPXO, which
// serves one machine type.
func (r *Recipe) MachineType() string { return r.machineType }

// Load reads and validates the recipe at path. Errors name the path.
func Load(path string) (*Recipe, error) {
	data, err := inputfile.Read(path, inputfile.Spec{What: "--recipe", Max: MaxSize})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading the recipe: %w (check the --recipe path)", err)
	case err != nil:
		return nil, fmt.Errorf("reading the recipe: %w", err)
	}
	return Parse(path, data)
}

// Parse validates a recipe document; name is how errors refer to it
// (normally the file's path). The error, if any, joins one *Error per
// problem, in line order.
func Parse(name string, data []byte) (*Recipe, error) {
	d := newDecoder(name)
	r, ok := d.decode(data)
	if ok {
		validate(d, r)
	}
	if err := d.result(); err != nil {
		return nil, err
	}
	return r, nil
}
