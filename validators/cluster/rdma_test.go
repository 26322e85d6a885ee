package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
)

// rdmaSlots are PCI slots for an A3 Ultra / A4 node's eth1 and its eight
// RDMA NICs eth2..eth9: made up for the tests (one slot each), never a
// rule.
var rdmaSlots = []string{"0000:0c:00.0", "0000:91:00.0", "0000:92:00.0", "0000:93:00.0", "0000:94:00.0", "0000:95:00.0", "0000:96:00.0", "0000:97:00.0", "0000:98:00.0"}

// rdmaNames are the networks Google's documentation creates: rdma-0..rdma-7.
func rdmaNames(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("rdma-%d", i))
	}
	return out
}

// a3Ultra is a healthy A3 Ultra or A4 node as Google's setup provisions
// one: eth0 on the default network, eth1 carrying gvnic ("" for no
// network there), eth(2+i) carrying rdma[i].
func a3Ultra(gvnic string, rdma []string) []hostNIC {
	nics := []hostNIC{{name: "eth0", ip: "10.0.0.2", pci: "0000:00:05.0"}, {name: "eth1", network: gvnic, ip: "10.1.0.2", pci: rdmaSlots[0]}}
	for i, n := range rdma {
		nics = append(nics, hostNIC{name: fmt.Sprintf("eth%d", i+2), network: n, ip: fmt.Sprintf("192.168.%d.2", i+2), pci: rdmaSlots[i+1]})
	}
	return nics
}

func gibPool(t *testing.T, n int, mt string, nics []hostNIC) []corev1.Node {
	t.Helper()
	return labelled(pool(t, n, nics), mt, "")
}

func TestDiscoverRDMAHealthyPools(t *testing.T) {
	for _, tc := range []struct {
		mt, gvnic, want string
	}{
		{"a3-ultragpu-8g", "gvnic-1", "eth1=gvnic-1,eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7"},
		{"a4-highgpu-8g", "gvnic-1", "eth1=gvnic-1,eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7"},
		{"a4-highgpu-8g", "", "eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7"},
	} {
		d, err := discover(gibPool(t, 2, tc.mt, a3Ultra(tc.gvnic, rdmaNames(8))), rdmaWords)
		if err != nil {
			t.Fatalf("%s: %v", tc.mt, err)
		}
		if got := d.Mapping.String(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.mt, got, tc.want)
		}
	}
}

// The mapping follows the host NIC each RDMA network sits on, not the
// names' order.
func TestDiscoverRDMAFollowsHostNICs(t *testing.T) {
	nets := []string{"rdma-3", "rdma-0", "rdma-7", "rdma-1", "rdma-6", "rdma-2", "rdma-5", "rdma-4"}
	d, err := discover(gibPool(t, 2, "a3-ultragpu-8g", a3Ultra("gvnic-1", nets)), rdmaWords)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Mapping.String(); got != "eth1=gvnic-1,eth2=rdma-3,eth3=rdma-0,eth4=rdma-7,eth5=rdma-1,eth6=rdma-6,eth7=rdma-2,eth8=rdma-5,eth9=rdma-4" {
		t.Errorf("%s", got)
	}
}

func TestDiscoverRDMARefusals(t *testing.T) {
	seven := a3Ultra("gvnic-1", rdmaNames(7))
	nine := append(a3Ultra("", rdmaNames(8)), hostNIC{name: "eth10", network: "rdma-8", ip: "192.168.10.2", pci: "0000:99:00.0"})
	// A3 Mega's numbering: the eight networks on eth1..eth8.
	megaNumbered := a3Ultra("", nil)[:1]
	for i, n := range rdmaNames(8) {
		megaNumbered = append(megaNumbered, hostNIC{name: fmt.Sprintf("eth%d", i+1), network: n, ip: fmt.Sprintf("192.168.%d.2", i+1), pci: rdmaSlots[i]})
	}
	displaced := a3Ultra("gvnic-1", rdmaNames(8))
	displaced[4].pci = displaced[3].pci
	other := a3Ultra("gvnic-1", []string{"rdma-1", "rdma-0", "rdma-2", "rdma-3", "rdma-4", "rdma-5", "rdma-6", "rdma-7"})
	disagree := gibPool(t, 2, "a3-ultragpu-8g", a3Ultra("gvnic-1", rdmaNames(8)))
	disagree = append(disagree, renamed(gibPool(t, 1, "a3-ultragpu-8g", other), "gke-b-pool")...)
	malformed := gibPool(t, 1, "a4-highgpu-8g", a3Ultra("gvnic-1", rdmaNames(8)))
	malformed[0].Annotations[networkv1.NICInfoAnnotationKey] = `[{"birthName":"eth2",`
	missing := gibPool(t, 1, "a4-highgpu-8g", a3Ultra("gvnic-1", rdmaNames(8)))
	delete(missing[0].Annotations, networkv1.NorthInterfacesAnnotationKey)
	for name, tc := range map[string]struct {
		nodes []corev1.Node
		want  []string
	}{
		"seven RDMA networks": {gibPool(t, 1, "a3-ultragpu-8g", seven),
			[]string{"node gke-a3-pool-0 advertises 7 RDMA-NIC networks (rdma-0, rdma-1, rdma-2, rdma-3, rdma-4, rdma-5, rdma-6) besides gvnic-1 on eth1, not 8"}},
		"seven RDMA networks, no gVNIC": {gibPool(t, 1, "a3-ultragpu-8g", a3Ultra("", rdmaNames(7))),
			[]string{"advertises 7 RDMA-NIC networks (rdma-0, rdma-1, rdma-2, rdma-3, rdma-4, rdma-5, rdma-6), not 8", "an A3 Ultra or A4 node has one Network per RDMA NIC"}},
		"nine RDMA networks": {gibPool(t, 1, "a3-ultragpu-8g", nine),
			[]string{"advertises 9 RDMA-NIC networks (rdma-0, rdma-1, rdma-2, rdma-3, rdma-4, rdma-5, rdma-6, rdma-7, rdma-8), not 8"}},
		"eight RDMA networks, one off the RDMA NICs": {gibPool(t, 1, "a3-ultragpu-8g", append(a3Ultra("", rdmaNames(7)), hostNIC{name: "eth10", network: "rdma-7", ip: "192.168.10.2", pci: "0000:99:00.0"})),
			[]string{"network rdma-7 sits on host NIC eth10 (0000:99:00.0), which is not an RDMA NIC (eth2..eth9, or eth1)", "no RDMA-NIC network sits on host NIC eth9"}},
		"A3 Mega's numbering": {gibPool(t, 1, "a3-ultragpu-8g", megaNumbered),
			[]string{"advertises 7 RDMA-NIC networks (rdma-1, rdma-2, rdma-3, rdma-4, rdma-5, rdma-6, rdma-7) besides rdma-0 on eth1, not 8"}},
		"a displaced NIC": {gibPool(t, 1, "a4-highgpu-8g", displaced),
			[]string{`RDMA NIC eth3 has PCI address "0000:92:00.0", not a slot of its own`, "provision the pool with the eight RDMA networks, one on each of eth2..eth9"}},
		"disagreeing nodes": {disagree,
			[]string{"the nodes disagree on which network sits on which RDMA NIC", "eth2=rdma-0,eth3=rdma-1", "on gke-a3-pool-0, gke-a3-pool-1", "eth2=rdma-1,eth3=rdma-0", "on gke-b-pool-0"}},
		"a malformed nic-info": {malformed,
			[]string{"the RDMA-NIC networks cannot be discovered from 1 of 1 nodes", "node gke-a3-pool-0: annotation networking.gke.io/nic-info is not GKE's JSON list", `birthName`}},
		"no north-interfaces": {missing,
			[]string{"node gke-a3-pool-0 has networking.gke.io/nic-info but no networking.gke.io/north-interfaces"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := discover(tc.nodes, rdmaWords)
			if err == nil {
				t.Fatal("discovered")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it to say %q", err, w)
				}
			}
		})
	}
}

