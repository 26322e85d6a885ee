package interfaces

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// rdmaCanonical is a valid RDMA mapping in canonical form, without the
// optional eth1; tests derive variants of it.
const rdmaCanonical = "eth2=net-2,eth3=net-3,eth4=net-4,eth5=net-5,eth6=net-6,eth7=net-7,eth8=net-8,eth9=net-9"

// rdmaPairs returns the eight canonical RDMA pairs with the given
// replacements (interface → whole pair, "" to drop the pair), joined by
// commas; a replacement for eth1 is put first.
func rdmaPairs(replace map[string]string) string {
	var out []string
	if p := replace["eth1"]; p != "" {
		out = append(out, p)
	}
	for i := 2; i <= 9; i++ {
		iface := fmt.Sprintf("eth%d", i)
		p := fmt.Sprintf("%s=net-%d", iface, i)
		if r, ok := replace[iface]; ok {
			p = r
		}
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ",")
}

func mustParseRDMA(t *testing.T, s string) Mapping {
	t.Helper()
	m, err := RDMA.Parse(s)
	if err != nil {
		t.Fatalf("RDMA.Parse(%q): %v", s, err)
	}
	return m
}

func TestRDMAParseValid(t *testing.T) {
	withEth1 := "eth1=gvnic-1," + rdmaCanonical
	tests := []struct {
		name, in, want string
	}{
		{"canonical", rdmaCanonical, rdmaCanonical},
		{"reversed", "eth9=net-9,eth8=net-8,eth7=net-7,eth6=net-6,eth5=net-5,eth4=net-4,eth3=net-3,eth2=net-2", rdmaCanonical},
		{"whitespace around pairs and '='", " eth2 = net-2 ,\teth3= net-3,eth4 =net-4,eth5=net-5,eth6=net-6,eth7=net-7,eth8=net-8,eth9=net-9\n", rdmaCanonical},
		{"with the gVNIC network on eth1", withEth1, withEth1},
		{"eth1 given last is still first", rdmaCanonical + ",eth1=gvnic-1", withEth1},
		{"Google's names", "eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7",
			"eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7"},
		{"41 characters is the limit", rdmaPairs(map[string]string{"eth5": "eth5=" + strings.Repeat("a", 41)}), strings.Replace(rdmaCanonical, "net-5", strings.Repeat("a", 41), 1)},
		{"network named like the default network is still a name", rdmaPairs(map[string]string{"eth3": "eth3=default"}), strings.Replace(rdmaCanonical, "net-3", "default", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustParseRDMA(t, tt.in)
			if got := m.String(); got != tt.want {
				t.Fatalf("RDMA.Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
			if m.Layout() != RDMA {
				t.Fatalf("Layout() = %v, want RDMA", m.Layout())
			}
		})
	}
}

// Assignment is by name for RDMA as for TCPXO: any order of the same pairs,
// eth1 anywhere among them, is the same Mapping.
func TestRDMAParseOrderIndependent(t *testing.T) {
	base := strings.Split("eth1=gvnic-1,eth2=alpha,eth3=bravo,eth4=charlie,eth5=delta,eth6=echo,eth7=foxtrot,eth8=golf,eth9=hotel", ",")
	want := mustParseRDMA(t, strings.Join(base, ","))
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		shuffled := slices.Clone(base)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		in := strings.Join(shuffled, ",")
		if got := mustParseRDMA(t, in); got != want || got.String() != want.String() {
			t.Fatalf("RDMA.Parse(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestRDMAParseRejects(t *testing.T) {
	name42 := strings.Repeat("a", 42)
	tests := []struct {
		name  string
		in    string
		wants []want
	}{
		{"empty input", "", []want{{"", 0, "an RDMA NIC to GKE Network mapping is required; there is no default"}}},
		{"blank input", " \t\n", []want{{"", 0, "pass eth2=<network>,eth3=<network>,...,eth9=<network>, one pair per RDMA NIC (and eth1=<network> for the gVNIC network, if this cluster has one)"}}},
		{"seven networks", rdmaPairs(map[string]string{"eth9": ""}), []want{
			{"eth9", 0, "eth9 is not mapped: add eth9=<network> to the mapping; use the name of this cluster's Device-type GKE Network for that NIC's subnet"},
		}},
		{"seven networks names all eight", rdmaPairs(map[string]string{"eth4": ""}), []want{
			{"eth4", 0, "gIB needs all eight RDMA NICs, each on its own RDMA network"},
		}},
		{"seven networks and the gVNIC network", rdmaPairs(map[string]string{"eth1": "eth1=gvnic-1", "eth5": ""}), []want{
			{"eth5", 0, "eth5 is not mapped"},
		}},
		{"eth1..eth8 in place of eth2..eth9", canonical, []want{
			{"eth9", 0, "eth9 is not mapped, and eth1 is: the mapping names eth1..eth8, the GPU NICs of A3 Mega (TCPXO); " +
				"on A3 Ultra or A4 the RDMA NICs are eth2..eth9, eth1 is optional, for the gVNIC network, and eth0 is the default network: " +
				"if eth1..eth8 carry the eight networks of the RDMA NICs, move each up one interface (eth1's network to eth2, and so on to eth8's to eth9): " +
				"eth2=net-1,eth3=net-2,eth4=net-3,eth5=net-4,eth6=net-5,eth7=net-6,eth8=net-7,eth9=net-8; " +
				"if eth1 is the gVNIC network, add eth9=<network> for the RDMA NIC eth9"},
		}},
		{"eth1..eth8 in any order", "eth8=h,eth3=c,eth1=a,eth2=b,eth4=d,eth5=e,eth6=f,eth7=g", []want{
			{"eth9", 0, "eth2=a,eth3=b,eth4=c,eth5=d,eth6=e,eth7=f,eth8=g,eth9=h"},
		}},
		{"eth1..eth8 with a bad name shifts a placeholder", pairs(map[string]string{"eth3": "eth3=Net-3"}), []want{
			{"eth3", 0, "has upper-case letters"},
			{"eth9", 0, "eth3=net-2,eth4=<network>,eth5=net-4"},
		}},
		{"the gVNIC network with seven RDMA networks reads the same way", rdmaPairs(map[string]string{"eth1": "eth1=gvnic-1", "eth9": ""}), []want{
			{"eth9", 0, "if eth1 is the gVNIC network, add eth9=<network> for the RDMA NIC eth9"},
		}},
		{"duplicate NIC", rdmaPairs(map[string]string{"eth5": "eth4=net-5"}), []want{
			{"eth4", 0, `eth4 is mapped twice (pair 3 "eth4=net-4" and pair 4 "eth4=net-5"): keep exactly one eth4=<network>`},
			{"eth5", 0, "eth5 is not mapped"},
		}},
		{"eth1 twice", rdmaPairs(map[string]string{"eth1": "eth1=gvnic-1,eth1=gvnic-2"}), []want{
			{"eth1", 0, "eth1 is mapped twice"},
		}},
		{"network used twice", rdmaPairs(map[string]string{"eth7": "eth7=net-3"}), []want{
			{"eth7", 0, `eth7 is mapped to "net-3", which eth3 already uses: each RDMA NIC is on its own subnet and needs its own Device-type GKE Network; map eth7 to the Network of its own subnet`},
		}},
		{"eth1 on an RDMA NIC's network", rdmaPairs(map[string]string{"eth1": "eth1=net-5"}), []want{
			{"eth1", 0, `eth1 is mapped to "net-5", which eth5 already uses; eth1 is for the gVNIC network, a network of its own: map eth1 to the gVNIC network (gvnic-1 in Google's documentation), or leave eth1 out if this cluster has none`},
		}},
		{"eth10", rdmaPairs(map[string]string{"eth9": "eth10=net-9"}), []want{
			{"eth10", 0, "eth10 is not an RDMA NIC of a3-ultragpu-8g or a4-highgpu-8g: use eth2..eth9, or eth1 for the gVNIC network"},
			{"eth9", 0, "eth9 is not mapped"},
		}},
		{"eth10 as a ninth RDMA pair", rdmaCanonical + ",eth10=net-10", []want{
			{"eth10", 0, "eth10 is not an RDMA NIC"},
		}},
		{"eth0 is the default network", "eth0=default," + rdmaCanonical, []want{
			{"eth0", 0, "eth0 is the pod's default interface, which GKE attaches to the cluster's default network; it is not part of the RDMA NIC mapping: " +
				"remove it and map only the RDMA NICs eth2..eth9 (and eth1 for the gVNIC network, if this cluster has one); the pod annotation binds eth0 to the default network by itself"},
		}},
		{"upper-case interface", rdmaPairs(map[string]string{"eth9": "ETH9=net-9"}), []want{
			{"ETH9", 0, "ETH9 is not an RDMA NIC of a3-ultragpu-8g or a4-highgpu-8g: did you mean eth9?"},
			{"eth9", 0, "eth9 is not mapped"},
		}},
		{"42-character name", rdmaPairs(map[string]string{"eth5": "eth5=" + name42}), []want{
			{"eth5", 0, "which is 42 characters long, over GKE's limit of 41"},
		}},
		{"upper-case name", rdmaPairs(map[string]string{"eth2": "eth2=RDMA-0"}), []want{
			{"eth2", 0, `eth2 is mapped to "RDMA-0", which has upper-case letters: GKE Network names are lower-case; use the name of this cluster's Device-type GKE Network for that NIC's subnet`},
		}},
		{"underscore in the gVNIC network", rdmaPairs(map[string]string{"eth1": "eth1=gvnic_1"}), []want{
			{"eth1", 0, `eth1 is mapped to "gvnic_1", which contains '_'`},
		}},
		{"empty network on eth1", rdmaPairs(map[string]string{"eth1": "eth1="}), []want{
			{"eth1", 0, "eth1 has no network: write it as eth1=<network>"},
		}},
		{"no interface name", rdmaPairs(map[string]string{"eth6": "=net-6"}), []want{
			{`pair 5 "=net-6"`, 0, "has no interface name: write it as eth<2-9>=net-6, naming one of the RDMA NICs eth2..eth9, or eth1 for the gVNIC network"},
			{"eth6", 0, "eth6 is not mapped"},
		}},
		{"pair without '='", rdmaPairs(map[string]string{"eth6": "eth6:net-6"}), []want{
			{`pair 5 "eth6:net-6"`, 0, "here eth<2-9>=<network>"},
			{"eth6", 0, "eth6 is not mapped"},
		}},
		{"missing comma reads as one name", strings.Replace(rdmaCanonical, ",eth9", " eth9", 1), []want{
			{"eth8", 0, "contains whitespace: network names have no spaces; use the name of this cluster's Device-type GKE Network for that NIC's subnet, exactly as `kubectl get networks` prints it; if this is more than one pair, separate the pairs with ','"},
			{"eth9", 0, "eth9 is not mapped"},
		}},
		{"problems come in input order, then per interface", "eth1=net-1,eth2=B,eth3,eth10=x,eth2=c,eth3=net-1,eth4=net-1", []want{
			{"eth2", 0, "upper-case"},
			{`pair 3 "eth3"`, 0, "has no '='"},
			{"eth10", 0, "not an RDMA NIC"},
			{"eth2", 0, "mapped twice"},
			{"eth5", 0, "eth5 is not mapped"},
			{"eth6", 0, "eth6 is not mapped"},
			{"eth7", 0, "eth7 is not mapped"},
			{"eth8", 0, "eth8 is not mapped"},
			{"eth9", 0, "eth9 is not mapped"},
			{"eth4", 0, `which eth3 already uses`},
			{"eth1", 0, `which eth3 already uses; eth1 is for the gVNIC network`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := RDMA.Parse(tt.in)
			if err == nil {
				t.Fatalf("RDMA.Parse(%q) accepted it as %v", tt.in, m)
			}
			if !m.IsZero() {
				t.Errorf("rejected input returned a non-zero Mapping %v", m)
			}
			checkProblems(t, err, true, tt.wants...)
			// A message about RDMA never sends the user to A3 Mega's NICs,
			// except to say that they were given.
			for _, p := range problems(t, err) {
				if strings.Contains(p.Error(), "GPU NIC") && !strings.Contains(p.Error(), "the GPU NICs of A3 Mega") {
					t.Errorf("RDMA message speaks of GPU NICs: %s", p)
				}
			}
		})
	}
}

func TestRDMAEmptyIsErrNoMapping(t *testing.T) {
	for name, err := range map[string]error{
		"Parse":        second(RDMA.Parse("  ")),
		"FromBindings": second(RDMA.FromBindings(nil)),
		"ParseYAML":    second(RDMA.ParseYAML([]byte("rdmaInterfaces: []\n"))),
		"no document":  second(RDMA.ParseYAML(nil)),
		"missing key":  second(RDMA.ParseYAML([]byte("other: 1\n"))),
	} {
		if !errors.Is(err, ErrNoMapping) {
			t.Errorf("%s: %v, want an error wrapping ErrNoMapping", name, err)
		}
	}
	if _, err := RDMA.Parse(rdmaPairs(map[string]string{"eth9": ""})); err == nil || errors.Is(err, ErrNoMapping) {
		t.Errorf("incomplete mapping: got %v, want an error not wrapping ErrNoMapping", err)
	}
}

func second(_ Mapping, err error) error { return err }

func TestRDMAMappingAccessors(t *testing.T) {
	without := mustParseRDMA(t, "eth9=h,eth8=g,eth7=f,eth6=e,eth5=d,eth4=c,eth3=b,eth2=a")
	with := mustParseRDMA(t, "eth9=h,eth8=g,eth7=f,eth6=e,eth5=d,eth4=c,eth3=b,eth2=a,eth1=gvnic-1")

	rdma := []Binding{{"eth2", "a"}, {"eth3", "b"}, {"eth4", "c"}, {"eth5", "d"}, {"eth6", "e"}, {"eth7", "f"}, {"eth8", "g"}, {"eth9", "h"}}
	if got := without.Bindings(); !slices.Equal(got, rdma) {
		t.Errorf("Bindings() = %v, want %v", got, rdma)
	}
	if got, want := with.Bindings(), append([]Binding{{"eth1", "gvnic-1"}}, rdma...); !slices.Equal(got, want) {
		t.Errorf("Bindings() with eth1 = %v, want %v", got, want)
	}
	if with == without {
		t.Error("mappings with and without eth1 compare equal")
	}
	bs := with.Bindings()
	bs[0].Network = "changed"
	if n, _ := with.Network("eth1"); n != "gvnic-1" {
		t.Errorf("modifying Bindings() changed the mapping: eth1 → %q", n)
	}

	for _, b := range rdma {
		if n, ok := without.Network(b.Interface); !ok || n != b.Network {
			t.Errorf("Network(%q) = %q, %v; want %q, true", b.Interface, n, ok, b.Network)
		}
	}
	if n, ok := with.Network("eth1"); !ok || n != "gvnic-1" {
		t.Errorf("Network(eth1) = %q, %v; want gvnic-1, true", n, ok)
	}
	for _, iface := range []string{"eth1", DefaultInterface, "eth10", "ETH2", ""} {
		if n, ok := without.Network(iface); ok {
			t.Errorf("Network(%q) = %q, true on a mapping that does not bind it", iface, n)
		}
	}
	for _, m := range []Mapping{with, without} {
		if m.Layout() != RDMA || m.IsZero() {
			t.Errorf("%v: Layout() = %v, IsZero() = %v", m, m.Layout(), m.IsZero())
		}
		checkAcceptedLayout(t, RDMA, m)
	}
}

// The annotation of an RDMA mapping is Google's, element by element: eth0 on
// the default network, then eth2..eth9 on Google's rdma-0..rdma-7.
//
// The expected list is the networking.gke.io/interfaces annotation of both
// pods of gpudirect-rdma/nccl-test.yaml (A3 Ultra) and of
// gpudirect-rdma/nccl-test-a4.yaml (A4) in
// GoogleCloudPlatform/container-engine-accelerators at commit dfe0f210
// ("Update NCCL installer images to v1.1.2", the head of PR #609). It is
// written out here because the manifests are not part of this repository.
// With eth1 bound, the annotation is that of gpudirect-rdma/
// nccl-test-autopilot.yaml at the same commit, which puts gvnic-1 on eth1
// between eth0 and eth2.
func TestRDMAAnnotationMatchesGoogle(t *testing.T) {
	google := []Binding{
		{"eth0", "default"},
		{"eth2", "rdma-0"},
		{"eth3", "rdma-1"},
		{"eth4", "rdma-2"},
		{"eth5", "rdma-3"},
		{"eth6", "rdma-4"},
		{"eth7", "rdma-5"},
		{"eth8", "rdma-6"},
		{"eth9", "rdma-7"},
	}
	googleAutopilot := slices.Insert(slices.Clone(google), 1, Binding{"eth1", "gvnic-1"})

	for _, tt := range []struct {
		name, in string
		want     []Binding
	}{
		{"nccl-test.yaml", "eth9=rdma-7,eth8=rdma-6,eth7=rdma-5,eth6=rdma-4,eth5=rdma-3,eth4=rdma-2,eth3=rdma-1,eth2=rdma-0", google},
		{"nccl-test-autopilot.yaml", "eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7,eth1=gvnic-1", googleAutopilot},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []Binding
			if err := json.Unmarshal([]byte(mustParseRDMA(t, tt.in).AnnotationJSON()), &got); err != nil {
				t.Fatalf("annotation is not JSON: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("annotation has %d elements, Google's %d: %v", len(got), len(tt.want), got)
			}
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("element %d = %+v, Google's is %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestRDMAAnnotationJSONGolden(t *testing.T) {
	m := mustParseRDMA(t, "eth1=gvnic-1,"+rdmaCanonical)
	const golden = `[{"interfaceName":"eth0","network":"default"},{"interfaceName":"eth1","network":"gvnic-1"},` +
		`{"interfaceName":"eth2","network":"net-2"},{"interfaceName":"eth3","network":"net-3"},` +
		`{"interfaceName":"eth4","network":"net-4"},{"interfaceName":"eth5","network":"net-5"},` +
		`{"interfaceName":"eth6","network":"net-6"},{"interfaceName":"eth7","network":"net-7"},` +
		`{"interfaceName":"eth8","network":"net-8"},{"interfaceName":"eth9","network":"net-9"}]`
	if got := m.AnnotationJSON(); got != golden {
		t.Fatalf("AnnotationJSON() =\n%s\nwant\n%s", got, golden)
	}
}

func TestRDMAValuesYAML(t *testing.T) {
	m := mustParseRDMA(t, "eth1=gvnic-1,eth2=z-8,eth3=a-1,eth4=b,eth5=c,eth6=d,eth7=e,eth8=f,eth9=g")
	const wantDoc = `rdmaInterfaces:
  - {interfaceName: eth1, network: "gvnic-1"}
  - {interfaceName: eth2, network: "z-8"}
  - {interfaceName: eth3, network: "a-1"}
  - {interfaceName: eth4, network: "b"}
  - {interfaceName: eth5, network: "c"}
  - {interfaceName: eth6, network: "d"}
  - {interfaceName: eth7, network: "e"}
  - {interfaceName: eth8, network: "f"}
  - {interfaceName: eth9, network: "g"}
`
	if got := m.ValuesYAML(); got != wantDoc {
		t.Fatalf("ValuesYAML() =\n%s\nwant\n%s", got, wantDoc)
	}
	back, err := RDMA.ParseYAML([]byte(m.ValuesYAML()))
	if err != nil || back != m {
		t.Fatalf("RDMA.ParseYAML(ValuesYAML) = %v, %v; want %v", back, err, m)
	}
	// Another fabric's reader refuses it, naming its own key.
	_, err = TCPXO.ParseYAML([]byte(m.ValuesYAML()))
	checkProblems(t, err, true, want{"rdmaInterfaces", 1, "this is a gIB mapping; the TCPXO fabric reads tcpxoInterfaces"})
}

func TestRDMAFromBindings(t *testing.T) {
	m := mustParseRDMA(t, "eth1=gvnic-1,"+rdmaCanonical)
	bs := m.Bindings()
	slices.Reverse(bs)
	got, err := RDMA.FromBindings(bs)
	if err != nil || got != m {
		t.Fatalf("RDMA.FromBindings(reversed) = %v, %v; want %v", got, err, m)
	}
}

func TestRDMAFromBindingsRejects(t *testing.T) {
	valid := mustParseRDMA(t, rdmaCanonical).Bindings()
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
		{"nil", nil, []want{{entry: "rdmaInterfaces", fragment: "rdmaInterfaces is empty; an RDMA NIC to GKE Network mapping is required"}}},
		{"empty", []Binding{}, []want{{entry: "rdmaInterfaces", fragment: "list eight bindings, {interfaceName: eth2, network: <network>} through {interfaceName: eth9, network: <network>} (and {interfaceName: eth1, network: <network>} for the gVNIC network, if this cluster has one)"}}},
		{"no interface name", with(2, Binding{"", "net-4"}), []want{
			{entry: "rdmaInterfaces[2]", fragment: "has no interface name: write it as {interfaceName: eth<2-9>, network: net-4}"},
			{entry: "eth4", fragment: "is not mapped: add {interfaceName: eth4, network: <network>} to rdmaInterfaces"},
		}},
		{"eth1..eth8", mustParse(t, canonical).Bindings(), []want{
			{entry: "eth9", fragment: "move each up one interface (eth1's network to eth2, and so on to eth8's to eth9); if eth1 is the gVNIC network, add {interfaceName: eth9, network: <network>}"},
		}},
		{"duplicate network", with(7, Binding{"eth9", "net-2"}), []want{
			{entry: "eth9", fragment: `is mapped to "net-2", which eth2 already uses`},
		}},
		{"twice", append(slices.Clone(valid), Binding{"eth4", "net-10"}), []want{
			{entry: "eth4", fragment: "is mapped twice (rdmaInterfaces[2] and rdmaInterfaces[8])"},
		}},
		{"eth1 on an RDMA network", append(slices.Clone(valid), Binding{"eth1", "net-9"}), []want{
			{entry: "eth1", fragment: `is mapped to "net-9", which eth9 already uses; eth1 is for the gVNIC network`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := RDMA.FromBindings(tt.in)
			if err == nil {
				t.Fatalf("RDMA.FromBindings accepted %v as %v", tt.in, m)
			}
			if !m.IsZero() {
				t.Errorf("rejected input returned a non-zero Mapping %v", m)
			}
			checkProblems(t, err, false, tt.wants...)
		})
	}
}

// checkAcceptedLayout asserts the invariants of every Mapping a layout's
// constructor returns: it records the layout, binds every GPU NIC and only
// the layout's NICs, in NIC order, each to its own valid network, and it
// round-trips through String and Parse, Bindings and FromBindings, ValuesYAML
// and ParseYAML, and a caller's own YAML encoding; its annotation is eth0 on
// the default network followed by its bindings.
func checkAcceptedLayout(t *testing.T, l Layout, m Mapping) {
	t.Helper()
	if m.IsZero() || m.Layout() != l {
		t.Fatalf("accepted input gave %v of layout %v, want a %v mapping", m, m.Layout(), l)
	}
	if back, err := l.Parse(m.String()); err != nil || back != m {
		t.Fatalf("Parse(String()) = %v, %v; want %v", back, err, m)
	}
	if fb, err := l.FromBindings(m.Bindings()); err != nil || fb != m {
		t.Fatalf("FromBindings(Bindings()) = %v, %v; want %v", fb, err, m)
	}
	if y, err := l.ParseYAML([]byte(m.ValuesYAML())); err != nil || y != m {
		t.Fatalf("ParseYAML(ValuesYAML()) = %v, %v; want %v\n%s", y, err, m, m.ValuesYAML())
	}
	doc, err := yaml.Marshal(map[string][]Binding{l.YAMLKey(): m.Bindings()})
	if err != nil {
		t.Fatal(err)
	}
	if y, err := l.ParseYAML(doc); err != nil || y != m {
		t.Fatalf("ParseYAML(%s) = %v, %v; want %v", doc, y, err, m)
	}

	bs := m.Bindings()
	var ifaces []string
	seen := map[string]bool{}
	for _, b := range bs {
		ifaces = append(ifaces, b.Interface)
		if len(b.Network) > MaxNetworkNameLength || !networkNamePattern.MatchString(b.Network) || seen[b.Network] {
			t.Fatalf("accepted network %q for %s", b.Network, b.Interface)
		}
		seen[b.Network] = true
		if n, ok := m.Network(b.Interface); !ok || n != b.Network {
			t.Fatalf("Network(%s) = %q, %v; Bindings says %q", b.Interface, n, ok, b.Network)
		}
	}
	// NIC order is the optional NICs bound, then the GPU NICs (each layout's
	// optional NICs come first), with every GPU NIC present.
	var want []string
	for _, o := range l.OptionalInterfaces() {
		if _, ok := m.Network(o); ok {
			want = append(want, o)
		}
	}
	want = append(want, l.GPUInterfaces()...)
	if !slices.Equal(ifaces, want) {
		t.Fatalf("bindings of %v are on %v, want %v", m, ifaces, want)
	}

	var ann []Binding
	if err := json.Unmarshal([]byte(m.AnnotationJSON()), &ann); err != nil || len(ann) == 0 ||
		ann[0] != (Binding{DefaultInterface, DefaultNetwork}) || !slices.Equal(ann[1:], bs) {
		t.Fatalf("annotation %s: %v", m.AnnotationJSON(), err)
	}
}
