package pool

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// gpuNICs are the GPU-NIC networks of the test mapping.
var gpuNICs = []string{"gpu-nic-1", "gpu-nic-2", "gpu-nic-3", "gpu-nic-4", "gpu-nic-5", "gpu-nic-6", "gpu-nic-7", "gpu-nic-8"}

type spec struct {
	gpus        int64  // allocatable nvidia.com/gpu; <0 for none
	accelerator string // "" for no label
	// networks in the north-interfaces annotation; nil for no annotation.
	networks []string
	raw      string // annotation verbatim, overriding networks
}

func node(name string, s spec) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
	if s.gpus >= 0 {
		n.Status.Allocatable = corev1.ResourceList{ResourceGPU: *resource.NewQuantity(s.gpus, resource.DecimalSI)}
	}
	if s.accelerator != "" {
		n.Labels[LabelAccelerator] = s.accelerator
	}
	if s.networks != nil {
		// Written with gke-networking-api's own marshaler, as GKE writes it.
		var entries networkv1.NorthInterfacesAnnotation
		for i, net := range s.networks {
			entries = append(entries, networkv1.NorthInterface{Network: net, IpAddress: fmt.Sprintf("10.%d.0.2", i+1)})
		}
		raw, err := networkv1.MarshalNorthInterfacesAnnotation(entries)
		if err != nil {
			// Strings always marshal; the table literals that call this
			// have no *testing.T to report to.
			panic(err)
		}
		n.Annotations[AnnotationNorthInterfaces] = raw
	}
	if s.raw != "" {
		n.Annotations[AnnotationNorthInterfaces] = s.raw
	}
	return n
}

var (
	mega     = spec{gpus: 8, accelerator: "nvidia-h100-mega-80gb", networks: gpuNICs}
	cpu      = spec{gpus: -1}
	a3High   = spec{gpus: 8, accelerator: "nvidia-h100-80gb", networks: gpuNICs[:4]}
	sevenNIC = spec{gpus: 8, accelerator: "nvidia-h100-mega-80gb", networks: gpuNICs[:7]}
)

func with(s spec, edit func(*spec)) spec { edit(&s); return s }

func nodes(specs ...spec) []corev1.Node {
	var out []corev1.Node
	for i, s := range specs {
		out = append(out, node(fmt.Sprintf("node-%c", 'a'+i), s))
	}
	return out
}

