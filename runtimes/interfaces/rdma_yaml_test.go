package interfaces

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// rdmaYAMLDoc writes a block-style RDMA document of the canonical bindings,
// with replacements per interface (a whole "- ..." entry, "" to drop it; one
// for eth1 comes first). Without eth1, entry eth<i> is on line i.
func rdmaYAMLDoc(replace map[string]string) string {
	var b strings.Builder
	b.WriteString("rdmaInterfaces:\n")
	if e := replace["eth1"]; e != "" {
		b.WriteString(e + "\n")
	}
	for i := 2; i <= 9; i++ {
		iface := fmt.Sprintf("eth%d", i)
		e := fmt.Sprintf("  - {interfaceName: %s, network: net-%d}", iface, i)
		if r, ok := replace[iface]; ok {
			e = r
		}
		if e != "" {
			b.WriteString(e + "\n")
		}
	}
	return b.String()
}

func TestRDMAParseYAMLValid(t *testing.T) {
	without := mustParseRDMA(t, rdmaCanonical)
	with := mustParseRDMA(t, "eth1=gvnic-1,"+rdmaCanonical)
	tests := []struct {
		name string
		doc  string
		want Mapping
	}{
		{"flow entries", rdmaYAMLDoc(nil), without},
		{"with eth1", rdmaYAMLDoc(map[string]string{"eth1": "  - {interfaceName: eth1, network: gvnic-1}"}), with},
		{"block entries in any order, eth1 last", `# RDMA networks of cluster a3u-prod
rdmaInterfaces:
  - interfaceName: eth9
    network: net-9   # order does not matter
  - network: "net-2"
    interfaceName: 'eth2'
  - {interfaceName: eth3, network: net-3}
  - {interfaceName: eth4, network: net-4}
  - {interfaceName: eth5, network: net-5}
  - {interfaceName: eth6, network: net-6}
  - {interfaceName: eth7, network: net-7}
  - {interfaceName: eth8, network: net-8}
  - {interfaceName: eth1, network: gvnic-1}
`, with},
		{"explicit document markers", "---\n" + rdmaYAMLDoc(nil) + "...\n", without},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := RDMA.ParseYAML([]byte(tt.doc))
			if err != nil {
				t.Fatalf("RDMA.ParseYAML:\n%s\n%v", tt.doc, err)
			}
			if m != tt.want {
				t.Fatalf("RDMA.ParseYAML = %v, want %v", m, tt.want)
			}
		})
	}
}

