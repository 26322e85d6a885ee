package compat

import (
	"reflect"
	"strings"
	"testing"
)

// The committed reports are compared byte for byte, so Marshal's form is
// part of the contract: indented, "<none>" and "->" unescaped, one
// trailing newline, and Parse reads back exactly what it wrote.
func TestMarshalParseRoundTrip(t *testing.T) {
	r := Report{TrainerVersion: "v2.2.0", Rows: []Row{{
		Case: "bare", Summary: "runtimeRef only", TrainerVersion: "v2.2.0", Supported: true,
		Survives: map[string]bool{"gpu limit": false},
		Changes:  []string{"resource lost: limits nvidia.com/gpu (8 -> <none>)"},
		Launch:   &Launch{Judged: true, Summary: "launch fails", Problems: []LaunchProblem{{Check: "rendezvous", Problem: "no PET_NNODES", Fix: "add spec.trainer"}}},
	}}}
	raw, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	if !strings.Contains(s, "(8 -> <none>)") || !strings.HasSuffix(s, "}\n") || strings.HasSuffix(s, "\n\n") || !strings.Contains(s, "\n  \"rows\": [\n") {
		t.Errorf("Marshal form changed:\n%s", s)
	}
	if strings.Contains(s, `"note"`) || strings.Contains(s, `"cause"`) {
		t.Errorf("empty optional fields written:\n%s", s)
	}
	back, err := Parse("r.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, r)
	}
	if back.Rows[0].Launch.OK() {
		t.Error("a launch with a problem is OK")
	}
}

func TestParseRejects(t *testing.T) {
	for _, bad := range []string{`{}`, `{"trainerVersion":"v2.2.0","rows":[]}`, `{"trainerVersion":"v2.2.0","rows":[{"case":"x","bogus":1}]}`, `not json`} {
		if _, err := Parse("x.json", []byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "x.json: ") {
			t.Errorf("Parse(%s) = %v, want an error naming x.json", bad, err)
		}
	}
}
