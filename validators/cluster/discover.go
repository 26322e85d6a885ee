// Package cluster reads what a GKE A3 Mega cluster's nodes say about their
// GPU NICs, in the formats GKE publishes (github.com/GoogleCloudPlatform/
// gke-networking-api, apis/network/v1), and derives from it the GPU-NIC to
// GKE Network mapping the runtime needs, or refuses to.
//
// Three node facts are read, all maintained by GKE:
//   - the extended resources networking.gke.io.networks/<network> (and
//     <network>.IP) that a node attached to a multi-network Network
//     advertises, the default network included (network_types.go,
//     NetworkResourceKeyPrefix);
//   - the annotation networking.gke.io/north-interfaces: one entry per
//     additional network, the network and the node's IP on it
//     (annotations.go, NorthInterfacesAnnotationKey, NorthInterface);
//   - the annotation networking.gke.io/nic-info: the host NICs, each with
//     its birth name, birth IP and PCI address (NICInfoAnnotationKey,
//     NICInfoRef).
//
// Joined on IP, the last two say which network sits on which host NIC.
// Nothing is guessed: a mapping is derived only when every node advertises
// the same eight networks, each on its own GPU NIC (eth1..eth8, the host
// NICs the runtime's pod interfaces mirror), identically on every node.
//
// With --fabric gib (RunDiscover with fabric.GIB) the same facts are read
// in the RDMA layout of A3 Ultra and A4 nodes: the eight RDMA networks on
// eth2..eth9 and at most the gVNIC network on eth1, each RDMA network's
// GKENetworkParamSet of deviceMode RDMA (eth1's NetDevice). Before any of
// it, the target nodes must be a pool of the asked fabric (CheckPool: the
// machine type decides the fabric, and a managed DRANET pool is refused).
//
// `check cluster` (RunCheckCluster) judges the same facts per node (Check),
// and the TrainJobs of the shipped runtimes against the deployed runtimes:
// a TrainJob keeps the wiring of the runtime it was created with (trainer
// v2.3.0's runtime snapshot), so one submitted before a runtime change is
// named with the wiring it still runs (trainjobs.go).
package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// ErrNoNodes is wrapped when no node matches the selection.
var ErrNoNodes = errors.New("no target nodes")

// ErrUnverified is wrapped when a node carries none of GKE's NIC
// annotations: nothing about its NICs can be checked.
var ErrUnverified = errors.New("the node's NICs cannot be verified")

// maxAnnotation bounds how much of an annotation a message quotes.
const maxAnnotation = 160

// NIC is one network of a node as GKE describes it: the network, the node's
// IP on it, and the host NIC that IP is on.
type NIC struct {
	Network    string `json:"network"`
	IP         string `json:"ip"`
	HostNIC    string `json:"hostNIC"`
	PCIAddress string `json:"pciAddress"`
}

// NodeNICs is one node's networks: the ones it advertises as extended
// resources, and where each sits.
type NodeNICs struct {
	Node string `json:"node"`
	// Networks are the networks the node advertises
	// (networking.gke.io.networks/<network>, without .IP and default), sorted.
	Networks []string `json:"networks"`
	// NICs are the additional networks with their host NICs, from
	// north-interfaces joined with nic-info, in host-NIC order.
	NICs []NIC `json:"nics"`
	// HostNICs are every host NIC nic-info lists.
	HostNICs []networkv1.NICInfoRef `json:"hostNICs"`
}

