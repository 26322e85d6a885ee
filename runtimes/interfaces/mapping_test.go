package interfaces

import (
	"encoding/json"
	"slices"
	"testing"
)

func mustParse(t *testing.T, s string) Mapping {
	t.Helper()
	m, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return m
}

func TestGPUInterfacesIsACopy(t *testing.T) {
	want := []string{"eth1", "eth2", "eth3", "eth4", "eth5", "eth6", "eth7", "eth8"}
	got := GPUInterfaces()
	if !slices.Equal(got, want) {
		t.Fatalf("GPUInterfaces() = %v, want %v", got, want)
	}
	got[0] = "eth9"
	if again := GPUInterfaces(); again[0] != "eth1" {
		t.Fatalf("modifying the result changed the package table: %v", again)
	}
}

func TestMappingAccessors(t *testing.T) {
	m := mustParse(t, "eth8=h,eth7=g,eth6=f,eth5=e,eth4=d,eth3=c,eth2=b,eth1=a")

	want := []Binding{
		{"eth1", "a"}, {"eth2", "b"}, {"eth3", "c"}, {"eth4", "d"},
		{"eth5", "e"}, {"eth6", "f"}, {"eth7", "g"}, {"eth8", "h"},
	}
	bs := m.Bindings()
	if !slices.Equal(bs, want) {
		t.Fatalf("Bindings() = %v, want %v", bs, want)
	}
	bs[0].Network = "changed"
	if n, _ := m.Network("eth1"); n != "a" {
		t.Fatalf("modifying Bindings() changed the mapping: eth1 → %q", n)
	}

	for _, b := range want {
		if n, ok := m.Network(b.Interface); !ok || n != b.Network {
			t.Errorf("Network(%q) = %q, %v; want %q, true", b.Interface, n, ok, b.Network)
		}
	}
	for _, iface := range []string{DefaultInterface, "eth9", "ETH1", "", " eth1"} {
		if n, ok := m.Network(iface); ok {
			t.Errorf("Network(%q) = %q, true; want false: only eth1..eth8 are mapped", iface, n)
		}
	}
	if m.IsZero() {
		t.Error("IsZero() = true for a parsed mapping")
	}
}

func TestZeroMapping(t *testing.T) {
	var m Mapping
	if !m.IsZero() {
		t.Error("IsZero() = false for the zero Mapping")
	}
	if bs := m.Bindings(); bs != nil {
		t.Errorf("Bindings() = %v, want nil", bs)
	}
	if n, ok := m.Network("eth1"); ok {
		t.Errorf("Network(eth1) = %q, true on the zero Mapping", n)
	}
	if s := m.String(); s != "" {
		t.Errorf("String() = %q, want empty", s)
	}
	// An eth0-only annotation would render a pod that runs NCCL over TCP;
	// the zero Mapping must give nothing a renderer could use by mistake.
	if s := m.AnnotationJSON(); s != "" {
		t.Errorf("AnnotationJSON() = %q, want empty", s)
	}
}

func TestAnnotationJSONGolden(t *testing.T) {
	m := mustParse(t, "eth2=vpc-b,eth1=vpc-a,eth3=vpc-c,eth4=vpc-d,eth5=vpc-e,eth6=vpc-f,eth7=vpc-g,eth8=vpc-h")
	const golden = `[{"interfaceName":"eth0","network":"default"},` +
		`{"interfaceName":"eth1","network":"vpc-a"},{"interfaceName":"eth2","network":"vpc-b"},` +
		`{"interfaceName":"eth3","network":"vpc-c"},{"interfaceName":"eth4","network":"vpc-d"},` +
		`{"interfaceName":"eth5","network":"vpc-e"},{"interfaceName":"eth6","network":"vpc-f"},` +
		`{"interfaceName":"eth7","network":"vpc-g"},{"interfaceName":"eth8","network":"vpc-h"}]`
	if got := m.AnnotationJSON(); got != golden {
		t.Fatalf("AnnotationJSON() =\n%s\nwant\n%s", got, golden)
	}
	var decoded []Binding
	if err := json.Unmarshal([]byte(m.AnnotationJSON()), &decoded); err != nil {
		t.Fatalf("annotation is not JSON: %v", err)
	}
	if decoded[0] != (Binding{DefaultInterface, DefaultNetwork}) || !slices.Equal(decoded[1:], m.Bindings()) {
		t.Fatalf("annotation decodes to %v", decoded)
	}
}

