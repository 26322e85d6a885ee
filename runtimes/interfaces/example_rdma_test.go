package interfaces_test

import (
	"fmt"

	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// An A3 Ultra or A4 mapping, here with the network names of Google's
// documentation: the eight RDMA NICs eth2..eth9 and the optional gVNIC
// network on eth1, in any order.
func ExampleLayout_Parse() {
	m, err := interfaces.RDMA.Parse("eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7,eth1=gvnic-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Layout(), m.Layout().MachineTypes())
	fmt.Println(interfaces.AnnotationDefaultInterface+":", interfaces.DefaultInterface)
	fmt.Println(interfaces.AnnotationInterfaces+":", m.AnnotationJSON())
	fmt.Print(m.ValuesYAML())
	// Output:
	// RDMA [a3-ultragpu-8g a4-highgpu-8g]
	// networking.gke.io/default-interface: eth0
	// networking.gke.io/interfaces: [{"interfaceName":"eth0","network":"default"},{"interfaceName":"eth1","network":"gvnic-1"},{"interfaceName":"eth2","network":"rdma-0"},{"interfaceName":"eth3","network":"rdma-1"},{"interfaceName":"eth4","network":"rdma-2"},{"interfaceName":"eth5","network":"rdma-3"},{"interfaceName":"eth6","network":"rdma-4"},{"interfaceName":"eth7","network":"rdma-5"},{"interfaceName":"eth8","network":"rdma-6"},{"interfaceName":"eth9","network":"rdma-7"}]
	// rdmaInterfaces:
	//   - {interfaceName: eth1, network: "gvnic-1"}
	//   - {interfaceName: eth2, network: "rdma-0"}
	//   - {interfaceName: eth3, network: "rdma-1"}
	//   - {interfaceName: eth4, network: "rdma-2"}
	//   - {interfaceName: eth5, network: "rdma-3"}
	//   - {interfaceName: eth6, network: "rdma-4"}
	//   - {interfaceName: eth7, network: "rdma-5"}
	//   - {interfaceName: eth8, network: "rdma-6"}
	//   - {interfaceName: eth9, network: "rdma-7"}
}

// A3 Mega's numbering, eth1..eth8, given for A3 Ultra or A4 is refused with
// the shifted mapping to copy.
func ExampleLayout_Parse_megaNumbering() {
	_, err := interfaces.RDMA.Parse("eth1=rdma-0,eth2=rdma-1,eth3=rdma-2,eth4=rdma-3,eth5=rdma-4,eth6=rdma-5,eth7=rdma-6,eth8=rdma-7")
	fmt.Println(err)
	// Output:
	// eth9 is not mapped, and eth1 is: the mapping names eth1..eth8, the GPU NICs of A3 Mega (TCPXO); on A3 Ultra or A4 the RDMA NICs are eth2..eth9, eth1 is optional, for the gVNIC network, and eth0 is the default network: if eth1..eth8 carry the eight networks of the RDMA NICs, move each up one interface (eth1's network to eth2, and so on to eth8's to eth9): eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7; if eth1 is the gVNIC network, add eth9=<network> for the RDMA NIC eth9
}