// ReadNode reads one node's GPU-NIC facts. A node with neither annotation
// wraps ErrUnverified; a node with one but not the other, or a malformed
// one, or a network whose IP is on no listed NIC, is an error naming the
// node and the value.
func ReadNode(n *corev1.Node) (NodeNICs, error) {
	out := NodeNICs{Node: n.Name, Networks: advertised(n)}
	northRaw, hasNorth := n.Annotations[networkv1.NorthInterfacesAnnotationKey]
	nicRaw, hasNIC := n.Annotations[networkv1.NICInfoAnnotationKey]
	switch {
	case !hasNorth && !hasNIC:
		return out, fmt.Errorf("node %s has neither %s nor %s: %w (is GKE multi-networking enabled on its node pool?)",
			n.Name, networkv1.NorthInterfacesAnnotationKey, networkv1.NICInfoAnnotationKey, ErrUnverified)
	case !hasNorth:
		return out, fmt.Errorf("node %s has %s but no %s, which GKE sets on every node attached to an additional network: which network sits on which NIC cannot be told", n.Name, networkv1.NICInfoAnnotationKey, networkv1.NorthInterfacesAnnotationKey)
	case !hasNIC:
		return out, fmt.Errorf("node %s has %s but no %s, which GKE sets on multi-network nodes: which host NIC each network sits on cannot be told", n.Name, networkv1.NorthInterfacesAnnotationKey, networkv1.NICInfoAnnotationKey)
	}
	north, err := networkv1.ParseNorthInterfacesAnnotation(northRaw)
	if err != nil {
		return out, fmt.Errorf("node %s: annotation %s is not GKE's JSON list of {network, ipAddress} (%v): %s", n.Name, networkv1.NorthInterfacesAnnotationKey, err, excerpt.QuoteN(northRaw, maxAnnotation))
	}
	nics, err := networkv1.ParseNICInfoAnnotation(nicRaw)
	if err != nil {
		return out, fmt.Errorf("node %s: annotation %s is not GKE's JSON list of {birthName, birthIP, pciAddress} (%v): %s", n.Name, networkv1.NICInfoAnnotationKey, err, excerpt.QuoteN(nicRaw, maxAnnotation))
	}
	out.HostNICs = nics
	byIP := map[string]networkv1.NICInfoRef{}
	for _, nic := range nics {
		if nic.BirthIP != "" {
			byIP[nic.BirthIP] = nic
		}
	}
	var problems []string
	for _, ni := range north {
		if networkv1.IsDefaultNetwork(ni.Network) {
			continue
		}
		nic, ok := byIP[ni.IpAddress]
		if ni.Network == "" || ni.IpAddress == "" || !ok {
			problems = append(problems, fmt.Sprintf("network %q at IP %q is on no NIC %s lists", ni.Network, ni.IpAddress, networkv1.NICInfoAnnotationKey))
			continue
		}
		out.NICs = append(out.NICs, NIC{Network: ni.Network, IP: ni.IpAddress, HostNIC: nic.BirthName, PCIAddress: nic.PCIAddress})
	}
	if len(problems) > 0 {
		return out, fmt.Errorf("node %s: %s", n.Name, strings.Join(problems, "; "))
	}
	slices.SortFunc(out.NICs, func(a, b NIC) int { return strings.Compare(a.HostNIC, b.HostNIC) })
	return out, nil
}

// advertised lists the networks a node advertises as extended resources,
// without the .IP resources and the default network.
func advertised(n *corev1.Node) []string {
	seen := map[string]bool{}
	for _, list := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
		for name := range list {
			net, ok := strings.CutPrefix(string(name), networkv1.NetworkResourceKeyPrefix)
			if !ok || strings.HasSuffix(net, ".IP") || networkv1.IsDefaultNetwork(net) || net == "" {
				continue
			}
			seen[net] = true
		}
	}
	return slices.Sorted(func(yield func(string) bool) {
		for k := range seen {
			if !yield(k) {
				return
			}
		}
	})
}

// nicWords are what differs between the fabrics' NIC wiring as discover
// and check cluster read it: the layout (which NICs a mapping binds) and
// how messages name its NICs, its node and the fix.
type nicWords struct {
	layout interfaces.Layout
	// nic names one fabric NIC ("GPU NIC"); node is its machine with an
	// article ("an A3 Mega node").
	nic, node string
	// provision is the fix a misprovisioned node ends with.
	provision string
	// pool names the machines in the plural ("A3 Mega nodes"); discover and
	// components are the commands that print the mapping and the node
	// components for the fabric.
	pool, discover, components string
}

