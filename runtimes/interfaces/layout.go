package interfaces

import (
	"reflect"
	"strconv"
	"strings"
)

// Layout is one fabric's wiring of a node's NICs to pod interfaces: which
// interfaces a mapping binds and which of them it must bind, the machine
// types they belong to, and the key of its YAML form. The layouts are TCPXO
// and RDMA; every Mapping records the one it was validated against.
//
// Layout values other than TCPXO and RDMA, the zero Layout among them, are
// not layouts: String names them as invalid and the other methods panic,
// since a caller holding one has a bug no input can fix.
type Layout uint8

const (
	// TCPXO is GPUDirect-TCPXO on A3 Mega (a3-megagpu-8g): the eight GPU
	// NICs are eth1..eth8, in the order NCCL_FASTRAK_IFNAME lists them, and a
	// mapping binds all of them. Its YAML key is tcpxoInterfaces. The
	// package-level Parse, ParseYAML, FromBindings and GPUInterfaces are
	// TCPXO's.
	TCPXO Layout = iota + 1
	// RDMA is GPUDirect-RDMA with NCCL/gIB on A3 Ultra (a3-ultragpu-8g) and
	// A4 (a4-highgpu-8g): the eight RDMA NICs are eth2..eth9, in NIC order,
	// and a mapping binds all of them; eth1 is the node's second gVNIC, which
	// Google's documentation attaches to a NetDevice network (gvnic-1), and is
	// bound only when the mapping names it. Its YAML key is rdmaInterfaces.
	RDMA
)

// maxNICs is the most interfaces any layout maps: the size of
// Mapping.networks.
const maxNICs = 9

// layoutSpec is everything that differs between the fabrics' NIC wiring.
// The validation machinery reads it and nothing else, so a message that
// differs between fabrics is written from these fields.
type layoutSpec struct {
	// name is Layout.String's value.
	name string
	// fabric names the fabric in messages ("TCPXO", "gIB"), hardware the
	// machines ("A3 Mega"), fabricFlag the flag that selects it.
	fabric, hardware, fabricFlag string
	machineTypes                 []string
	// nics are the interfaces a mapping may bind, in NIC order (the order of
	// Bindings and of the pod annotation); the index into this table is the
	// index into Mapping.networks.
	nics []nic

	// nicWord names one required NIC ("GPU NIC"); aNIC is it with its
	// article; nicRange names the required NICs as a range, and placeholder
	// stands for one of them in a suggested fix.
	nicWord, aNIC, nicRange, placeholder string
	// count is the number of required NICs, in words.
	count string
	// segment is what each required NIC's Network stands for ("VPC").
	segment string
	// oneMissing is added to the fix when exactly one required NIC is
	// unmapped.
	oneMissing string
	// megaNumbering is set for layouts whose required NICs are A3 Mega's
	// numbering shifted by one, so that the unshifted numbering is recognised
	// and explained.
	megaNumbering bool

	yamlKey string
	// docType is the document's shape, for yamlstrict.Walk.
	docType reflect.Type
	// noMapping is what Layout.NoMapping returns.
	noMapping error
}

// nic is one interface a mapping may bind.
type nic struct {
	iface string
	// role is empty for a required NIC; an optional one's says what it
	// carries ("the gVNIC network"), and example the name Google's
	// documentation gives that network, for messages.
	role, example string
}

func (n nic) optional() bool { return n.role != "" }

// rdmaYAMLDocument is RDMA's document shape (TCPXO's is yamlDocument).
type rdmaYAMLDocument struct {
	RDMAInterfaces []yamlBinding `yaml:"rdmaInterfaces"`
}

var layouts = [...]*layoutSpec{
	TCPXO: {
		name:         "TCPXO",
		fabric:       "TCPXO",
		hardware:     "A3 Mega",
		fabricFlag:   "--fabric tcpxo",
		machineTypes: []string{machineType},
		nics:         requiredNICs(gpuNICs[:]),
		nicWord:      "GPU NIC",
		aNIC:         "a GPU NIC",
		nicRange:     gpuNICRange,
		placeholder:  "eth<1-8>",
		count:        "eight",
		segment:      "VPC",
		// Seven NICs is what a node shows when an additional gVNIC network
		// on the GPU node pool has taken a PCI slot; say so, because then
		// there is no eighth Network to name and the pool is what to fix.
		oneMissing: ". TCPXO needs all eight GPU NICs; a GPU node pool with an additional gVNIC network has only seven",
		yamlKey:    yamlKey,
		docType:    reflect.TypeFor[yamlDocument](),
		noMapping:  ErrNoMapping,
	},
	RDMA: {
		name:         "RDMA",
		fabric:       "gIB",
		hardware:     "A3 Ultra or A4",
		fabricFlag:   "--fabric gib",
		machineTypes: []string{"a3-ultragpu-8g", "a4-highgpu-8g"},
		nics: append([]nic{{iface: "eth1", role: "the gVNIC network", example: "gvnic-1"}},
			requiredNICs([]string{"eth2", "eth3", "eth4", "eth5", "eth6", "eth7", "eth8", "eth9"})...),
		nicWord:     "RDMA NIC",
		aNIC:        "an RDMA NIC",
		nicRange:    "eth2..eth9",
		placeholder: "eth<2-9>",
		count:       "eight",
		// Google's RDMA networks are subnets of one VPC (one per NIC).
		segment:       "subnet",
		oneMissing:    ". gIB needs all eight RDMA NICs, each on its own RDMA network (Google's documentation names them rdma-0..rdma-7)",
		megaNumbering: true,
		yamlKey:       "rdmaInterfaces",
		docType:       reflect.TypeFor[rdmaYAMLDocument](),
		noMapping: &noMappingError{"no RDMA NIC to GKE Network mapping: an A3 Ultra or A4 gIB pod needs eth2..eth9 bound to this cluster's RDMA GKE Networks " +
			"(and eth1 to its gVNIC network, if it has one), and there is no default"},
	},
}

