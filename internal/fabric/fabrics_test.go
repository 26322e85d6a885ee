package fabric

import (
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	for _, f := range Fabrics() {
		got, err := Lookup(f.Name)
		if err != nil || got.Name != f.Name {
			t.Errorf("Lookup(%q) = %v, %v", f.Name, got.Name, err)
		}
	}
	_, err := Lookup("tcpx")
	if err == nil || !strings.Contains(err.Error(), "tcpxo, gib") {
		t.Errorf("Lookup(tcpx) error %v does not list the fabrics", err)
	}
	if _, err := Lookup(Default); err != nil {
		t.Errorf("the default fabric %q is not registered: %v", Default, err)
	}
}

// The machine type decides the fabric; A3 High and Edge, which share an
// accelerator label and use GPUDirect-TCPX, are refused naming TCPX.
func TestForMachineType(t *testing.T) {
	for mt, want := range map[string]string{"a3-megagpu-8g": "tcpxo", "a3-ultragpu-8g": "gib", "a4-highgpu-8g": "gib"} {
		f, err := ForMachineType(mt)
		if err != nil || f.Name != want {
			t.Errorf("ForMachineType(%s) = %q, %v; want %s", mt, f.Name, err, want)
		}
	}
	for _, mt := range []string{"a3-highgpu-8g", "a3-edgegpu-8g"} {
		if _, err := ForMachineType(mt); err == nil || !strings.Contains(err.Error(), "GPUDirect-TCPX ") {
			t.Errorf("ForMachineType(%s) error %v does not name GPUDirect-TCPX", mt, err)
		}
	}
	if _, err := ForMachineType("n2-standard-8"); err == nil || !strings.Contains(err.Error(), "a4-highgpu-8g (gib)") {
		t.Errorf("an unknown machine type: %v", err)
	}
}

// No machine type or accelerator label belongs to two fabrics: the
// machine type must decide.
func TestMachineTypesAreDisjoint(t *testing.T) {
	seen := map[string]string{}
	for _, f := range Fabrics() {
		if len(f.MachineTypes) == 0 {
			t.Errorf("fabric %s serves no machine type", f.Name)
		}
		for _, m := range f.MachineTypes {
			for _, key := range []string{m.Name, m.Accelerator} {
				if other, ok := seen[key]; ok {
					t.Errorf("%s belongs to %s and %s", key, other, f.Name)
				}
				seen[key] = f.Name
			}
			if _, unserved := Unserved[m.Name]; unserved {
				t.Errorf("%s is both served (%s) and unserved", m.Name, f.Name)
			}
		}
	}
}
