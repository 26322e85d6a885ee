package interfaces_test

import (
	"fmt"

	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

func ExampleParse() {
	m, err := interfaces.Parse("eth2=gpu-b,eth1=gpu-a,eth3=gpu-c,eth4=gpu-d,eth5=gpu-e,eth6=gpu-f,eth7=gpu-g,eth8=gpu-h")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(interfaces.AnnotationDefaultInterface+":", interfaces.DefaultInterface)
	fmt.Println(interfaces.AnnotationInterfaces+":", m.AnnotationJSON())
	// Output:
	// networking.gke.io/default-interface: eth0
	// networking.gke.io/interfaces: [{"interfaceName":"eth0","network":"default"},{"interfaceName":"eth1","network":"gpu-a"},{"interfaceName":"eth2","network":"gpu-b"},{"interfaceName":"eth3","network":"gpu-c"},{"interfaceName":"eth4","network":"gpu-d"},{"interfaceName":"eth5","network":"gpu-e"},{"interfaceName":"eth6","network":"gpu-f"},{"interfaceName":"eth7","network":"gpu-g"},{"interfaceName":"eth8","network":"gpu-h"}]
}

func ExampleParse_rejected() {
	_, err := interfaces.Parse("eth1=net-1,eth2=net-2,eth3=net-3,eth4=net-4,eth5=net-5,eth6=net-6,eth7=net-7")
	fmt.Println(err)
	// Output:
	// eth8 is not mapped: add eth8=<network> to the mapping; use the name of this cluster's Device-type GKE Network for that NIC's VPC, exactly as `kubectl get networks` prints it. TCPXO needs all eight GPU NICs; a GPU node pool with an additional gVNIC network has only seven
}