func requiredNICs(ifaces []string) []nic {
	out := make([]nic, len(ifaces))
	for i, iface := range ifaces {
		out[i] = nic{iface: iface}
	}
	return out
}

func (l Layout) spec() *layoutSpec {
	if int(l) < len(layouts) && layouts[l] != nil {
		return layouts[l]
	}
	panic("interfaces: use of " + l.String())
}

// String returns the layout's name, "TCPXO" or "RDMA".
func (l Layout) String() string {
	if int(l) < len(layouts) && layouts[l] != nil {
		return layouts[l].name
	}
	return "invalid Layout(" + strconv.Itoa(int(l)) + ")"
}

// GPUInterfaces returns the pod interfaces of the layout's eight GPU NICs,
// which every mapping binds, in NIC order: eth1..eth8 for TCPXO, the RDMA
// NICs eth2..eth9 for RDMA. It returns a new slice on every call.
func (l Layout) GPUInterfaces() []string {
	var out []string
	for _, n := range l.spec().nics {
		if !n.optional() {
			out = append(out, n.iface)
		}
	}
	return out
}

// OptionalInterfaces returns the pod interfaces a mapping may bind but need
// not, in NIC order: eth1 (the gVNIC network) for RDMA, none for TCPXO. It
// returns a new slice on every call.
func (l Layout) OptionalInterfaces() []string {
	var out []string
	for _, n := range l.spec().nics {
		if n.optional() {
			out = append(out, n.iface)
		}
	}
	return out
}

// MachineTypes returns the GCE machine types whose NICs the layout
// describes, as node.kubernetes.io/instance-type spells them. It returns a
// new slice on every call.
func (l Layout) MachineTypes() []string {
	return append([]string(nil), l.spec().machineTypes...)
}

// YAMLKey returns the key of the binding list in the layout's YAML form, in a
// standalone document and in a recipe alike: "tcpxoInterfaces" or
// "rdmaInterfaces".
func (l Layout) YAMLKey() string { return l.spec().yamlKey }

// NoMapping returns the error a renderer returns when it finds a zero
// Mapping where this layout's is needed: ErrNoMapping for TCPXO, and for
// RDMA an error in RDMA's words that matches ErrNoMapping under errors.Is.
func (l Layout) NoMapping() error { return l.spec().noMapping }

// index returns the position of an interface in the layout's nics.
func (s *layoutSpec) index(iface string) (int, bool) {
	for i, n := range s.nics {
		if n.iface == iface {
			return i, true
		}
	}
	return 0, false
}

// required returns the interfaces every mapping binds, in NIC order.
func (s *layoutSpec) required() []string {
	var out []string
	for _, n := range s.nics {
		if !n.optional() {
			out = append(out, n.iface)
		}
	}
	return out
}

// alsoOptional completes a sentence that lists the required NICs with the
// optional ones, each written by write: " (and eth1=<network> for the gVNIC
// network, if this cluster has one)"; "" when the layout has none.
func (s *layoutSpec) alsoOptional(write func(iface string) string) string {
	var parts []string
	for _, n := range s.nics {
		if n.optional() {
			parts = append(parts, write(n.iface)+" for "+n.role)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (and " + andList(parts) + ", if this cluster has one)"
}

// orOptional completes a sentence offering the required NICs with the
// optional ones: ", or eth1 for the gVNIC network"; "" when there are none.
func (s *layoutSpec) orOptional() string {
	var b strings.Builder
	for _, n := range s.nics {
		if n.optional() {
			b.WriteString(", or " + n.iface + " for " + n.role)
		}
	}
	return b.String()
}

// pairSyntax is the expected form of Parse's input, for messages:
// "eth1=<network>,eth2=<network>,...,eth8=<network>".
func (s *layoutSpec) pairSyntax() string {
	req := s.required()
	return req[0] + "=<network>," + req[1] + "=<network>,...," + req[len(req)-1] + "=<network>"
}

// listForm is the notation of the layout's YAML list and of FromBindings.
func (s *layoutSpec) listForm() form {
	return form{
		binding: func(i, n string) string { return "{interfaceName: " + i + ", network: " + n + "}" },
		where:   s.yamlKey,
	}
}

// listEntries says what the binding list holds: "eight entries,
// {interfaceName: eth1, ...} through {interfaceName: eth8, ...}", with the
// optional NICs after them.
func (s *layoutSpec) listEntries(noun string) string {
	f, req := s.listForm(), s.required()
	return s.count + " " + noun + ", " + f.binding(req[0], "<network>") + " through " + f.binding(req[len(req)-1], "<network>") +
		s.alsoOptional(func(iface string) string { return f.binding(iface, "<network>") })
}

// yamlShape is the expected document, for messages.
func (s *layoutSpec) yamlShape() string {
	return s.yamlKey + ": followed by " + s.listEntries("entries")
}

// findNetwork is the advice every network problem ends with: the names are
// per cluster, so the user has to look theirs up.
func (s *layoutSpec) findNetwork() string {
	return "use the name of this cluster's Device-type GKE Network for that NIC's " + s.segment + ", exactly as `kubectl get networks` prints it"
}

// noMappingError is a layout's own wording of ErrNoMapping.
type noMappingError struct{ msg string }

func (e *noMappingError) Error() string        { return e.msg }
func (e *noMappingError) Is(target error) bool { return target == ErrNoMapping }
