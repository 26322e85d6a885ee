// Package pool checks that the GPU nodes a benchmark runs on are one
// homogeneous pool of the machine the fabric's runtime is built for (For:
// A3 Mega for TCPXO; A3 Ultra or A4 for gIB).
//
// The shipped runtime assumes eight GPUs and eight GPU NICs per node: one rank
// per GPU, and NCCL_FASTRAK_IFNAME naming eth1..eth8. On a node with fewer
// GPUs the job does not fit or runs fewer ranks; on a node with fewer GPU-NIC
// networks the pod cannot attach eth8 (or NCCL falls back to fewer NICs); on a
// node of another accelerator the plugin does not apply. None of these fails
// cleanly: the benchmark hangs, or runs and reports a bandwidth that describes
// the slowest node. So a mixed pool is refused before anything is scheduled,
// naming the nodes that differ.
package pool

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

const (
	// ResourceGPU is the extended resource the NVIDIA device plugin (GKE's
	// included) advertises.
	ResourceGPU corev1.ResourceName = "nvidia.com/gpu"
	// LabelAccelerator is the node label GKE sets on GPU nodes to the
	// accelerator type.
	LabelAccelerator = "cloud.google.com/gke-accelerator"
	// AnnotationNorthInterfaces is the node annotation GKE multi-networking
	// maintains: one {network, ipAddress} entry per additional (non-default)
	// GKE Network the node is attached to, the GPU NICs' Device networks
	// included. Its key and type are gke-networking-api's (apis/network/v1),
	// the same discover and check cluster read.
	AnnotationNorthInterfaces = networkv1.NorthInterfacesAnnotationKey
)

// Pool is what every GPU node must be.
type Pool struct {
	// Accelerator is the required value of LabelAccelerator.
	Accelerator string
	// GPUs is the required allocatable nvidia.com/gpu.
	GPUs int64
	// GPUNICs is the minimum number of GPU-NIC networks attached.
	GPUNICs int
	// GPUNICNetworks, when set, names the GKE Networks of the GPU NICs (the
	// recipe's mapping, see WithMapping): every node must be attached to all
	// of them, and only they count. When empty, every additional network in
	// AnnotationNorthInterfaces counts, so an unrelated extra network could
	// stand in for a missing GPU NIC; set it whenever the mapping is known.
	GPUNICNetworks []string
	// NICFix, when set, is the fix for a node missing GPU-NIC networks
	// (default: TCPXO's, which names tcpxoInterfaces).
	NICFix string
}

// A3Mega is the pool the TCPXO runtime is built for: a3-megagpu-8g nodes,
// eight H100 GPUs and eight GPU NICs each.
var A3Mega = Pool{Accelerator: "nvidia-h100-mega-80gb", GPUs: 8, GPUNICs: 8}

// For is the pool fabric f's runtime is built for on its machine type mt:
// mt's accelerator label, eight GPUs and eight GPU NICs per node (TCPXO's
// eight GPU NICs, gIB's eight RDMA NICs; gIB's optional gVNIC on eth1 is
// required too when the mapping names it, WithMapping).
func For(mt fabric.MachineType, f fabric.Fabric) Pool {
	if f.Name == fabric.TCPXO.Name {
		p := A3Mega
		p.Accelerator = mt.Accelerator
		return p
	}
	return Pool{Accelerator: mt.Accelerator, GPUs: 8, GPUNICs: 8,
		NICFix: fmt.Sprintf("create the %s node pool with every network of the recipe's rdmaInterfaces attached as additional node networks: the eight RDMA networks (deviceMode RDMA), and the gVNIC network on eth1 where the recipe maps it", mt.Name)}
}

// WithMapping returns p requiring the GPU-NIC networks of m.
func (p Pool) WithMapping(m interfaces.Mapping) Pool {
	p.GPUNICNetworks = nil
	for _, b := range m.Bindings() {
		p.GPUNICNetworks = append(p.GPUNICNetworks, b.Network)
	}
	return p
}

