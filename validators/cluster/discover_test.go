package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

func TestDiscoverHealthyPool(t *testing.T) {
	d, err := Discover(pool(t, 3, a3Mega(vpcs(8))))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Mapping.String(), "eth1=vpc1,eth2=vpc2,eth3=vpc3,eth4=vpc4,eth5=vpc5,eth6=vpc6,eth7=vpc7,eth8=vpc8"; got != want {
		t.Errorf("mapping %s, want %s", got, want)
	}
	if len(d.Nodes) != 3 || len(d.Nodes[0].NICs) != 8 || d.Nodes[0].NICs[0].PCIAddress != gpuSlots[0] {
		t.Errorf("node facts %+v", d.Nodes)
	}
}

// The mapping follows the host NIC each network sits on, not the names'
// order (xpk's listing order of GKENetworkParamSets is wrong here).
func TestDiscoverFollowsHostNICsNotNames(t *testing.T) {
	nets := []string{"zeta", "alpha", "mike", "bravo", "yankee", "charlie", "x-ray", "delta"}
	d, err := Discover(pool(t, 2, a3Mega(nets)))
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range d.Mapping.Bindings() {
		if b.Network != nets[i] {
			t.Errorf("%s = %s, want %s (the network on host NIC %s)", b.Interface, b.Network, nets[i], b.Interface)
		}
	}
}

type nodeSpec struct {
	name string
	nics []hostNIC
}

// displacedSlot is a node whose pool carries a gVNIC additional network:
// it sits on GPU-NIC slot 0000:06:00.0 as gve0 (AICR PR #420), leaving seven
// GPU NICs while eight networks are advertised.
func displacedSlot() []hostNIC {
	nics := a3Mega(vpcs(8))[:1:1]
	nics = append(nics, hostNIC{name: "gve0", network: "gvnic-net", ip: "172.16.0.2", pci: gpuSlots[0]})
	for i, n := range vpcs(7) {
		nics = append(nics, hostNIC{name: fmt.Sprintf("eth%d", i+2), network: n, ip: fmt.Sprintf("192.168.%d.2", i+2), pci: gpuSlots[i+1]})
	}
	return nics
}

func nodesOf(t *testing.T, specs ...nodeSpec) []corev1.Node {
	t.Helper()
	var nodes []corev1.Node
	for _, s := range specs {
		nodes = append(nodes, gkeNode(t, s.name, s.nics))
	}
	return nodes
}

func TestDiscoverRefuses(t *testing.T) {
	healthy := a3Mega(vpcs(8))
	swapped := a3Mega(vpcs(8))
	swapped[2].network, swapped[3].network = swapped[3].network, swapped[2].network
	nine := append(a3Mega(vpcs(8)), hostNIC{name: "eth9", network: "vpc9", ip: "192.168.9.2", pci: "0000:90:00.0"})
	for _, c := range []struct {
		name  string
		nodes []nodeSpec
		want  []string
	}{
		{"seven networks", []nodeSpec{{"n0", a3Mega(vpcs(7))}}, []string{"node n0 advertises 7 GPU-NIC networks", "not 8"}},
		{"nine networks", []nodeSpec{{"n0", nine}}, []string{"node n0 advertises 9 GPU-NIC networks"}},
		{"a displaced slot on one node", []nodeSpec{{"n0", healthy}, {"n1", displacedSlot()}}, []string{"from 1 of 2 nodes", "node n1", "gvnic-net sits on host NIC gve0 (0000:06:00.0), which is not a GPU NIC", "no GPU-NIC network sits on host NIC eth1", "provision the pool"}},
		{"a displaced slot on every node", []nodeSpec{{"n0", displacedSlot()}, {"n1", displacedSlot()}}, []string{"from 2 of 2 nodes", "node n0", "node n1", "gve0"}},
		{"nodes that disagree", []nodeSpec{{"n0", healthy}, {"n1", swapped}}, []string{"the nodes disagree", "eth2=vpc2,eth3=vpc3", "on n0", "eth2=vpc3,eth3=vpc2", "on n1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Discover(nodesOf(t, c.nodes...))
			if err == nil {
				t.Fatal("discovered a mapping")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal does not say %q:\n%v", w, err)
				}
			}
		})
	}
	if _, err := Discover(nil); !errors.Is(err, ErrNoNodes) {
		t.Errorf("no nodes: %v", err)
	}
}

