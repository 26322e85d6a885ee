package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
)

// labelled gives nodes the labels GKE sets on a node of machine type mt:
// node.kubernetes.io/instance-type, and the accelerator label of mt (or
// accelerator when given: A3 High and A3 Edge share nvidia-h100-80gb).
func labelled(nodes []corev1.Node, mt, accelerator string) []corev1.Node {
	if accelerator == "" {
		for _, f := range fabric.Fabrics() {
			if m, ok := f.MachineType(mt); ok {
				accelerator = m.Accelerator
			}
		}
	}
	for i := range nodes {
		nodes[i].Labels = map[string]string{fabric.InstanceTypeLabel: mt, fabric.AcceleratorLabel: accelerator, "cloud.google.com/gke-nodepool": "gpu"}
	}
	return nodes
}

func renamed(nodes []corev1.Node, prefix string) []corev1.Node {
	for i := range nodes {
		nodes[i].Name = strings.Replace(nodes[i].Name, "gke-a3-pool", prefix, 1)
	}
	return nodes
}

func TestCheckPoolHealthy(t *testing.T) {
	for _, tc := range []struct {
		f  fabric.Fabric
		mt string
	}{{fabric.TCPXO, "a3-megagpu-8g"}, {fabric.GIB, "a3-ultragpu-8g"}, {fabric.GIB, "a4-highgpu-8g"}} {
		m, err := CheckPool(labelled(pool(t, 2, a3Mega(vpcs(8))), tc.mt, ""), tc.f)
		if err != nil || m.Name != tc.mt {
			t.Errorf("a %s pool with --fabric %s: %+v, %v", tc.mt, tc.f.Name, m, err)
		}
	}
	if m, err := CheckPool(nil, fabric.TCPXO); err != nil || m != (fabric.MachineType{}) {
		t.Errorf("no nodes is Discover's and Check's to name: %+v, %v", m, err)
	}
}

func TestCheckPoolRefusals(t *testing.T) {
	mega := func() []corev1.Node { return labelled(pool(t, 2, a3Mega(vpcs(8))), "a3-megagpu-8g", "") }
	ultra := func() []corev1.Node {
		return renamed(labelled(pool(t, 1, a3Mega(vpcs(8))), "a3-ultragpu-8g", ""), "gke-ultra-pool")
	}
	unlabelled := mega()
	delete(unlabelled[1].Labels, fabric.InstanceTypeLabel)
	for name, tc := range map[string]struct {
		nodes []corev1.Node
		f     fabric.Fabric
		want  []string
	}{
		"a node without the instance-type label": {unlabelled, fabric.TCPXO,
			[]string{"1 node (gke-a3-pool-1) carries no node.kubernetes.io/instance-type label", "the accelerator label alone cannot tell A3 High from A3 Edge", "does not guess"}},
		"A3 Mega and A3 Ultra mixed": {append(mega(), ultra()...), fabric.TCPXO,
			[]string{"mix machine types", "node.kubernetes.io/instance-type=a3-megagpu-8g on 2 nodes (gke-a3-pool-0, gke-a3-pool-1)", "node.kubernetes.io/instance-type=a3-ultragpu-8g on 1 node (gke-ultra-pool-0)", "--node-selector"}},
		"A3 Ultra and A4 mixed, under gib": {append(ultra(), renamed(labelled(pool(t, 1, a3Mega(vpcs(8))), "a4-highgpu-8g", ""), "gke-a4-pool")...), fabric.GIB,
			[]string{"mix machine types", "a3-ultragpu-8g on 1 node (gke-ultra-pool-0)", "a4-highgpu-8g on 1 node (gke-a4-pool-0)"}},
		"A3 High": {labelled(pool(t, 2, a3Mega(vpcs(4))), "a3-highgpu-8g", "nvidia-h100-80gb"), fabric.TCPXO,
			[]string{"2 nodes (gke-a3-pool-0, gke-a3-pool-1)", "machine type a3-highgpu-8g", "GPUDirect-TCPX", "neither --fabric tcpxo nor --fabric gib serves these nodes"}},
		"A3 Edge under gib": {labelled(pool(t, 1, a3Mega(vpcs(4))), "a3-edgegpu-8g", "nvidia-h100-80gb"), fabric.GIB,
			[]string{"machine type a3-edgegpu-8g", "GPUDirect-TCPX"}},
		"A3 High carrying the A3 Ultra accelerator label": {labelled(pool(t, 1, a3Mega(vpcs(8))), "a3-highgpu-8g", "nvidia-h200-141gb"), fabric.GIB,
			[]string{"machine type a3-highgpu-8g", "GPUDirect-TCPX"}},
		"a machine type no fabric knows": {labelled(pool(t, 1, a3Mega(vpcs(8))), "n2-standard-8", "nvidia-l4"), fabric.TCPXO,
			[]string{`machine type "n2-standard-8" is served by no fabric`}},
		"TCPXO aimed at A3 Ultra": {ultra(), fabric.TCPXO,
			[]string{"--fabric tcpxo (GPUDirect-TCPXO) serves a3-megagpu-8g", "these nodes are a3-ultragpu-8g (gke-ultra-pool-0), served by gib", "run with --fabric gib"}},
		"gIB aimed at A3 Mega": {mega(), fabric.GIB,
			[]string{"--fabric gib (GPUDirect-RDMA (NCCL/gIB)) serves a3-ultragpu-8g and a4-highgpu-8g", "these nodes are a3-megagpu-8g (gke-a3-pool-0, gke-a3-pool-1), served by tcpxo", "run with --fabric tcpxo"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CheckPool(tc.nodes, tc.f)
			if !errors.Is(err, ErrPool) {
				t.Fatalf("%v, want ErrPool", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it to say %q", err, w)
				}
			}
		})
	}
}

