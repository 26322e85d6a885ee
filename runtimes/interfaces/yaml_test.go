package interfaces

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// yamlDoc writes a block-style document of the canonical bindings, with
// replacements per interface (a whole "- ..." entry, "" to drop it). Entry i
// (eth<i+1>) is on line i+2.
func yamlDoc(replace map[string]string) string {
	var b strings.Builder
	b.WriteString("tcpxoInterfaces:\n")
	for i := 1; i <= 8; i++ {
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

func TestParseYAMLValid(t *testing.T) {
	tests := []struct{ name, doc string }{
		{"flow entries", yamlDoc(nil)},
		{"block entries in any order, with comments and quotes", `# GPU NIC networks of cluster a3-prod
tcpxoInterfaces:
  - interfaceName: eth8
    network: net-8   # last NIC first: order does not matter
  - network: "net-1"
    interfaceName: 'eth1'
  - {interfaceName: eth2, network: net-2}
  - {interfaceName: eth3, network: net-3}
  - {interfaceName: eth4, network: net-4}
  - {interfaceName: eth5, network: net-5}
  - {interfaceName: eth6, network: net-6}
  - {interfaceName: eth7, network: net-7}
`},
		{"flow list", "tcpxoInterfaces: [{interfaceName: eth1, network: net-1}, {interfaceName: eth2, network: net-2}, {interfaceName: eth3, network: net-3}, {interfaceName: eth4, network: net-4}, {interfaceName: eth5, network: net-5}, {interfaceName: eth6, network: net-6}, {interfaceName: eth7, network: net-7}, {interfaceName: eth8, network: net-8}]"},
		{"explicit document markers", "---\n" + yamlDoc(nil) + "...\n"},
	}
	want := mustParse(t, canonical)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseYAML([]byte(tt.doc))
			if err != nil {
				t.Fatalf("ParseYAML:\n%s\n%v", tt.doc, err)
			}
			if m != want {
				t.Fatalf("ParseYAML = %v, want %v", m, want)
			}
		})
	}
}