func TestDiscoverAnnotations(t *testing.T) {
	t.Run("missing both: unverified", func(t *testing.T) {
		n := gkeNode(t, "n0", a3Mega(vpcs(8)))
		n.Annotations = nil
		_, err := Discover([]corev1.Node{n})
		if !errors.Is(err, ErrUnverified) || !strings.Contains(err.Error(), "node n0 has neither "+networkv1.NorthInterfacesAnnotationKey) {
			t.Errorf("err %v", err)
		}
	})
	t.Run("missing nic-info", func(t *testing.T) {
		n := gkeNode(t, "n0", a3Mega(vpcs(8)))
		delete(n.Annotations, networkv1.NICInfoAnnotationKey)
		_, err := Discover([]corev1.Node{n})
		if err == nil || errors.Is(err, ErrUnverified) || !strings.Contains(err.Error(), "but no "+networkv1.NICInfoAnnotationKey) {
			t.Errorf("err %v", err)
		}
	})
	t.Run("malformed north-interfaces", func(t *testing.T) {
		n := gkeNode(t, "n0", a3Mega(vpcs(8)))
		n.Annotations[networkv1.NorthInterfacesAnnotationKey] = `{"network": "vpc1"` + strings.Repeat("x", 500)
		_, err := Discover([]corev1.Node{n})
		if err == nil || !strings.Contains(err.Error(), "node n0: annotation "+networkv1.NorthInterfacesAnnotationKey+" is not GKE's JSON list") {
			t.Fatalf("err %v", err)
		}
		if len(err.Error()) > 1000 {
			t.Errorf("the message quotes the whole annotation (%d bytes)", len(err.Error()))
		}
	})
	t.Run("a network on no listed NIC", func(t *testing.T) {
		n := gkeNode(t, "n0", a3Mega(vpcs(8)))
		n.Annotations[networkv1.NICInfoAnnotationKey] = `[{"birthName":"eth0","birthIP":"10.0.0.2","pciAddress":"0000:00:05.0"}]`
		_, err := Discover([]corev1.Node{n})
		if err == nil || !strings.Contains(err.Error(), `network "vpc1" at IP "192.168.1.2" is on no NIC`) {
			t.Errorf("err %v", err)
		}
	})
}

// What discovery finds is what render runtime takes: the printed value
// parses back to the same mapping.
func TestDiscoveredMappingRoundTrips(t *testing.T) {
	d, err := Discover(pool(t, 2, a3Mega([]string{"a-gpu-nic-0", "a-gpu-nic-1", "a-gpu-nic-2", "a-gpu-nic-3", "a-gpu-nic-4", "a-gpu-nic-5", "a-gpu-nic-6", "a-gpu-nic-7"})))
	if err != nil {
		t.Fatal(err)
	}
	back, err := interfaces.Parse(d.Mapping.String())
	if err != nil || back != d.Mapping {
		t.Errorf("Parse(%q) = %v, %v", d.Mapping, back, err)
	}
	if slices.ContainsFunc(d.Mapping.Bindings(), func(b interfaces.Binding) bool { return b.Network == "" }) {
		t.Error("an empty binding")
	}
}

// Eight GPU NICs must sit on eight distinct PCI slots.
func TestDiscoverRefusesASharedSlot(t *testing.T) {
	nics := a3Mega(vpcs(8))
	nics[2].pci = nics[1].pci
	_, err := Discover(nodesOf(t, nodeSpec{"n0", nics}))
	if err == nil || !strings.Contains(err.Error(), `GPU NIC eth2 has PCI address "0000:06:00.0", not a slot of its own`) {
		t.Errorf("err %v", err)
	}
}