func mapping(t *testing.T) interfaces.Mapping {
	t.Helper()
	var bs []interfaces.Binding
	for i, n := range gpuNICs {
		bs = append(bs, interfaces.Binding{Interface: fmt.Sprintf("eth%d", i+1), Network: n})
	}
	m, err := interfaces.FromBindings(bs)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCheckNodes(t *testing.T) {
	withMapping := A3Mega.WithMapping(mapping(t))
	// Eight networks, but one is an unrelated extra in place of gpu-nic-8.
	displaced := with(mega, func(s *spec) { s.networks = append(append([]string{}, gpuNICs[:7]...), "storage-net") })

	type bad = map[string][]NodeValue // requirement → nodes
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		want  Pool
		bad   bad // nil: the pool passes
	}{
		{"homogeneous", nodes(mega, mega, mega, mega), A3Mega, nil},
		{"homogeneous, checked against the mapping", nodes(mega, mega), withMapping, nil},
		{"CPU nodes are not GPU nodes", nodes(cpu, mega, cpu, mega), A3Mega, nil},
		{"the default network is not a GPU NIC", nodes(with(mega, func(s *spec) { s.networks = append(append([]string{}, gpuNICs[:7]...), "default") })), A3Mega,
			bad{"at least 8 GPU-NIC networks are attached": {{"node-a", "7"}}}},
		{"fewer allocatable GPUs", nodes(mega, with(mega, func(s *spec) { s.gpus = 4 }), mega), A3Mega,
			bad{"allocatable nvidia.com/gpu is 8": {{"node-b", "4"}}}},
		{"device plugin down: labelled, no GPUs", nodes(mega, with(mega, func(s *spec) { s.gpus = -1 })), A3Mega,
			bad{"allocatable nvidia.com/gpu is 8": {{"node-b", "0"}}}},
		{"another accelerator (A3 High)", nodes(mega, a3High), A3Mega,
			bad{"label cloud.google.com/gke-accelerator is nvidia-h100-mega-80gb": {{"node-b", "nvidia-h100-80gb"}},
				"at least 8 GPU-NIC networks are attached": {{"node-b", "4"}}}},
		{"GPUs without the accelerator label", nodes(mega, with(mega, func(s *spec) { s.accelerator = "" })), A3Mega,
			bad{"label cloud.google.com/gke-accelerator is nvidia-h100-mega-80gb": {{"node-b", "no label"}}}},
		{"a GPU NIC short (gVNIC additional network)", nodes(mega, sevenNIC, mega), A3Mega,
			bad{"at least 8 GPU-NIC networks are attached": {{"node-b", "7"}}}},
		{"no multi-networking", nodes(with(mega, func(s *spec) { s.networks = nil })), A3Mega,
			bad{"at least 8 GPU-NIC networks are attached": {{"node-a", "no networking.gke.io/north-interfaces annotation: GKE multi-networking is not enabled on its node pool"}}}},
		{"unreadable annotation", nodes(with(mega, func(s *spec) { s.raw = "{not json" })), A3Mega,
			bad{"at least 8 GPU-NIC networks are attached": {{"node-a", "unreadable networking.gke.io/north-interfaces annotation (invalid character 'n' looking for beginning of object key string)"}}}},
		// Counting alone lets an extra network stand in for a GPU NIC;
		// checking the mapping's names does not.
		{"displaced GPU NIC, counted", nodes(displaced), A3Mega, nil},
		{"displaced GPU NIC, against the mapping", nodes(mega, displaced), withMapping,
			bad{"all 8 GPU-NIC networks of the mapping are attached": {{"node-b", "7 of 8, missing gpu-nic-8"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckNodes(tc.nodes, tc.want)
			if tc.bad == nil {
				if err != nil {
					t.Fatalf("CheckNodes = %v", err)
				}
				return
			}
			var mixed *MixedPoolError
			if !errors.As(err, &mixed) {
				t.Fatalf("CheckNodes = %v; want a *MixedPoolError", err)
			}
			got := bad{}
			for _, p := range mixed.Problems {
				got[p.Requirement] = p.Nodes
				if p.Fix == "" {
					t.Errorf("%s has no fix", p.Requirement)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.bad) {
				t.Errorf("problems\n%v\nwant\n%v", got, tc.bad)
			}
			msg := err.Error()
			for _, nodes := range tc.bad {
				for _, n := range nodes {
					if !strings.Contains(msg, n.Node+" ("+n.Got+")") {
						t.Errorf("message does not name %s (%s):\n%s", n.Node, n.Got, msg)
					}
				}
			}
		})
	}
}

// Every requirement a node misses is reported, in a fixed order, and the
// message reads as one report.
func TestCheckNodesReportsEverything(t *testing.T) {
	err := CheckNodes(nodes(mega, spec{gpus: 4, accelerator: "nvidia-l4", networks: nil}, mega), A3Mega)
	var mixed *MixedPoolError
	if !errors.As(err, &mixed) || mixed.GPUNodes != 3 || len(mixed.Problems) != 3 {
		t.Fatalf("CheckNodes = %v", err)
	}
	want := "the GPU nodes are not one homogeneous pool, and a benchmark over a mixed pool measures its slowest node or hangs, so it was not run (3 GPU nodes checked)\n" +
		"  allocatable nvidia.com/gpu is 8 on only 2 of 3 GPU nodes; not on node-b (4): "
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message\n%s\ndoes not start\n%s", err, want)
	}
	if strings.Count(err.Error(), "\n  ") != 3 {
		t.Errorf("not one line per problem:\n%s", err)
	}
}

func TestCheckNodesBoundsTheNodeList(t *testing.T) {
	specs := []spec{mega}
	for range 14 {
		specs = append(specs, sevenNIC)
	}
	err := CheckNodes(nodes(specs...), A3Mega)
	if err == nil || !strings.Contains(err.Error(), "node-k (7), and 4 more") || strings.Contains(err.Error(), "node-l") {
		t.Errorf("CheckNodes = %v; want ten nodes named and the rest counted", err)
	}
}

func TestCheckNodesWithoutGPUNodes(t *testing.T) {
	for _, ns := range [][]corev1.Node{nil, nodes(cpu, cpu)} {
		err := CheckNodes(ns, A3Mega)
		if !errors.Is(err, ErrNoGPUNodes) || !strings.Contains(err.Error(), "nvidia-h100-mega-80gb node pool") {
			t.Errorf("CheckNodes(%d CPU nodes) = %v", len(ns), err)
		}
	}
}

func TestCheckNodesRejectsIncompletePools(t *testing.T) {
	for _, p := range []Pool{{}, {Accelerator: "x", GPUs: 8}, {Accelerator: "x", GPUNICs: 8}, {GPUs: 8, GPUNICs: 8},
		{Accelerator: "x", GPUs: 8, GPUNICs: 8, GPUNICNetworks: []string{"a"}}} {
		if err := CheckNodes(nodes(mega), p); err == nil {
			t.Errorf("CheckNodes accepted pool %+v", p)
		}
	}
}

func TestWithMapping(t *testing.T) {
	p := A3Mega.WithMapping(mapping(t))
	if fmt.Sprint(p.GPUNICNetworks) != fmt.Sprint(gpuNICs) || A3Mega.GPUNICNetworks != nil {
		t.Errorf("WithMapping = %v (A3Mega now %v)", p.GPUNICNetworks, A3Mega.GPUNICNetworks)
	}
}

// For is the pool of a fabric's machine type: TCPXO's is A3Mega; gIB's
// requires the machine type's accelerator, eight GPUs and eight NICs, and
// its fix for missing networks names rdmaInterfaces, not TCPXO's key.
func TestFor(t *testing.T) {
	if got := For(fabric.TCPXO.MachineTypes[0], fabric.TCPXO); got.Accelerator != A3Mega.Accelerator || got.GPUs != A3Mega.GPUs || got.GPUNICs != A3Mega.GPUNICs || got.NICFix != "" {
		t.Errorf("TCPXO's pool %+v, want A3Mega", got)
	}
	for _, mt := range fabric.GIB.MachineTypes {
		p := For(mt, fabric.GIB)
		if p.Accelerator != mt.Accelerator || p.GPUs != 8 || p.GPUNICs != 8 || !strings.Contains(p.NICFix, "rdmaInterfaces") || strings.Contains(p.NICFix, "tcpxoInterfaces") {
			t.Errorf("%s's pool %+v", mt.Name, p)
		}
	}
}