func TestParseYAMLRejects(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		wants []want
	}{
		{"empty document", "", []want{{"the document", 0, "holds no data; a GPU NIC to GKE Network mapping is required"}}},
		{"comments only", "# nothing yet\n", []want{{"the document", 0, "holds no data"}}},
		{"null document", "~\n", []want{{"the document", 1, "holds no data"}}},
		{"missing tcpxoInterfaces", "gke: {}\n", []want{
			{"gke", 1, "gke is not a known field: remove it, or correct its name; the fields of the document are tcpxoInterfaces"},
			{"tcpxoInterfaces", 1, "tcpxoInterfaces is missing; a GPU NIC to GKE Network mapping is required"},
		}},
		{"misspelt tcpxoInterfaces", "tcpxoInterface: []\n", []want{
			{"tcpxoInterface", 1, "did you mean tcpxoInterfaces?"},
			{"tcpxoInterfaces", 1, "is missing"},
		}},
		{"empty list", "# mapping\ntcpxoInterfaces: []\n", []want{{"tcpxoInterfaces", 2, "tcpxoInterfaces is empty"}}},
		{"null list", "tcpxoInterfaces:\n", []want{{"tcpxoInterfaces", 1, "tcpxoInterfaces is empty"}}},
		{"list is a mapping", "tcpxoInterfaces: {eth1: net-1}\n", []want{{"tcpxoInterfaces", 1, "must be a list, not a mapping"}}},
		{"document is a list", "- {interfaceName: eth1, network: net-1}\n", []want{{"the document", 1, "put the list under the key tcpxoInterfaces:"}}},
		{"document is a string", "eth1=net-1\n", []want{{"the document", 1, "is a string, not a mapping"}}},
		{"unknown top-level field", yamlDoc(nil) + "extra: 1\n", []want{{"extra", 10, "extra is not a known field"}}},
		{"unknown entry field", yamlDoc(map[string]string{"eth3": "  - {interfaceName: eth3, network: net-3, mtu: 8244}"}), []want{
			{"tcpxoInterfaces[2].mtu", 4, "tcpxoInterfaces[2].mtu is not a known field: remove it, or correct its name; the fields of tcpxoInterfaces[2] are interfaceName and network"},
		}},
		{"misspelt entry field", yamlDoc(map[string]string{"eth3": "  - {interface: eth3, network: net-3}"}), []want{
			{"eth3", 1, "eth3 is not mapped"},
			{"tcpxoInterfaces[2].interface", 4, "did you mean interfaceName?"},
			{"tcpxoInterfaces[2]", 4, "tcpxoInterfaces[2] has no interfaceName"},
		}},
		{"merge key", yamlDoc(map[string]string{"eth3": "  - {<<: {interfaceName: eth3}, network: net-3}"}), []want{
			{"eth3", 1, "eth3 is not mapped"},
			{`"tcpxoInterfaces[2].<<"`, 4, "merge keys are not supported"},
			{"tcpxoInterfaces[2]", 4, "has no interfaceName"},
		}},
		{"duplicate key in an entry", yamlDoc(map[string]string{"eth2": "  - interfaceName: eth2\n    network: net-2\n    network: net-9"}), []want{
			{"tcpxoInterfaces[1].network", 5, "tcpxoInterfaces[1].network is defined twice (first at line 4)"},
		}},
		{"duplicate top-level key", yamlDoc(nil) + "tcpxoInterfaces: []\n", []want{
			{"tcpxoInterfaces", 10, "tcpxoInterfaces is defined twice (first at line 1)"},
		}},
		{"network is a number", yamlDoc(map[string]string{"eth4": "  - {interfaceName: eth4, network: 1234}"}), []want{
			{"tcpxoInterfaces[3].network", 5, `must be a string, not a number: quote the value if it is meant as a name, e.g. network: "1234"`},
		}},
		{"network is a boolean", yamlDoc(map[string]string{"eth4": "  - {interfaceName: eth4, network: true}"}), []want{
			{"tcpxoInterfaces[3].network", 5, "must be a string, not true/false"},
		}},
		{"network is a list", yamlDoc(map[string]string{"eth4": "  - interfaceName: eth4\n    network: [a, b]"}), []want{
			{"tcpxoInterfaces[3].network", 6, "must be a string, not a list"},
		}},
		{"interfaceName is a number", yamlDoc(map[string]string{"eth4": "  - {interfaceName: 4, network: net-4}"}), []want{
			{"eth4", 1, "eth4 is not mapped"},
			{"tcpxoInterfaces[3].interfaceName", 5, "must be a string, not a number"},
		}},
		{"entry written as a pair", yamlDoc(map[string]string{"eth5": "  - eth5=net-5"}), []want{
			{"eth5", 1, "eth5 is not mapped"},
			{"tcpxoInterfaces[4]", 6, "must be a mapping, not a string: write it as - {interfaceName: eth5, network: net-5}"},
		}},
		{"null network", yamlDoc(map[string]string{"eth6": "  - {interfaceName: eth6, network: }"}), []want{
			{"eth6", 7, "eth6 has no network: write it as {interfaceName: eth6, network: <network>}"},
		}},
		{"missing network", yamlDoc(map[string]string{"eth6": "  - {interfaceName: eth6}"}), []want{
			{"tcpxoInterfaces[5]", 7, "tcpxoInterfaces[5] has no network: add network: <network>"},
		}},
		{"seven entries", yamlDoc(map[string]string{"eth8": ""}), []want{
			{"eth8", 1, "eth8 is not mapped: add {interfaceName: eth8, network: <network>} to tcpxoInterfaces"},
		}},
		{"duplicate network", yamlDoc(map[string]string{"eth7": "  - interfaceName: eth7\n    network: net-2"}), []want{
			{"eth7", 9, `eth7 is mapped to "net-2", which eth2 already uses`},
		}},
		{"eth9", yamlDoc(map[string]string{"eth8": "  - {interfaceName: eth9, network: net-8}"}), []want{
			{"eth8", 1, "eth8 is not mapped"},
			{"eth9", 9, "eth9 is not a GPU NIC of a3-megagpu-8g"},
		}},
		{"interface twice", yamlDoc(map[string]string{"eth2": "  - {interfaceName: eth1, network: net-2}"}), []want{
			{"eth2", 1, "eth2 is not mapped"},
			{"eth1", 3, "eth1 is mapped twice (tcpxoInterfaces[0] and tcpxoInterfaces[1]): keep exactly one {interfaceName: eth1, network: <network>}"},
		}},
		{"42-character name", yamlDoc(map[string]string{"eth1": "  - {interfaceName: eth1, network: " + strings.Repeat("x", 42) + "}"}), []want{
			{"eth1", 2, "42 characters long, over GKE's limit of 41"},
		}},
		{"upper-case name", yamlDoc(map[string]string{"eth1": "  - {interfaceName: eth1, network: Net-1}"}), []want{
			{"eth1", 2, "has upper-case letters"},
		}},
		{"untrimmed quoted name", yamlDoc(map[string]string{"eth1": `  - {interfaceName: eth1, network: " net-1"}`}), []want{
			{"eth1", 2, "contains whitespace"},
		}},
		// yaml.v3 itself reports this parser error at line 1.
		{"unclosed brace", "tcpxoInterfaces:\n  - {interfaceName: eth1, network: net-1\n  - {interfaceName: eth2, network: net-2}\n", []want{
			{"the document", 2, "is not valid YAML (did not find expected ',' or '}'): close the bracket or brace opened here"},
		}},
		{"bad indentation", yamlDoc(map[string]string{"eth4": "  - interfaceName: eth4\n      network: net-4"}), []want{
			{"the document", 6, "is not valid YAML (mapping values are not allowed in this context)"},
		}},
		{"syntax error after a second document marker", yamlDoc(nil) + "---\n[\n", []want{
			{"the document", 11, "is not valid YAML"},
		}},
		{"tab indentation", "tcpxoInterfaces:\n\t- {interfaceName: eth1, network: net-1}\n", []want{
			{"the document", 2, "indent with spaces"},
		}},
		{"second document", yamlDoc(nil) + "---\ntcpxoInterfaces: []\n", []want{
			{"a second YAML document", 10, "starts here: keep exactly one document"},
		}},
		{"too large", yamlDoc(nil) + "#" + strings.Repeat("x", maxYAMLSize) + "\n", []want{
			{"the document", 0, "over the 1048576-byte limit"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseYAML([]byte(tt.doc))
			if err == nil {
				t.Fatalf("ParseYAML accepted\n%s\nas %v", tt.doc, m)
			}
			if !m.IsZero() {
				t.Errorf("rejected input returned a non-zero Mapping %v", m)
			}
			checkProblems(t, err, true, tt.wants...)
		})
	}
}

