package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
)

// ErrPool is wrapped when the target nodes are not a pool the asked fabric
// serves: a node without its machine type, machine types mixed, a machine
// type no fabric serves, or one another fabric serves.
var ErrPool = errors.New("the target nodes are not a pool of the fabric")

// NodeSelectorFor is the default --node-selector of fabric f: the
// accelerator label of its machine types (DefaultNodeSelector for TCPXO).
func NodeSelectorFor(f fabric.Fabric) string {
	if f.Name == fabric.TCPXO.Name {
		return DefaultNodeSelector
	}
	accs := f.Accelerators()
	if len(accs) == 1 {
		return fabric.AcceleratorLabel + "=" + accs[0]
	}
	return fabric.AcceleratorLabel + " in (" + strings.Join(accs, ",") + ")"
}

// CheckPool judges the target nodes as a pool of fabric f before anything
// else is: the machine type decides the fabric, read from each node's
// node.kubernetes.io/instance-type label (the accelerator label alone
// cannot tell A3 High from A3 Edge, so it is never used to guess). It
// refuses, naming nodes and values, a node without the label, a pool
// mixing machine types, a machine type no fabric serves (A3 High and A3
// Edge: GPUDirect-TCPX), a machine type another fabric serves, and a node
// of a managed DRANET pool (DRANETLabel), which every multi-network fabric
// refuses: the attachment modes exclude each other on the same NICs. No
// nodes is not its to judge (Discover and Check name it); it returns the
// zero MachineType then.
func CheckPool(nodes []corev1.Node, f fabric.Fabric) (fabric.MachineType, error) {
	return CheckPoolWith(nodes, f, nil)
}

// CheckPoolWith is CheckPool that also refuses the nodes managed DRANET's
// driver publishes devices on (ReadDRANET), as the ones labelled for it.
func CheckPoolWith(nodes []corev1.Node, f fabric.Fabric, bySlices DRANETSlices) (fabric.MachineType, error) {
	if len(nodes) == 0 {
		return fabric.MachineType{}, nil
	}
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	byType := map[string][]string{}
	var unlabelled []string
	for _, n := range sorted {
		mt := n.Labels[fabric.InstanceTypeLabel]
		if mt == "" {
			unlabelled = append(unlabelled, n.Name)
			continue
		}
		byType[mt] = append(byType[mt], n.Name)
	}
	if len(unlabelled) > 0 {
		return fabric.MachineType{}, fmt.Errorf("%w: %s (%s) %s no %s label, so the machine type that decides the fabric is unknown (the accelerator label alone cannot tell A3 High from A3 Edge, and tcpxogen does not guess it); GKE sets the label on every node it manages: check that --node-selector picks GKE GPU nodes",
			ErrPool, nodeCount(len(unlabelled)), listNodes(unlabelled), verb(len(unlabelled), "carries", "carry"), fabric.InstanceTypeLabel)
	}
	types := slices.Sorted(func(yield func(string) bool) {
		for mt := range byType {
			if !yield(mt) {
				return
			}
		}
	})
	if len(types) > 1 {
		var parts []string
		for _, mt := range types {
			parts = append(parts, fmt.Sprintf("%s=%s on %s (%s)", fabric.InstanceTypeLabel, mt, nodeCount(len(byType[mt])), listNodes(byType[mt])))
		}
		var sels []string
		for _, mt := range types {
			sels = append(sels, "--node-selector "+fabric.InstanceTypeLabel+"="+mt)
		}
		return fabric.MachineType{}, fmt.Errorf("%w: the target nodes mix machine types: %s; a fabric's runtime serves one machine type's pool, so select one pool with --node-selector (%s)", ErrPool, strings.Join(parts, "; "), strings.Join(sels, ", or "))
	}
	mt, on := types[0], byType[types[0]]
	served, err := fabric.ForMachineType(mt)
	if err != nil {
		return fabric.MachineType{}, fmt.Errorf("%w: %s (%s): %v; neither --fabric %s serves these nodes", ErrPool, nodeCount(len(on)), listNodes(on), err, strings.Join(fabric.Names(), " nor --fabric "))
	}
	if served.Name != f.Name {
		return fabric.MachineType{}, fmt.Errorf("%w: --fabric %s (%s) serves %s, but these nodes are %s (%s), served by %s (%s): run with --fabric %s, or select a pool of %s with --node-selector",
			ErrPool, f.Name, f.Title, strings.Join(f.MachineTypeNames(), " and "), mt, listNodes(on), served.Name, served.Title, served.Name, strings.Join(f.MachineTypeNames(), " or "))
	}
	var dranet []string
	for _, n := range sorted {
		if n.Labels[DRANETLabel] == "true" {
			dranet = append(dranet, n.Name)
		}
	}
	if err := dranetError(f, dranet, bySlices); err != nil {
		return fabric.MachineType{}, err
	}
	m, _ := f.MachineType(mt)
	return m, nil
}

// DRANETLabel and DRANETDeviceClass are managed DRANET's node label and
// DeviceClass (internal/fabric, with their sources).
const (
	DRANETLabel       = fabric.DRANETLabel
	DRANETDeviceClass = fabric.DRANETDeviceClass
)

func nodeCount(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}

func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
