package interfaces

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestLayouts(t *testing.T) {
	tests := []struct {
		l                       Layout
		name, key               string
		gpu, optional, machines []string
	}{
		{TCPXO, "TCPXO", "tcpxoInterfaces",
			[]string{"eth1", "eth2", "eth3", "eth4", "eth5", "eth6", "eth7", "eth8"}, nil,
			[]string{"a3-megagpu-8g"}},
		{RDMA, "RDMA", "rdmaInterfaces",
			[]string{"eth2", "eth3", "eth4", "eth5", "eth6", "eth7", "eth8", "eth9"}, []string{"eth1"},
			[]string{"a3-ultragpu-8g", "a4-highgpu-8g"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.l.String(); got != tt.name {
				t.Errorf("String() = %q, want %q", got, tt.name)
			}
			if got := tt.l.YAMLKey(); got != tt.key {
				t.Errorf("YAMLKey() = %q, want %q", got, tt.key)
			}
			for _, c := range []struct {
				what string
				get  func() []string
				want []string
			}{
				{"GPUInterfaces", tt.l.GPUInterfaces, tt.gpu},
				{"OptionalInterfaces", tt.l.OptionalInterfaces, tt.optional},
				{"MachineTypes", tt.l.MachineTypes, tt.machines},
			} {
				got := c.get()
				if !slices.Equal(got, c.want) {
					t.Fatalf("%s() = %v, want %v", c.what, got, c.want)
				}
				if len(got) > 0 {
					got[0] = "changed"
					if again := c.get(); again[0] != c.want[0] {
						t.Fatalf("modifying %s() changed the layout: %v", c.what, again)
					}
				}
			}
		})
	}
	for _, l := range []Layout{TCPXO, RDMA} {
		if n := len(l.GPUInterfaces()) + len(l.OptionalInterfaces()); n > maxNICs {
			t.Errorf("%v maps %d NICs, more than a Mapping holds (%d)", l, n, maxNICs)
		}
	}
	if !slices.Equal(GPUInterfaces(), TCPXO.GPUInterfaces()) {
		t.Errorf("GPUInterfaces() = %v, TCPXO's are %v", GPUInterfaces(), TCPXO.GPUInterfaces())
	}
}

// A Layout other than TCPXO and RDMA is a bug in the caller: it names
// itself as invalid and is never silently read as either fabric.
func TestInvalidLayout(t *testing.T) {
	for _, l := range []Layout{0, RDMA + 1} {
		if s := l.String(); !strings.HasPrefix(s, "invalid Layout(") {
			t.Errorf("Layout(%d).String() = %q", l, s)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Layout(%d).Parse did not panic", l)
				}
			}()
			m, err := l.Parse(canonical)
			t.Errorf("Layout(%d).Parse = %v, %v", l, m, err)
		}()
	}
	if l := (Mapping{}).Layout(); l != 0 {
		t.Errorf("the zero Mapping's Layout() = %v, want the zero Layout", l)
	}
}

// The package-level constructors are TCPXO's: the same Mapping and the same
// messages, for valid and invalid input alike (eth9 among them).
func TestPackageFunctionsAreTCPXO(t *testing.T) {
	for _, in := range []string{
		canonical, "", pairs(map[string]string{"eth8": "eth9=net-8"}), pairs(map[string]string{"eth8": ""}),
		"eth0=default," + canonical, rdmaCanonical,
	} {
		m1, err1 := Parse(in)
		m2, err2 := TCPXO.Parse(in)
		if m1 != m2 || errText(err1) != errText(err2) {
			t.Errorf("Parse(%q) = %v, %v; TCPXO.Parse = %v, %v", in, m1, err1, m2, err2)
		}
		if err1 == nil && m1.Layout() != TCPXO {
			t.Errorf("Parse(%q).Layout() = %v, want TCPXO", in, m1.Layout())
		}
		y1, yerr1 := ParseYAML([]byte(yamlDoc(nil)))
		y2, yerr2 := TCPXO.ParseYAML([]byte(yamlDoc(nil)))
		if y1 != y2 || errText(yerr1) != errText(yerr2) {
			t.Errorf("ParseYAML = %v, %v; TCPXO.ParseYAML = %v, %v", y1, yerr1, y2, yerr2)
		}
		f1, ferr1 := FromBindings(m1.Bindings())
		f2, ferr2 := TCPXO.FromBindings(m1.Bindings())
		if f1 != f2 || errText(ferr1) != errText(ferr2) {
			t.Errorf("FromBindings = %v, %v; TCPXO.FromBindings = %v, %v", f1, ferr1, f2, ferr2)
		}
	}
	if TCPXO.NoMapping() != ErrNoMapping {
		t.Errorf("TCPXO.NoMapping() = %v, want ErrNoMapping", TCPXO.NoMapping())
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// A mapping valid for one fabric is refused by the other, which names its
// own NICs: RDMA's eth9 is not an A3 Mega NIC, and TCPXO's eth1..eth8 leave
// RDMA's eth9 unmapped.
func TestLayoutsRefuseEachOther(t *testing.T) {
	_, err := TCPXO.Parse(rdmaCanonical)
	checkProblems(t, err, true,
		want{"eth9", 0, "eth9 is not a GPU NIC of a3-megagpu-8g: use eth1..eth8"},
		want{"eth1", 0, "eth1 is not mapped"})

	_, err = RDMA.Parse(canonical)
	checkProblems(t, err, true,
		want{"eth9", 0, "eth9 is not mapped, and eth1 is: the mapping names eth1..eth8"})
}

func TestNoMappingIsErrNoMapping(t *testing.T) {
	err := RDMA.NoMapping()
	if !errors.Is(err, ErrNoMapping) {
		t.Fatalf("RDMA.NoMapping() = %v, which is not ErrNoMapping under errors.Is", err)
	}
	for _, fragment := range []string{"RDMA NIC", "eth2..eth9", "A3 Ultra or A4"} {
		if !strings.Contains(err.Error(), fragment) {
			t.Errorf("RDMA.NoMapping() = %q, want %q in it", err, fragment)
		}
	}
	if strings.Contains(err.Error(), "A3 Mega") || strings.Contains(err.Error(), "TCPXO") {
		t.Errorf("RDMA.NoMapping() = %q speaks of the other fabric", err)
	}
}
