// Package interfaces holds the GPU-NIC → GKE Network mapping of a GPU node,
// from which a runtime renders the pod's multi-network annotations. A Layout
// describes one fabric's NIC wiring: TCPXO, the eight GPU NICs eth1..eth8 of
// an A3 Mega (a3-megagpu-8g) node, and RDMA, the eight RDMA NICs eth2..eth9
// of an A3 Ultra (a3-ultragpu-8g) or A4 (a4-highgpu-8g) node with the
// optional gVNIC network on eth1. The package-level Parse, ParseYAML,
// FromBindings and GPUInterfaces are TCPXO's.
//
// GKE multi-network attaches a pod's GPU-NIC interfaces to Device-type
// Network objects whose names are chosen per cluster, so the runtime cannot
// ship them: every installation names its own. There is deliberately no
// default. A guessed name renders a pod that schedules and then runs NCCL
// over eth0 at a small fraction of the expected bandwidth, a failure far
// harder to see than a rejected flag; so a missing mapping is an error, and a
// Mapping can only be built by the validating constructors Parse, ParseYAML
// and FromBindings (the package's, for TCPXO, or a Layout's).
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
// node, in the order NCCL_FASTRAK_IFNAME lists them: TCPXO's NICs.
var gpuNICs = [...]string{"eth1", "eth2", "eth3", "eth4", "eth5", "eth6", "eth7", "eth8"}

// gpuNICRange is how messages name the set of GPU NICs.
const gpuNICRange = "eth1..eth8"

// GPUInterfaces returns the pod interfaces of the eight GPU NICs, eth1..eth8,
// in order: TCPXO.GPUInterfaces. It returns a new slice on every call, so
// callers may modify it.
func GPUInterfaces() []string { return TCPXO.GPUInterfaces() }

// Binding attaches one pod interface to one GKE Network. The field names
// match the elements of the networking.gke.io/interfaces annotation, so the
// same spelling works in recipes (YAML or JSON) and in the pod.
type Binding struct {
	Interface string `yaml:"interfaceName" json:"interfaceName"`
	Network   string `yaml:"network" json:"network"`
}

// Mapping is a validated binding of a layout's NICs to GKE Networks, each
// NIC to its own: all of the layout's GPU NICs and those of its optional
// NICs the input named. The zero Mapping holds no bindings (see IsZero);
// every other value was accepted by Parse, ParseYAML or FromBindings (the
// package's or a Layout's), records its Layout and is immutable. Mappings
// are comparable with ==; mappings of different layouts are never equal.
type Mapping struct {
	layout Layout
	// networks[i] is the Network of the layout's nics[i]; "" for an optional
	// NIC the mapping does not bind, and past the layout's NICs.
	networks [maxNICs]string
}

// IsZero reports whether m holds no bindings: no mapping was given. Renderers
// must refuse a zero Mapping (see ErrNoMapping and Layout.NoMapping) rather
// than emit a pod without GPU NICs.
func (m Mapping) IsZero() bool { return m == Mapping{} }

// Layout returns the layout m was validated against; the zero Layout, which
// is not a layout, for the zero Mapping.
func (m Mapping) Layout() Layout { return m.layout }

// Bindings returns the bound interfaces in NIC order (eth1..eth8 for TCPXO;
// eth1 if bound, then eth2..eth9, for RDMA), as a new slice; nil for the
// zero Mapping.
func (m Mapping) Bindings() []Binding {
	if m.IsZero() {
		return nil
	}
	var bs []Binding
	for i, n := range m.layout.spec().nics {
		if net := m.networks[i]; net != "" {
			bs = append(bs, Binding{Interface: n.iface, Network: net})
		}
	}
	return bs
}

// Network returns the GKE Network bound to one of the layout's NICs
// (eth1..eth8 for TCPXO). It reports false for any other name, including
// DefaultInterface, which is not part of the mapping, for an optional NIC
// the mapping does not bind, and for every name on the zero Mapping.
func (m Mapping) Network(iface string) (string, bool) {
	if m.IsZero() {
		return "", false
	}
	i, ok := m.layout.spec().index(iface)
	if !ok || m.networks[i] == "" {
		return "", false
	}
	return m.networks[i], true
}

// String returns the canonical form "eth1=a,eth2=b,...,eth8=h", the bindings
// in NIC order, which the layout's Parse accepts and turns back into m; ""
// for the zero Mapping.
func (m Mapping) String() string {
	var b strings.Builder
	for i, bd := range m.Bindings() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(bd.Interface)
		b.WriteByte('=')
		b.WriteString(bd.Network)
	}
	return b.String()
}

// AnnotationJSON returns the value of the AnnotationInterfaces pod
// annotation: a compact JSON list binding DefaultInterface to DefaultNetwork
// first, then the bindings in NIC order (eth1..eth8 for TCPXO; eth1 if bound,
// then eth2..eth9, for RDMA), e.g.
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
