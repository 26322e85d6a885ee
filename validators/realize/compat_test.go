package realize

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
)

// TestCompatReportCurrent re-runs the matrix and compares it with the
// committed report for the linked trainer version, so a change in trainer
// behaviour, in the shipped runtimes or in the diff shows up as a reviewable diff of
// testdata/compat-<version>.json. go generate ./... rewrites the file
// (tools/compat); so does -update.
func TestCompatReportCurrent(t *testing.T) {
	rows, err := Matrix(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, err := MarshalReport(rows)
	if err != nil {
		t.Fatal(err)
	}
	path := CompatReportPath(TrainerVersion())
	if *update {
		if err := atomicfile.Write(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with go generate ./...)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale; review the change and rewrite it with go generate ./... (or this test's -update, with the same -modfile as this run)\n--- got\n%s", path, got)
	}
}