// ErrNoGPUNodes is wrapped when no node is a GPU node.
var ErrNoGPUNodes = errors.New("no GPU nodes")

// NodeValue is what one node has where the pool requires something else.
type NodeValue struct {
	Node string
	Got  string
}

// Problem is one requirement that some GPU nodes miss.
type Problem struct {
	// Requirement reads "allocatable nvidia.com/gpu is 8" and the like.
	Requirement string
	Nodes       []NodeValue
	Fix         string
}

// MixedPoolError is CheckNodes' rejection: which requirements which nodes
// miss, out of how many GPU nodes.
type MixedPoolError struct {
	GPUNodes int
	Problems []Problem
}

// maxNamed bounds how many nodes a message names per problem; a 64-node pool
// with one bad label would otherwise print a page.
const maxNamed = 10

func (e *MixedPoolError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the GPU nodes are not one homogeneous pool, and a benchmark over a mixed pool measures its slowest node or hangs, so it was not run (%d GPU nodes checked)", e.GPUNodes)
	for _, p := range e.Problems {
		named := make([]string, 0, min(len(p.Nodes), maxNamed))
		for _, n := range p.Nodes[:min(len(p.Nodes), maxNamed)] {
			named = append(named, n.Node+" ("+n.Got+")")
		}
		if more := len(p.Nodes) - len(named); more > 0 {
			named = append(named, fmt.Sprintf("and %d more", more))
		}
		fmt.Fprintf(&b, "\n  %s on only %d of %d GPU nodes; not on %s: %s",
			p.Requirement, e.GPUNodes-len(p.Nodes), e.GPUNodes, strings.Join(named, ", "), p.Fix)
	}
	return b.String()
}

// requirement is one check every GPU node must pass; got describes the
// node's value when it fails.
type requirement struct {
	describe func(want Pool) string
	check    func(n *corev1.Node, want Pool) (got string, ok bool)
	fix      func(want Pool) string
}

var requirements = []requirement{
	{
		describe: func(w Pool) string { return fmt.Sprintf("allocatable %s is %d", ResourceGPU, w.GPUs) },
		check: func(n *corev1.Node, w Pool) (string, bool) {
			got := allocatableGPUs(n)
			return fmt.Sprint(got), got == w.GPUs
		},
		fix: func(Pool) string {
			return "fewer allocatable GPUs than the machine has means a GPU fault or a device plugin that is not ready (kubectl describe node shows which); drain or repair those nodes, or leave them out of the benchmark's node pool"
		},
	},
	{
		describe: func(w Pool) string { return fmt.Sprintf("label %s is %s", LabelAccelerator, w.Accelerator) },
		check: func(n *corev1.Node, w Pool) (string, bool) {
			got, ok := n.Labels[LabelAccelerator]
			if !ok {
				return "no label", false
			}
			return got, got == w.Accelerator
		},
		fix: func(w Pool) string {
			return "run the benchmark on one node pool of a single machine type: select the " + w.Accelerator + " nodes only (a node selector on " + LabelAccelerator + "), or remove the other GPU nodes from the cluster being validated"
		},
	},
	{
		describe: func(w Pool) string {
			if len(w.GPUNICNetworks) > 0 {
				return fmt.Sprintf("all %d GPU-NIC networks of the mapping are attached", len(w.GPUNICNetworks))
			}
			return fmt.Sprintf("at least %d GPU-NIC networks are attached", w.GPUNICs)
		},
		check: checkNICs,
		fix: func(w Pool) string {
			if w.NICFix != "" {
				return w.NICFix
			}
			return fmt.Sprintf("create the node pool with all %d GPU-NIC networks attached as additional node networks (their names are in the recipe's tcpxoInterfaces); a node pool with an additional gVNIC network has only seven GPU NICs and cannot run the TCPXO runtime", w.GPUNICs)
		},
	},
}

