package runtimes

import (
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
)

// A node selector may narrow a runtime's pool (a node pool label passes),
// but never aim it at a machine type its fabric does not serve: the TCPXO
// runtime on A3 Ultra or A3 High nodes, a gIB runtime on A3 Mega or the
// other gIB machine type. Those pods would run without the fabric's NICs
// and NCCL would fall back to TCP (AICR issue #2290).
func TestRuntimesRefuseBeingAimedElsewhere(t *testing.T) {
	in := loadGIBInputs(t)
	tcpxo := func(sel map[string]string) error {
		_, err := TorchRuntime(in, Options{Interfaces: ExampleInterfaces(), NodeSelector: sel})
		return err
	}
	gib := func(mt string) func(map[string]string) error {
		return func(sel map[string]string) error {
			_, err := RDMARuntime(in, RDMAOptions{Interfaces: ExampleRDMAInterfaces(), MachineType: mt, NodeSelector: sel})
			return err
		}
	}
	for _, tc := range []struct {
		name   string
		render func(map[string]string) error
		sel    map[string]string
		want   []string // nil: rendered
	}{
		{"TCPXO on A3 Ultra's accelerator", tcpxo, map[string]string{fabric.AcceleratorLabel: "nvidia-h200-141gb"},
			[]string{"aims torch-distributed-tcpxo at the nvidia-h200-141gb nodes (a3-ultragpu-8g, which --fabric gib serves)", "GPUDirect-TCPXO runtime of a3-megagpu-8g (nvidia-h100-mega-80gb) only", "fall back to TCP"}},
		{"TCPXO on A3 High by accelerator", tcpxo, map[string]string{fabric.AcceleratorLabel: "nvidia-h100-80gb"},
			[]string{"the nvidia-h100-80gb nodes (A3 High and A3 Edge use GPUDirect-TCPX"}},
		{"TCPXO on A3 Edge by machine type", tcpxo, map[string]string{fabric.InstanceTypeLabel: "a3-edgegpu-8g"},
			[]string{"at a3-edgegpu-8g (A3 Edge uses GPUDirect-TCPX"}},
		{"TCPXO on A4 by machine type", tcpxo, map[string]string{fabric.InstanceTypeLabel: "a4-highgpu-8g", "cloud.google.com/gke-nodepool": "a4"},
			[]string{"at a4-highgpu-8g, which --fabric gib serves"}},
		{"gIB on A3 Mega", gib("a3-ultragpu-8g"), map[string]string{fabric.InstanceTypeLabel: "a3-megagpu-8g"},
			[]string{"aims torch-distributed-rdma-a3-ultragpu-8g at a3-megagpu-8g, which --fabric tcpxo serves", "runtime of a3-ultragpu-8g (nvidia-h200-141gb) only"}},
		{"the A4 runtime on A3 Ultra", gib("a4-highgpu-8g"), map[string]string{fabric.AcceleratorLabel: "nvidia-h200-141gb"},
			[]string{"aims torch-distributed-rdma-a4-highgpu-8g at the nvidia-h200-141gb nodes (a3-ultragpu-8g, which --fabric gib serves)"}},
		{"TCPXO narrowed to a pool", tcpxo, map[string]string{fabric.AcceleratorLabel: "nvidia-h100-mega-80gb", "cloud.google.com/gke-nodepool": "a3mega"}, nil},
		{"TCPXO on its machine type", tcpxo, map[string]string{fabric.InstanceTypeLabel: "a3-megagpu-8g"}, nil},
		{"gIB on its own machine", gib("a4-highgpu-8g"), map[string]string{fabric.InstanceTypeLabel: "a4-highgpu-8g", fabric.AcceleratorLabel: "nvidia-b200"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.render(tc.sel)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("rendered")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it to say %q", err, w)
				}
			}
		})
	}
}