// rdmaNetworks are the Networks and GKENetworkParamSets of Google's A3
// Ultra / A4 setup: rdma-* of deviceMode RDMA, gvnic-1 of NetDevice, all
// Device networks and Ready.
func rdmaNetworks(t *testing.T) []runtime.Object {
	t.Helper()
	objs := gkeNetworks(t, append([]string{"gvnic-1"}, rdmaNames(8)...), true)
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		if u.GetKind() == "GKENetworkParamSet" && u.GetName() != "gvnic-1" {
			if err := unstructured.SetNestedField(u.Object, string(networkv1.RDMA), "spec", "deviceMode"); err != nil {
				t.Fatal(err)
			}
		}
	}
	return objs
}

func TestRunDiscoverGIB(t *testing.T) {
	ctx := context.Background()
	for _, mt := range []string{"a3-ultragpu-8g", "a4-highgpu-8g"} {
		nodes := gibPool(t, 2, mt, a3Ultra("gvnic-1", rdmaNames(8)))
		f, err := RunDiscover(ctx, fakeClients(t, nodes, rdmaNetworks(t)), fabric.GIB, NodeSelectorFor(fabric.GIB))
		if err != nil {
			t.Fatalf("%s: %v", mt, err)
		}
		if !strings.HasPrefix(f.Interfaces, "eth1=gvnic-1,eth2=rdma-0,") || len(f.Nodes) != 2 {
			t.Errorf("%s: found %+v", mt, f)
		}
		if got := f.Mapping.ValuesYAML(); !strings.HasPrefix(got, "rdmaInterfaces:\n  - {interfaceName: eth1, network: \"gvnic-1\"}\n  - {interfaceName: eth2, network: \"rdma-0\"}\n") {
			t.Errorf("%s: values %s", mt, got)
		}
	}
	nodes := gibPool(t, 2, "a3-ultragpu-8g", a3Ultra("gvnic-1", rdmaNames(8)))
	// TCPXO's networks: NetDevice param sets for the RDMA NICs.
	_, err := RunDiscover(ctx, fakeClients(t, nodes, gkeNetworks(t, append([]string{"gvnic-1"}, rdmaNames(8)...), true)), fabric.GIB, NodeSelectorFor(fabric.GIB))
	if !errors.Is(err, ErrNetworks) || !strings.Contains(err.Error(), "GKENetworkParamSet rdma-0 of Network rdma-0 has deviceMode NetDevice, not RDMA, which the network on eth2 needs") || strings.Contains(err.Error(), "gvnic-1 of Network") {
		t.Errorf("RDMA networks of deviceMode NetDevice: %v", err)
	}
	_, err = RunDiscover(ctx, fakeClients(t, nodes, gkeNetworks(t, rdmaNames(8), false)), fabric.GIB, NodeSelectorFor(fabric.GIB))
	if !errors.Is(err, ErrNetworks) || !strings.Contains(err.Error(), "Network gvnic-1 is missing") || !strings.Contains(err.Error(), "Network rdma-0 is not Ready") {
		t.Errorf("missing and unready networks: %v", err)
	}
	// The default selector of gib does not pick an A3 Mega pool.
	_, err = RunDiscover(ctx, fakeClients(t, pool(t, 2, a3Mega(vpcs(8))), nil), fabric.GIB, NodeSelectorFor(fabric.GIB))
	if !errors.Is(err, ErrNoNodes) {
		t.Errorf("gib's default selector on an A3 Mega pool: %v", err)
	}
}