func TestRDMAParseYAMLRejects(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		wants []want
	}{
		{"empty document", "", []want{{"the document", 0, "holds no data; an RDMA NIC to GKE Network mapping is required"}}},
		{"missing rdmaInterfaces", "gke: {}\n", []want{
			{"gke", 1, "gke is not a known field: remove it, or correct its name; the fields of the document are rdmaInterfaces"},
			{"rdmaInterfaces", 1, "rdmaInterfaces is missing; an RDMA NIC to GKE Network mapping is required"},
		}},
		{"misspelt rdmaInterfaces", "rdmaInterface: []\n", []want{
			{"rdmaInterface", 1, "did you mean rdmaInterfaces?"},
			{"rdmaInterfaces", 1, "is missing"},
		}},
		{"a TCPXO document", yamlDoc(nil), []want{
			{"tcpxoInterfaces", 1, "tcpxoInterfaces is not read here: this is a TCPXO mapping; the gIB fabric reads rdmaInterfaces: " +
				"for A3 Ultra or A4, write rdmaInterfaces: followed by eight entries, {interfaceName: eth2, network: <network>} through {interfaceName: eth9, network: <network>} " +
				"(and {interfaceName: eth1, network: <network>} for the gVNIC network, if this cluster has one); for A3 Mega, give this file with --fabric tcpxo"},
		}},
		{"both keys", rdmaYAMLDoc(nil) + "tcpxoInterfaces: []\n", []want{
			{"tcpxoInterfaces", 10, "this is a TCPXO mapping; the gIB fabric reads rdmaInterfaces"},
		}},
		{"empty list", "# mapping\nrdmaInterfaces: []\n", []want{{"rdmaInterfaces", 2, "rdmaInterfaces is empty; an RDMA NIC to GKE Network mapping is required"}}},
		{"list is a mapping", "rdmaInterfaces: {eth2: net-2}\n", []want{{"rdmaInterfaces", 1, "must be a list, not a mapping: write one entry per RDMA NIC, each on its own line starting with '- ', e.g. - {interfaceName: eth2, network: <network>}"}}},
		{"document is a list", "- {interfaceName: eth2, network: net-2}\n", []want{{"the document", 1, "put the list under the key rdmaInterfaces:"}}},
		{"unknown entry field", rdmaYAMLDoc(map[string]string{"eth3": "  - {interfaceName: eth3, network: net-3, mtu: 8896}"}), []want{
			{"rdmaInterfaces[1].mtu", 3, "rdmaInterfaces[1].mtu is not a known field: remove it, or correct its name; the fields of rdmaInterfaces[1] are interfaceName and network"},
		}},
		{"missing interfaceName", rdmaYAMLDoc(map[string]string{"eth3": "  - {network: net-3}"}), []want{
			{"eth3", 1, "eth3 is not mapped"},
			{"rdmaInterfaces[1]", 3, "has no interfaceName: add interfaceName: eth<2-9>, the RDMA NIC this entry binds, or eth1 for the gVNIC network"},
		}},
		{"entry written as a pair", rdmaYAMLDoc(map[string]string{"eth5": "  - eth5=net-5"}), []want{
			{"eth5", 1, "eth5 is not mapped"},
			{"rdmaInterfaces[3]", 5, "must be a mapping, not a string: write it as - {interfaceName: eth5, network: net-5}"},
		}},
		{"missing network", rdmaYAMLDoc(map[string]string{"eth6": "  - {interfaceName: eth6}"}), []want{
			{"rdmaInterfaces[4]", 6, "has no network: add network: <network>; use the name of this cluster's Device-type GKE Network for that NIC's subnet"},
		}},
		{"network is a number", rdmaYAMLDoc(map[string]string{"eth4": "  - {interfaceName: eth4, network: 1234}"}), []want{
			{"rdmaInterfaces[2].network", 4, `must be a string, not a number: quote the value if it is meant as a name, e.g. network: "1234"`},
		}},
		{"seven networks", rdmaYAMLDoc(map[string]string{"eth9": ""}), []want{
			{"eth9", 1, "eth9 is not mapped: add {interfaceName: eth9, network: <network>} to rdmaInterfaces"},
		}},
		{"eth1..eth8", strings.Replace(yamlDoc(nil), "tcpxoInterfaces", "rdmaInterfaces", 1), []want{
			{"eth9", 1, "eth9 is not mapped, and eth1 is: the mapping names eth1..eth8, the GPU NICs of A3 Mega (TCPXO); on A3 Ultra or A4 the RDMA NICs are eth2..eth9"},
		}},
		{"duplicate NIC", rdmaYAMLDoc(map[string]string{"eth3": "  - {interfaceName: eth2, network: net-3}"}), []want{
			{"eth3", 1, "eth3 is not mapped"},
			{"eth2", 3, "eth2 is mapped twice (rdmaInterfaces[0] and rdmaInterfaces[1]): keep exactly one {interfaceName: eth2, network: <network>}"},
		}},
		{"network used twice", rdmaYAMLDoc(map[string]string{"eth8": "  - interfaceName: eth8\n    network: net-2"}), []want{
			{"eth8", 9, `eth8 is mapped to "net-2", which eth2 already uses`},
		}},
		{"eth1 on an RDMA network", rdmaYAMLDoc(map[string]string{"eth1": "  - {interfaceName: eth1, network: net-2}"}), []want{
			{"eth1", 2, `eth1 is mapped to "net-2", which eth2 already uses; eth1 is for the gVNIC network`},
		}},
		{"eth10", rdmaYAMLDoc(map[string]string{"eth9": "  - {interfaceName: eth10, network: net-9}"}), []want{
			{"eth9", 1, "eth9 is not mapped"},
			{"eth10", 9, "eth10 is not an RDMA NIC of a3-ultragpu-8g or a4-highgpu-8g"},
		}},
		{"eth0", rdmaYAMLDoc(nil) + "  - {interfaceName: eth0, network: default}\n", []want{
			{"eth0", 10, "eth0 is the pod's default interface"},
		}},
		{"upper-case name", rdmaYAMLDoc(map[string]string{"eth2": "  - {interfaceName: eth2, network: Rdma-0}"}), []want{
			{"eth2", 2, "has upper-case letters"},
		}},
		{"syntax error", "rdmaInterfaces:\n  - {interfaceName: eth2, network: net-2\n", []want{
			{"the document", 2, "is not valid YAML"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := RDMA.ParseYAML([]byte(tt.doc))
			if err == nil {
				t.Fatalf("RDMA.ParseYAML accepted\n%s\nas %v", tt.doc, m)
			}
			if !m.IsZero() {
				t.Errorf("rejected input returned a non-zero Mapping %v", m)
			}
			checkProblems(t, err, true, tt.wants...)
		})
	}
}

// Each fabric's reader refuses the other's document, naming its own key and
// the flag that selects the other; that is a wrong file, not a missing
// mapping.
func TestParseYAMLOtherFabric(t *testing.T) {
	_, err := TCPXO.ParseYAML([]byte(rdmaYAMLDoc(nil)))
	checkProblems(t, err, true, want{"rdmaInterfaces", 1,
		"rdmaInterfaces is not read here: this is a gIB mapping; the TCPXO fabric reads tcpxoInterfaces: " +
			"for A3 Mega, write tcpxoInterfaces: followed by eight entries, {interfaceName: eth1, network: <network>} through {interfaceName: eth8, network: <network>}; " +
			"for A3 Ultra or A4, give this file with --fabric gib"})
	if errors.Is(err, ErrNoMapping) {
		t.Errorf("a TCPXO reader given a gIB document: %v wraps ErrNoMapping", err)
	}
	_, err = RDMA.ParseYAML([]byte(yamlDoc(nil)))
	if errors.Is(err, ErrNoMapping) {
		t.Errorf("a gIB reader given a TCPXO document: %v wraps ErrNoMapping", err)
	}
}
