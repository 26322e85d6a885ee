package bandwidth

import (
	"errors"
	"testing"
)

func TestFloor(t *testing.T) {
	for in, want := range map[string]struct {
		op   string
		gbps float64
	}{
		"300": {">=", 300}, ">= 300": {">=", 300}, ">=300": {">=", 300}, "> 42.5": {">", 42.5},
		"  >= 10000 ": {">=", 10000},
	} {
		op, v, err := Floor(in)
		if err != nil || op != want.op || v != want.gbps {
			t.Errorf("Floor(%q) = %q %v %v, want %q %v", in, op, v, err, want.op, want.gbps)
		}
	}
	for in, want := range map[string]error{
		"0x1p9": ErrSyntax, "Inf": ErrSyntax, "+Inf": ErrSyntax, "NaN": ErrSyntax, "1e308": ErrSyntax,
		"1_000": ErrSyntax, "300 GB/s": ErrSyntax, "<= 300": ErrSyntax, "-5": ErrSyntax, "": ErrSyntax,
		"0": ErrNotPositive, ">= 0.0": ErrNotPositive,
		"10000.5": ErrImplausible, ">= 99999": ErrImplausible,
		"99999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999": ErrImplausible,
	} {
		if _, _, err := Floor(in); !errors.Is(err, want) {
			t.Errorf("Floor(%q) = %v, want %v", in, err, want)
		}
	}
}

func TestMeasurements(t *testing.T) {
	for in, want := range map[string]float64{"0": 0, "12.34": 12.34, "1.2e+03": 1200, "5.": 5, "189.02": 189.02} {
		if v, err := GBps(in); err != nil || v != want {
			t.Errorf("GBps(%q) = %v, %v; want %v", in, v, err, want)
		}
	}
	for _, in := range []string{"0x1p9", "0X1P+9", "Inf", "inf", "infinity", "NaN", "-1", "+1", "0x_1p0", "1_0", "", "N/A"} {
		if v, err := Decimal(in); !errors.Is(err, ErrNotDecimal) {
			t.Errorf("Decimal(%q) = %v, %v; want ErrNotDecimal", in, v, err)
		}
	}
	for _, in := range []string{"1e308", "10000.01", "512000", "1e999"} {
		if v, err := GBps(in); !errors.Is(err, ErrImplausible) {
			t.Errorf("GBps(%q) = %v, %v; want ErrImplausible", in, v, err)
		}
	}
	if v, err := Decimal("1e308"); err != nil || v != 1e308 {
		t.Errorf("Decimal(1e308) = %v, %v: a time in microseconds has no bandwidth bound", v, err)
	}
}