func TestParseYAMLNoMapping(t *testing.T) {
	for _, doc := range []string{"", "# c\n", "tcpxoInterfaces: []\n", "tcpxoInterfaces:\n", "other: 1\n"} {
		if _, err := ParseYAML([]byte(doc)); !errors.Is(err, ErrNoMapping) {
			t.Errorf("ParseYAML(%q) = %v, want an error wrapping ErrNoMapping", doc, err)
		}
	}
	if _, err := ParseYAML([]byte(yamlDoc(map[string]string{"eth8": ""}))); err == nil || errors.Is(err, ErrNoMapping) {
		t.Errorf("incomplete mapping: got %v, want an error not wrapping ErrNoMapping", err)
	}
}

// Anchors and aliases are plain YAML; a shared value is read where it is used.
func TestParseYAMLAliases(t *testing.T) {
	doc := "x: &list\n" + strings.TrimPrefix(yamlDoc(nil), "tcpxoInterfaces:\n") + "tcpxoInterfaces: *list\n"
	_, err := ParseYAML([]byte(doc))
	// x is not a known field, so this is rejected, but for that reason only.
	checkProblems(t, err, true, want{"x", 1, "x is not a known field"})

	doc = strings.Replace(yamlDoc(nil), "network: net-1}", "network: &n net-1}", 1)
	doc = strings.Replace(doc, "network: net-2}", "network: *n}", 1)
	_, err = ParseYAML([]byte(doc))
	checkProblems(t, err, true, want{"eth2", 3, `eth2 is mapped to "net-1", which eth1 already uses`})
}

// The same document through ParseYAML and through a caller's own decoding
// and FromBindings gives the same Mapping.
func TestParseYAMLMatchesFromBindings(t *testing.T) {
	m, err := ParseYAML([]byte(yamlDoc(nil)))
	if err != nil {
		t.Fatal(err)
	}
	fb, err := FromBindings(m.Bindings())
	if err != nil || fb != m {
		t.Fatalf("FromBindings(Bindings()) = %v, %v; want %v", fb, err, m)
	}
}
