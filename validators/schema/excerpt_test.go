package schema

import (
	"strings"
	"testing"
)

// An object's name and apiVersion are quoted as bounded excerpts: a 900 KB
// name was echoed whole in every report about the object.
func TestReportQuotesExcerpts(t *testing.T) {
	v, err := NewTrainer()
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("n", 900<<10)
	reports, err := v.Validate([]byte("apiVersion: a/b/" + huge + "\nkind: TrainJob\nmetadata: {name: " + huge + "}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].OK() {
		t.Fatalf("reports = %v, want one with findings", reports)
	}
	if msg := reports[0].Err().Error(); len(msg) > 4<<10 || !strings.Contains(msg, "characters of 921600 bytes") {
		t.Errorf("the report's error is %d bytes: %.300s", len(msg), msg)
	}
}
