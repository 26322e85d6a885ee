// Package interfaces holds the GPU-NIC → GKE Network mapping of an A3 Mega
// (a3-megagpu-8g) node, from which the TCPXO runtime renders the pod's
// multi-network annotations.
//
// GKE multi-network attaches a pod's interfaces eth1..eth8 (one per GPU NIC)
// to Device-type Network objects whose names are chosen per cluster, so the
// runtime cannot ship them: every installation names its own. There is
// deliberately no default. A guessed name renders a pod that schedules and
// then runs NCCL over eth0 at a small fraction of the expected bandwidth, a
// failure far harder to see than a rejected flag; so a missing mapping is an
// error, and a Mapping can only be built by the validating constructors Parse,
// ParseYAML and FromBindings.
//
// The mapping is a set of explicit interface=network pairs. Position never
// assigns an interface: a list reordered by a YAML tool or a shell script must
// not silently move a NIC onto another VPC.
package interfaces

import (
	"encoding/json"
	"strings"
)

const (
	// DefaultInterface is the pod interface on the cluster's default network,
	// the value of the AnnotationDefaultInterface annotation. NCCL's bootstrap
	// and control traffic use it (NCCL_SOCKET_IFNAME=eth0).
	DefaultInterface = "eth0"
	// DefaultNetwork is the GKE Network that DefaultInterface is bound to.
	DefaultNetwork = "default"

	// AnnotationDefaultInterface selects the pod's default-route interface.
	AnnotationDefaultInterface = "networking.gke.io/default-interface"
	// AnnotationInterfaces binds pod interfaces to GKE Networks; its value is
	// Mapping.AnnotationJSON.
	AnnotationInterfaces = "networking.gke.io/interfaces"

	// MaxNetworkNameLength is GKE's limit on a Network name used for a pod
	// interface: the name becomes part of a Unix socket path, whose length is
	// bounded, so GKE rejects longer names although Kubernetes allows them.
	MaxNetworkNameLength = 41

	machineType = "a3-megagpu-8g"
)

// gpuNICs are the pod interfaces of the eight GPU NICs of an a3-megagpu-8g
// node, in the order NCCL_FASTRAK_IFNAME lists them. The index into this
// table is the index into Mapping.networks.
var gpuNICs = [...]string{"eth1", "eth2", "eth3", "eth4", "eth5", "eth6", "eth7", "eth8"}

const numGPUNICs = len(gpuNICs)

// gpuNICRange is how messages name the set of GPU NICs.
const gpuNICRange = "eth1..eth8"

// GPUInterfaces returns the pod interfaces of the eight GPU NICs, eth1..eth8,
// in order. It returns a new slice on every call, so callers may modify it.
func GPUInterfaces() []string {
	s := gpuNICs
	return s[:]
}

// gpuIndex returns the position of a GPU NIC in gpuNICs.
func gpuIndex(iface string) (int, bool) {
	for i, n := range gpuNICs {
		if n == iface {
			return i, true
		}
	}
	return 0, false
}

// Binding attaches one pod interface to one GKE Network. The field names
// match the elements of the networking.gke.io/interfaces annotation, so the
// same spelling works in recipes (YAML or JSON) and in the pod.
type Binding struct {
	Interface string `yaml:"interfaceName" json:"interfaceName"`
	Network   string `yaml:"network" json:"network"`
}

// Mapping is a validated binding of each of eth1..eth8 to its own GKE
// Network. The zero Mapping holds no bindings (see IsZero); every other value
// was accepted by Parse, ParseYAML or FromBindings and is immutable. Mappings
// are comparable with ==.
type Mapping struct {
	// networks[i] is the Network of gpuNICs[i]; all set or all empty.
	networks [numGPUNICs]string
}

// IsZero reports whether m holds no bindings: no mapping was given. Renderers
// must refuse a zero Mapping (see ErrNoMapping) rather than emit a pod
// without GPU NICs.
func (m Mapping) IsZero() bool { return m == Mapping{} }

// Bindings returns the bindings in eth1..eth8 order, as a new slice; nil for
// the zero Mapping.
func (m Mapping) Bindings() []Binding {
	if m.IsZero() {
		return nil
	}
	bs := make([]Binding, numGPUNICs)
	for i, n := range m.networks {
		bs[i] = Binding{Interface: gpuNICs[i], Network: n}
	}
	return bs
}

// Network returns the GKE Network bound to a GPU NIC (eth1..eth8). It reports
// false for any other name, including DefaultInterface, which is not part of
// the mapping, and for every name on the zero Mapping.
func (m Mapping) Network(iface string) (string, bool) {
	i, ok := gpuIndex(iface)
	if !ok || m.IsZero() {
		return "", false
	}
	return m.networks[i], true
}

// String returns the canonical form "eth1=a,eth2=b,...,eth8=h", which Parse
// accepts and turns back into m; "" for the zero Mapping.
func (m Mapping) String() string {
	if m.IsZero() {
		return ""
	}
	var b strings.Builder
	for i, n := range m.networks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(gpuNICs[i])
		b.WriteByte('=')
		b.WriteString(n)
	}
	return b.String()
}

// AnnotationJSON returns the value of the AnnotationInterfaces pod
// annotation: a compact JSON list binding DefaultInterface to DefaultNetwork
// first, then eth1..eth8 in order, e.g.
//
//	[{"interfaceName":"eth0","network":"default"},{"interfaceName":"eth1","network":"net-1"},...]
//
// The output is byte-for-byte deterministic, so rendered manifests diff
// cleanly. It returns "" for the zero Mapping: there is no valid annotation
// without the GPU NICs, and an eth0-only value would render a pod that starts
// and then silently runs NCCL over TCP. Callers check IsZero first.
func (m Mapping) AnnotationJSON() string {
	if m.IsZero() {
		return ""
	}
	bs := append([]Binding{{Interface: DefaultInterface, Network: DefaultNetwork}}, m.Bindings()...)
	out, err := json.Marshal(bs)
	if err != nil {
		// Unreachable: a slice of structs of strings always marshals.
		return ""
	}
	return string(out)
}