// CheckNodes checks that every GPU node among nodes matches want, and
// returns a *MixedPoolError naming the nodes that do not, or an error
// wrapping ErrNoGPUNodes when there are none. A GPU node is one with
// allocatable nvidia.com/gpu or the accelerator label, so a GPU node whose
// device plugin is down is still checked (and fails) rather than silently
// left out. Pass the nodes the benchmark could be scheduled on.
func CheckNodes(nodes []corev1.Node, want Pool) error {
	if want.Accelerator == "" || want.GPUs <= 0 || want.GPUNICs <= 0 {
		return fmt.Errorf("pool requirement %+v is incomplete: set Accelerator, GPUs and GPUNICs (pool.A3Mega is the TCPXO pool)", want)
	}
	if n := len(want.GPUNICNetworks); n > 0 && n < want.GPUNICs {
		return fmt.Errorf("pool requirement names %d GPU-NIC networks but requires %d GPU NICs: build it with WithMapping from a complete mapping", n, want.GPUNICs)
	}
	var gpuNodes []*corev1.Node
	for i := range nodes {
		n := &nodes[i]
		if IsGPUNode(n) {
			gpuNodes = append(gpuNodes, n)
		}
	}
	if len(gpuNodes) == 0 {
		return fmt.Errorf("%w among the %d nodes: none has allocatable %s or the label %s; check the kubeconfig context, that the %s node pool is up, and that the NVIDIA device plugin runs on it",
			ErrNoGPUNodes, len(nodes), ResourceGPU, LabelAccelerator, want.Accelerator)
	}
	slices.SortFunc(gpuNodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })

	var problems []Problem
	for _, r := range requirements {
		var bad []NodeValue
		for _, n := range gpuNodes {
			if got, ok := r.check(n, want); !ok {
				bad = append(bad, NodeValue{Node: n.Name, Got: got})
			}
		}
		if len(bad) > 0 {
			problems = append(problems, Problem{Requirement: r.describe(want), Nodes: bad, Fix: r.fix(want)})
		}
	}
	if len(problems) > 0 {
		return &MixedPoolError{GPUNodes: len(gpuNodes), Problems: problems}
	}
	return nil
}

// IsGPUNode tells a GPU node: one with the accelerator label or
// allocatable nvidia.com/gpu, so a GPU node whose device plugin is down is
// still one.
func IsGPUNode(n *corev1.Node) bool {
	_, labelled := n.Labels[LabelAccelerator]
	return labelled || allocatableGPUs(n) > 0
}

func allocatableGPUs(n *corev1.Node) int64 {
	q, ok := n.Status.Allocatable[ResourceGPU]
	if !ok {
		return 0
	}
	return q.Value()
}

// checkNICs counts the node's GPU-NIC networks from AnnotationNorthInterfaces:
// the mapping's networks when the pool names them, else every additional
// network but the default one.
func checkNICs(n *corev1.Node, w Pool) (string, bool) {
	raw, ok := n.Annotations[AnnotationNorthInterfaces]
	if !ok {
		return "no " + AnnotationNorthInterfaces + " annotation: GKE multi-networking is not enabled on its node pool", false
	}
	entries, err := networkv1.ParseNorthInterfacesAnnotation(raw)
	if err != nil {
		return fmt.Sprintf("unreadable %s annotation (%v)", AnnotationNorthInterfaces, err), false
	}
	attached := map[string]bool{}
	for _, e := range entries {
		if e.Network != "" && e.Network != interfaces.DefaultNetwork {
			attached[e.Network] = true
		}
	}
	if len(w.GPUNICNetworks) > 0 {
		var missing []string
		for _, net := range w.GPUNICNetworks {
			if !attached[net] {
				missing = append(missing, net)
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("%d of %d, missing %s", len(w.GPUNICNetworks)-len(missing), len(w.GPUNICNetworks), strings.Join(missing, ", ")), false
		}
		return "", true
	}
	return fmt.Sprintf("%d", len(attached)), len(attached) >= w.GPUNICs
}
