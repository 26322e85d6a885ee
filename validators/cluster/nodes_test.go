package cluster

import (
	"fmt"
	"testing"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The PCI slots GKE reported for the eight GPU NICs and eth0 on live
// a3-megagpu-8g nodes (round-3 facts, "Node annotations GKE maintains";
// observed, not a documented contract): tests only, never a rule.
var gpuSlots = []string{"0000:06:00.0", "0000:07:00.0", "0000:0d:00.0", "0000:0e:00.0", "0000:86:00.0", "0000:87:00.0", "0000:8d:00.0", "0000:8e:00.0"}

// hostNIC is one NIC of a simulated node: its birth name, the network on
// it ("" for none), its IP and slot.
type hostNIC struct{ name, network, ip, pci string }

// a3Mega is a healthy node: eth0 on the default network, ethN carrying
// networks[N-1].
func a3Mega(networks []string) []hostNIC {
	nics := []hostNIC{{name: "eth0", ip: "10.0.0.2", pci: "0000:00:05.0"}}
	for i, n := range networks {
		nics = append(nics, hostNIC{name: fmt.Sprintf("eth%d", i+1), network: n, ip: fmt.Sprintf("192.168.%d.2", i+1), pci: gpuSlots[i]})
	}
	return nics
}

func vpcs(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("vpc%d", i))
	}
	return out
}

// gkeNode is a node as GKE publishes one: the networks as extended
// resources (networking.gke.io.networks/<network> and <network>.IP, the
// default network too), north-interfaces and nic-info written with the
// gke-networking-api's own marshalers.
func gkeNode(t *testing.T, name string, nics []hostNIC) corev1.Node {
	t.Helper()
	res := corev1.ResourceList{
		corev1.ResourceName(networkv1.NetworkResourceKeyPrefix + networkv1.DefaultPodNetworkName):         resource.MustParse("1"),
		corev1.ResourceName(networkv1.NetworkResourceKeyPrefix + networkv1.DefaultPodNetworkName + ".IP"): resource.MustParse("1"),
		"nvidia.com/gpu": resource.MustParse("8"),
	}
	var north networkv1.NorthInterfacesAnnotation
	var info networkv1.NICInfoAnnotation
	for _, n := range nics {
		info = append(info, networkv1.NICInfoRef{BirthName: n.name, BirthIP: n.ip, PCIAddress: n.pci})
		if n.network == "" {
			continue
		}
		north = append(north, networkv1.NorthInterface{Network: n.network, IpAddress: n.ip})
		res[corev1.ResourceName(networkv1.NetworkResourceKeyPrefix+n.network)] = resource.MustParse("1")
		res[corev1.ResourceName(networkv1.NetworkResourceKeyPrefix+n.network+".IP")] = resource.MustParse("1")
	}
	northJSON, err := networkv1.MarshalNorthInterfacesAnnotation(north)
	if err != nil {
		t.Fatal(err)
	}
	infoJSON, err := networkv1.MarshalNICInfoAnnotation(info)
	if err != nil {
		t.Fatal(err)
	}
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			networkv1.NorthInterfacesAnnotationKey: northJSON,
			networkv1.NICInfoAnnotationKey:         infoJSON,
		}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
}

func pool(t *testing.T, n int, nics []hostNIC) []corev1.Node {
	t.Helper()
	var out []corev1.Node
	for i := range n {
		out = append(out, gkeNode(t, fmt.Sprintf("gke-a3-pool-%d", i), nics))
	}
	return out
}
