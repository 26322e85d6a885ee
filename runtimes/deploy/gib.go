package deploy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// gib is GPUDirect-RDMA with NCCL/gIB on A3 Ultra and A4: a
// torch-distributed-rdma runtime per machine type and the
// nccl-rdma-installer DaemonSet.
var gib = Fabric{
	Registry: fabric.GIB,
	Layout:   interfaces.RDMA,
	Description: "GPUDirect-RDMA with NCCL/gIB on GKE A3 Ultra and A4: the Kubeflow Trainer runtimes " + fabric.GIB.RuntimeFor("<machine type>") +
		", one per machine type, with the fabric's wiring, and the NCCL/gIB installer DaemonSet " + fabric.GIB.InstallerDaemonSet + ", pinned from one installer release",
	NodeContainer: runtimes.NodeContainer,
	MappingName:   "RDMA NIC to GKE Network mapping",
	NICWord:       "RDMA NIC",
	Segment:       "subnet",
	OptionalNICs:  map[string]OptionalNIC{"eth1": {Role: "the gVNIC network", Example: "gvnic-1"}},
	// runtimes/interfaces' wording of RDMA's shared-network rule (a test
	// holds it to what interfaces.RDMA.FromBindings says).
	SharedNetworkRule:  "each RDMA NIC is on its own subnet and needs its own Device-type GKE Network",
	NetworkSource:      "kubectl get networks lists this cluster's Networks; Google's documentation names them rdma-0..rdma-7 and gvnic-1",
	Example:            func() []interfaces.Binding { return runtimes.ExampleRDMAInterfaces().Bindings() },
	DefaultWorkerImage: func(*runtimes.Inputs) string { return "" },
	NoWorkerImage: func(in *runtimes.Inputs) string {
		return "each TrainJob sets spec.trainer.image, built for CUDA " + gibCUDA(in) + " or later (the gIB release notes' minimum CUDA runtime)"
	},
	Render: renderGIB,
	Pins: func(in *runtimes.Inputs) string {
		return fmt.Sprintf("the NCCL/gIB installer %s (NCCL %s)", in.GIB.PluginVersion, in.GIB.NCCLVersion)
	},
	PinAnnotations: func(in *runtimes.Inputs) map[string]string {
		return map[string]string{"tcpxogen.dev/installer": in.GIB.PluginVersion, "tcpxogen.dev/nccl": in.GIB.NCCLVersion}
	},
	GoldenVersion: func(in *runtimes.Inputs) string { return in.GIB.PluginVersion },
}

// gibCUDA is the minimum CUDA runtime the pinned gIB release names.
func gibCUDA(in *runtimes.Inputs) string {
	if r, ok := in.Releases.GIBReleaseFor(in.GIB.PluginVersion); ok && r.CUDA != "" {
		return r.CUDA
	}
	return "(not published: see bom/releases.yaml)"
}

func renderGIB(in *runtimes.Inputs, c Cluster) (Objects, error) {
	if c.BenchmarkNamespace != "" {
		return Objects{}, errors.New("the gIB chart and base carry no benchmark: tcpxogen derives none for gIB yet")
	}
	m, err := interfaces.RDMA.FromBindings(c.Interfaces)
	if err != nil {
		return Objects{}, err
	}
	mts, err := machineTypes(fabric.GIB, c.MachineTypes)
	if err != nil {
		return Objects{}, err
	}
	var objs Objects
	for _, mt := range mts {
		rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{
			Interfaces: m, MachineType: mt, NodeSelector: c.NodeSelector, Tolerations: c.Tolerations, WorkerImage: c.WorkerImage,
		})
		if err != nil {
			return Objects{}, err
		}
		objs.Runtimes = append(objs.Runtimes, Runtime{Name: rt.Name, MachineType: mt, Object: rt})
	}
	for _, ds := range runtimes.RDMAComponents(in) {
		objs.Components = append(objs.Components, ds)
	}
	return objs, nil
}

// MachineTypes are the machine types of f that want names, in registry
// order; every one when want is empty. An unknown or repeated one is an
// error naming f's.
func (f Fabric) MachineTypes(want []string) ([]string, error) { return machineTypes(f.Registry, want) }

func machineTypes(f fabric.Fabric, want []string) ([]string, error) {
	if len(want) == 0 {
		return f.MachineTypeNames(), nil
	}
	seen := map[string]bool{}
	for _, mt := range want {
		if _, ok := f.MachineType(mt); !ok {
			return nil, fmt.Errorf("machine type %q is not served by the %s fabric: use %s", mt, f.Name, strings.Join(f.MachineTypeNames(), " or "))
		}
		if seen[mt] {
			return nil, fmt.Errorf("machine type %s is given twice", mt)
		}
		seen[mt] = true
	}
	var out []string
	for _, mt := range f.MachineTypeNames() {
		if seen[mt] {
			out = append(out, mt)
		}
	}
	return out, nil
}