var (
	tcpxoWords = nicWords{layout: interfaces.TCPXO, nic: "GPU NIC", node: "an A3 Mega node",
		provision: "a gVNIC or other additional network on the GPU node pool takes a GPU NIC's place: provision the pool with exactly the eight GPU-NIC networks",
		pool:      "A3 Mega nodes", discover: "tcpxogen discover", components: "tcpxogen render components"}
	rdmaWords = nicWords{layout: interfaces.RDMA, nic: "RDMA NIC", node: "an A3 Ultra or A4 node",
		provision: "provision the pool with the eight RDMA networks, one on each of eth2..eth9 (Google's documentation names them rdma-0..rdma-7), and at most the gVNIC network on eth1",
		pool:      "A3 Ultra or A4 nodes", discover: "tcpxogen discover --fabric gib", components: "tcpxogen render components --fabric gib"}
)

// wordsFor is the NIC wiring of fabric f.
func wordsFor(f fabric.Fabric) nicWords {
	if f.Name == fabric.GIB.Name {
		return rdmaWords
	}
	return tcpxoWords
}

// hyphenated is w.nic as an adjective ("GPU-NIC networks").
func (w nicWords) hyphenated() string { return strings.ReplaceAll(w.nic, " ", "-") }

// mapping derives the node's own mapping in w's layout: each of the
// layout's required NICs carries exactly one of the networks the node
// advertises, each optional NIC at most one, and no advertised network sits
// elsewhere. Any other shape is refused, with what the node has.
func (n NodeNICs) mapping(w nicWords) (interfaces.Mapping, error) {
	gpu, opt := w.layout.GPUInterfaces(), w.layout.OptionalInterfaces()
	// The networks on optional NICs (RDMA's gVNIC network on eth1) are
	// counted apart: the fabric's own must be one per required NIC.
	var onOpt, own []string
	for _, net := range n.Networks {
		i := slices.IndexFunc(n.NICs, func(nic NIC) bool { return nic.Network == net && slices.Contains(opt, nic.HostNIC) })
		if i < 0 {
			own = append(own, net)
			continue
		}
		onOpt = append(onOpt, net+" on "+n.NICs[i].HostNIC)
	}
	if len(own) != len(gpu) || len(onOpt) > len(opt) {
		besides := ""
		if len(onOpt) > 0 {
			besides = " besides " + strings.Join(onOpt, ", ")
		}
		return interfaces.Mapping{}, fmt.Errorf("node %s advertises %d %s networks (%s)%s, not %d: %s has one Network per %s; check the node pool's additional networks",
			n.Node, len(own), w.hyphenated(), orNone(own), besides, len(gpu), w.node, w.nic)
	}
	nicRange := strings.Join([]string{gpu[0], gpu[len(gpu)-1]}, "..")
	for _, o := range opt {
		nicRange += ", or " + o
	}
	onNIC := map[string]NIC{}
	var bad []string
	for _, nic := range n.NICs {
		if !slices.Contains(n.Networks, nic.Network) {
			continue
		}
		if !slices.Contains(gpu, nic.HostNIC) && !slices.Contains(opt, nic.HostNIC) {
			bad = append(bad, fmt.Sprintf("network %s sits on host NIC %s (%s), which is not %s (%s)", nic.Network, nic.HostNIC, nic.PCIAddress, article(w.nic), nicRange))
			continue
		}
		if i := slices.IndexFunc(n.NICs, func(o NIC) bool { return o.PCIAddress == nic.PCIAddress && o.HostNIC != nic.HostNIC }); i >= 0 || nic.PCIAddress == "" {
			bad = append(bad, fmt.Sprintf("%s %s has PCI address %q, not a slot of its own", w.nic, nic.HostNIC, nic.PCIAddress))
		}
		if prev, dup := onNIC[nic.HostNIC]; dup {
			bad = append(bad, fmt.Sprintf("networks %s and %s both sit on host NIC %s", prev.Network, nic.Network, nic.HostNIC))
			continue
		}
		onNIC[nic.HostNIC] = nic
	}
	var bindings []interfaces.Binding
	for _, iface := range opt {
		if nic, ok := onNIC[iface]; ok {
			bindings = append(bindings, interfaces.Binding{Interface: iface, Network: nic.Network})
		}
	}
	for _, iface := range gpu {
		nic, ok := onNIC[iface]
		if !ok {
			bad = append(bad, fmt.Sprintf("no %s network sits on host NIC %s", w.hyphenated(), iface))
			continue
		}
		bindings = append(bindings, interfaces.Binding{Interface: iface, Network: nic.Network})
	}
	for _, net := range n.Networks {
		if !slices.ContainsFunc(n.NICs, func(nic NIC) bool { return nic.Network == net }) {
			bad = append(bad, fmt.Sprintf("network %s is advertised but not in %s", net, networkv1.NorthInterfacesAnnotationKey))
		}
	}
	if len(bad) > 0 {
		return interfaces.Mapping{}, fmt.Errorf("node %s: %s; %s", n.Node, strings.Join(bad, "; "), w.provision)
	}
	return w.layout.FromBindings(bindings)
}