func TestAnnotationConstants(t *testing.T) {
	// These strings are GKE's API; a typo renders a pod GKE silently ignores.
	for got, want := range map[string]string{
		AnnotationDefaultInterface: "networking.gke.io/default-interface",
		AnnotationInterfaces:       "networking.gke.io/interfaces",
		DefaultInterface:           "eth0",
		DefaultNetwork:             "default",
	} {
		if got != want {
			t.Errorf("constant = %q, want %q", got, want)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	for _, in := range []string{
		canonical,
		"eth8=z9,eth1=a,eth7=b-c,eth2=d0,eth6=e--f,eth3=g,eth5=h,eth4=i",
		" eth1 = x1 , eth2= x2,eth3 =x3,\teth4=x4 ,eth5=x5,eth6=x6,eth7=x7,eth8=x8\n",
	} {
		m := mustParse(t, in)
		s := m.String()
		back := mustParse(t, s)
		if back != m {
			t.Errorf("Parse(String()) of %q: got %v, want %v", in, back, m)
		}
		if back.String() != s {
			t.Errorf("String() is not stable: %q then %q", s, back.String())
		}
	}
	if got := mustParse(t, "eth2=b,eth1=a,eth3=c,eth4=d,eth5=e,eth6=f,eth7=g,eth8=h").String(); got != "eth1=a,eth2=b,eth3=c,eth4=d,eth5=e,eth6=f,eth7=g,eth8=h" {
		t.Errorf("String() = %q, not in eth1..eth8 order", got)
	}
}

func TestFromBindings(t *testing.T) {
	m := mustParse(t, canonical)
	bs := m.Bindings()
	slices.Reverse(bs)
	got, err := FromBindings(bs)
	if err != nil {
		t.Fatalf("FromBindings(reversed bindings): %v", err)
	}
	if got != m {
		t.Fatalf("FromBindings(reversed) = %v, want %v", got, m)
	}
}

func TestFromBindingsRejects(t *testing.T) {
	valid := mustParse(t, canonical).Bindings()
	with := func(i int, b Binding) []Binding {
		bs := slices.Clone(valid)
		bs[i] = b
		return bs
	}
	tests := []struct {
		name  string
		in    []Binding
		wants []want
	}{
		{"nil", nil, []want{{entry: "tcpxoInterfaces", fragment: "mapping is required"}}},
		{"empty", []Binding{}, []want{{entry: "tcpxoInterfaces", fragment: "list eight bindings"}}},
		{"no interface name", with(2, Binding{"", "net-3"}), []want{
			{entry: "tcpxoInterfaces[2]", fragment: "has no interface name: write it as {interfaceName: eth<1-8>, network: net-3}"},
			{entry: "eth3", fragment: "is not mapped: add {interfaceName: eth3, network: <network>} to tcpxoInterfaces"},
		}},
		// Decoded values are taken as given: whitespace is part of the name.
		{"untrimmed network", with(0, Binding{"eth1", " net-1"}), []want{
			{entry: "eth1", fragment: `is mapped to " net-1", which contains whitespace`},
		}},
		{"untrimmed interface", with(0, Binding{"eth1 ", "net-1"}), []want{
			{entry: `"eth1 "`, fragment: "is not a GPU NIC of a3-megagpu-8g"},
			{entry: "eth1", fragment: "is not mapped"},
		}},
		{"duplicate network", with(7, Binding{"eth8", "net-1"}), []want{
			{entry: "eth8", fragment: `is mapped to "net-1", which eth1 already uses`},
		}},
		{"twice", append(slices.Clone(valid), Binding{"eth4", "net-9"}), []want{
			{entry: "eth4", fragment: "is mapped twice (tcpxoInterfaces[3] and tcpxoInterfaces[8])"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := FromBindings(tt.in)
			if err == nil {
				t.Fatalf("FromBindings accepted %v as %v", tt.in, m)
			}
			if !m.IsZero() {
				t.Errorf("rejected input returned a non-zero Mapping %v", m)
			}
			checkProblems(t, err, false, tt.wants...)
		})
	}
}
