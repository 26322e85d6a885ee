package interfaces

import (
	"encoding/json"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// checkAccepted asserts the invariants of every Mapping a constructor
// returns: it re-validates through the other constructors, round-trips
// through String, and renders a well-formed annotation.
func checkAccepted(t *testing.T, m Mapping) {
	t.Helper()
	if m.IsZero() {
		t.Fatal("accepted input gave the zero Mapping")
	}
	back, err := Parse(m.String())
	if err != nil || back != m {
		t.Fatalf("Parse(String()) = %v, %v; want %v", back, err, m)
	}
	fb, err := FromBindings(m.Bindings())
	if err != nil || fb != m {
		t.Fatalf("FromBindings(Bindings()) = %v, %v; want %v", fb, err, m)
	}
	doc, err := yaml.Marshal(map[string][]Binding{yamlKey: m.Bindings()})
	if err != nil {
		t.Fatal(err)
	}
	if y, err := ParseYAML(doc); err != nil || y != m {
		t.Fatalf("ParseYAML(%s) = %v, %v; want %v", doc, y, err, m)
	}
	seen := map[string]bool{}
	for i, b := range m.Bindings() {
		if b.Interface != gpuNICs[i] {
			t.Fatalf("binding %d is %s, want %s", i, b.Interface, gpuNICs[i])
		}
		if len(b.Network) > MaxNetworkNameLength || !networkNamePattern.MatchString(b.Network) || seen[b.Network] {
			t.Fatalf("accepted network %q for %s", b.Network, b.Interface)
		}
		seen[b.Network] = true
	}
	var ann []Binding
	if err := json.Unmarshal([]byte(m.AnnotationJSON()), &ann); err != nil || len(ann) != 9 || ann[0] != (Binding{"eth0", "default"}) {
		t.Fatalf("annotation %s: %v", m.AnnotationJSON(), err)
	}
}

// checkRejected asserts that a rejection is complete and bounded.
func checkRejected(t *testing.T, m Mapping, err error, lines bool) {
	t.Helper()
	if !m.IsZero() {
		t.Fatalf("rejected input returned %v", m)
	}
	got := problems(t, err)
	if len(got) == 0 || len(got) > yamlstrict.MaxProblems+1 {
		t.Fatalf("%d problems reported", len(got))
	}
	for _, p := range got {
		if p.Problem == "" || p.Fix == "" || (!lines && p.Line != 0) {
			t.Fatalf("incomplete rejection %#v", p)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		canonical, "", ",", "=", "eth1=", "=net-1", "eth0=default," + canonical,
		"eth8=h,eth7=g,eth6=f,eth5=e,eth4=d,eth3=c,eth2=b,eth1=a",
		" eth1 = a , eth2=b,eth3=c,eth4=d,eth5=e,eth6=f,eth7=g,eth8=h ",
		pairs(map[string]string{"eth5": "eth5=" + strings.Repeat("a", 42)}),
		pairs(map[string]string{"eth2": "eth2=net-1"}),
		pairs(map[string]string{"eth3": "eth3=Net-3"}),
		pairs(map[string]string{"eth8": "eth9=net-8"}),
		pairs(map[string]string{"eth4": "eth4=a==b"}),
		"eth1=\u00e9,eth2=\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := Parse(s)
		if err != nil {
			checkRejected(t, m, err, false)
			return
		}
		checkAccepted(t, m)
		// Accepted input names each GPU NIC once, with the network it got.
		for _, raw := range strings.Split(s, ",") {
			iface, network, _ := strings.Cut(raw, "=")
			if n, ok := m.Network(strings.TrimSpace(iface)); !ok || n != strings.TrimSpace(network) {
				t.Fatalf("pair %q gave %s → %q", raw, iface, n)
			}
		}
	})
}

func FuzzParseYAML(f *testing.F) {
	for _, s := range []string{
		yamlDoc(nil), "", "~", "tcpxoInterfaces: []", "tcpxoInterfaces: &a [*a]",
		"tcpxoInterfaces:\n  - &e {interfaceName: eth1, network: a}\n  - *e\n",
		"tcpxoInterfaces:\n  - {<<: {interfaceName: eth1}, network: a}\n",
		"tcpxoInterfaces: {a: b}\n---\nx: 1\n", "tcpxoInterfaces:\n\t- a\n",
		yamlDoc(map[string]string{"eth2": "  - {interfaceName: eth2, network: !!binary aGk=}"}),
		yamlDoc(map[string]string{"eth2": "  - {? [a] : b}"}),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseYAML(data)
		if err != nil {
			checkRejected(t, m, err, true)
			return
		}
		checkAccepted(t, m)
	})
}

// The rules that explain a bad network name must agree exactly with GKE's
// pattern: a rule that is too strict rejects a real Network, one that is too
// lax gives the fallback message instead of a precise one.
func FuzzNetworkName(f *testing.F) {
	for _, s := range []string{"a", "net-1", "Net", "1a", "a-", "-a", "a b", "a_b", "é", strings.Repeat("a", 41), strings.Repeat("a", 42), "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return
		}
		_, problem, ok := networkNameProblem(name)
		valid := len(name) <= MaxNetworkNameLength && networkNamePattern.MatchString(name)
		if ok != valid {
			t.Fatalf("networkNameProblem(%q) ok = %v, pattern and limit say %v", name, ok, valid)
		}
		if !ok && strings.HasPrefix(problem, "does not match") {
			t.Fatalf("no rule explains why %q is invalid", name)
		}
	})
}
