package busbw

import (
	"errors"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/bandwidth"
)

// Numbers strconv.ParseFloat accepts but nccl-tests never prints are
// malformed rows: "0x1p9" passed as 512 GB/s and "1e308" as a measurement;
// a size that overflows int64 made the row noise, silently dropped.
func TestParseRefusesImpossibleNumbers(t *testing.T) {
	good := row(1024, "1")
	for name, tc := range map[string]struct{ line, want string }{
		"hex busbw":         {row(1024, "0x1p9"), `busbw "0x1p9" is not a finite non-negative decimal number`},
		"hex algbw":         {strings.Replace(good, "10.00  1.00", "10.00  0x1p9", 1), `algbw "0x1p9"`},
		"huge busbw":        {row(1024, "1e308"), "busbw \"1e308\" is more than 10000 GB/s"},
		"implausible":       {row(1024, "10000.5"), "more than 10000 GB/s"},
		"overflowing busbw": {row(1024, "1e999"), "more than 10000 GB/s"},
		"overflowing size":  {strings.Replace(good, "1024", "99999999999999999999", 1), `size "99999999999999999999" is not a byte count (or overflows one)`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(params + tc.line + "\n# Avg bus bandwidth : 1\n"))
			if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want line 2 and %q", err, tc.want)
			}
		})
	}
}

func TestParseAverageTrailer(t *testing.T) {
	body := params + row(1024, "1") + "\n"
	for in, want := range map[string]float64{"1": 1, "nan": 0, "-nan": 0, "0x1p9": 0, "40.6GB/s": 0} {
		l, err := Parse(strings.NewReader(body + "# Avg bus bandwidth : " + in + "\n"))
		if err != nil || l.AvgBusBW != want {
			t.Errorf("trailer %q: avg %v, %v; want %v", in, l.AvgBusBW, err, want)
		}
	}
	for _, in := range []string{"1e308", "1e999"} {
		_, err := Parse(strings.NewReader(body + "# Avg bus bandwidth : " + in + "\n"))
		if !errors.Is(err, bandwidth.ErrImplausible) {
			t.Errorf("trailer %q: %v, want an implausible-value error", in, err)
		}
	}
}

// A value echoed in an error is bounded and its look-alikes named: a 64 KB
// row was quoted whole.
func TestRowErrorsQuoteAnExcerpt(t *testing.T) {
	long := row(1024, "1") + strings.Repeat(" x", 30<<10)
	_, err := Parse(strings.NewReader(params + long + "\n"))
	if err == nil || len(err.Error()) > 2048 {
		t.Fatalf("error of %d bytes for a %d-byte row: %.200v", len(err.Error()), len(long), err)
	}
	_, err = Parse(strings.NewReader(params + row(1024, "1\u0435") + "\n"))
	if err == nil || !strings.Contains(err.Error(), "U+0435 CYRILLIC SMALL LETTER IE") {
		t.Fatalf("err = %v, want the look-alike named", err)
	}
}