// article puts "a" or "an" before a NIC's name.
func article(nic string) string {
	if strings.HasPrefix(nic, "RDMA") {
		return "an " + nic
	}
	return "a " + nic
}

// Discovery is what Discover found: the mapping every node agrees on, and
// each node's facts.
type Discovery struct {
	Mapping interfaces.Mapping
	Nodes   []NodeNICs
}

// Discover derives the one GPU-NIC mapping of the target nodes: every node
// must advertise the same eight networks and carry them on the same host
// NICs. It refuses, naming nodes and values, whatever it would have to
// guess: no nodes, a node without the annotations, nodes that disagree.
func Discover(nodes []corev1.Node) (Discovery, error) { return discover(nodes, tcpxoWords) }

// discover is Discover in w's layout.
func discover(nodes []corev1.Node, w nicWords) (Discovery, error) {
	if len(nodes) == 0 {
		return Discovery{}, fmt.Errorf("%w: no node matches the selection; check --node-selector and the kubeconfig context", ErrNoNodes)
	}
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	var d Discovery
	var errs []error
	byMapping := map[interfaces.Mapping][]string{}
	var order []interfaces.Mapping
	for i := range sorted {
		nn, err := ReadNode(&sorted[i])
		d.Nodes = append(d.Nodes, nn)
		if err == nil {
			var m interfaces.Mapping
			if m, err = nn.mapping(w); err == nil {
				if _, seen := byMapping[m]; !seen {
					order = append(order, m)
				}
				byMapping[m] = append(byMapping[m], nn.Node)
				continue
			}
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return d, errors.Join(append([]error{fmt.Errorf("the %s networks cannot be discovered from %d of %d nodes, and tcpxogen does not guess them", w.hyphenated(), len(errs), len(sorted))}, errs...)...)
	}
	if len(order) > 1 {
		var lines []string
		for _, m := range order {
			lines = append(lines, fmt.Sprintf("  %s on %s", m, listNodes(byMapping[m])))
		}
		return d, fmt.Errorf("the nodes disagree on which network sits on which %s, so no one mapping fits them all:\n%s\nselect one pool with --node-selector, or reprovision the pools alike", w.nic, strings.Join(lines, "\n"))
	}
	d.Mapping = order[0]
	return d, nil
}

// maxNamed bounds how many nodes a message names; listNodes names them.
const maxNamed = 10

func listNodes(ns []string) string {
	if len(ns) <= maxNamed {
		return strings.Join(ns, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ns[:maxNamed], ", "), len(ns)-maxNamed)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