// A managed DRANET pool is refused by both fabrics, whatever its machine
// type, with what the two attachment modes are and what to do.
func TestCheckPoolRefusesDRANET(t *testing.T) {
	for _, tc := range []struct {
		f  fabric.Fabric
		mt string
	}{{fabric.GIB, "a3-ultragpu-8g"}, {fabric.GIB, "a4-highgpu-8g"}, {fabric.TCPXO, "a3-megagpu-8g"}} {
		nodes := labelled(pool(t, 3, a3Mega(vpcs(8))), tc.mt, "")
		nodes[0].Labels[DRANETLabel] = "true"
		nodes[2].Labels[DRANETLabel] = "true"
		_, err := CheckPool(nodes, tc.f)
		if !errors.Is(err, ErrPool) {
			t.Fatalf("%s: %v, want ErrPool", tc.mt, err)
		}
		for _, w := range []string{"2 nodes (gke-a3-pool-0, gke-a3-pool-2) are labelled cloud.google.com/gke-networking-dra-driver=true", "managed DRANET", "DeviceClass mrdma.google.com",
			"DRANET and Device-type multi-networking are mutually exclusive attachment modes on the same NICs", "--fabric " + tc.f.Name + "'s runtime", "use a node pool without DRANET for the multi-network runtimes", "or run DRANET-native workloads"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to say %q", tc.mt, err, w)
			}
		}
	}
	nodes := labelled(pool(t, 1, a3Mega(vpcs(8))), "a3-ultragpu-8g", "")
	nodes[0].Labels[DRANETLabel] = "false"
	if _, err := CheckPool(nodes, fabric.GIB); err != nil {
		t.Errorf("%s=false is no DRANET pool: %v", DRANETLabel, err)
	}
}

// discover refuses the pool before reading its NICs: an A3 Ultra pool under
// the default fabric is named as gIB's, not judged as eight A3 Mega NICs.
func TestRunDiscoverRefusesAnotherFabricsPool(t *testing.T) {
	nodes := labelled(pool(t, 2, a3Mega(vpcs(8))), "a3-ultragpu-8g", "")
	_, err := RunDiscover(context.Background(), fakeClients(t, nodes, gkeNetworks(t, vpcs(8), true)), fabric.TCPXO, "cloud.google.com/gke-nodepool=gpu")
	if !errors.Is(err, ErrPool) || !strings.Contains(err.Error(), "run with --fabric gib") {
		t.Errorf("%v", err)
	}
}
