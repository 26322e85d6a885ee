package realize

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/compat"
)

// The recorded matrices (testdata/compat-<version>.json, one per trainer
// version, each written by the build that links that version) are a
// regression test, not a source of verdicts: `check trainjob --trainer V`
// realizes on the binary that links V. Every build holds its own version's
// recorded launches to what it realizes now, and every recorded matrix to
// LaunchKey's claim.

//go:embed testdata/compat-*.json
var compatFS embed.FS

var recordedReports = sync.OnceValues(func() ([]Report, error) {
	paths, err := fs.Glob(compatFS, "testdata/compat-*.json")
	if err != nil {
		return nil, fmt.Errorf("listing the embedded matrix reports: %w", err)
	}
	var reports []Report
	for _, p := range paths {
		raw, err := compatFS.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading embedded %s: %w", p, err)
		}
		r, err := compat.Parse("embedded "+p, raw)
		if err != nil {
			return nil, err
		}
		reports = append(reports, r)
	}
	return reports, nil
})

// TestRecordedLaunchesRealized: every launch verdict the linked version's
// matrix recorded is the one this build realizes for the same case, so a
// build of either trainer (run under its modfile) that drifts from its
// record fails here with the case named.
func TestRecordedLaunchesRealized(t *testing.T) {
	reports, err := recordedReports()
	if err != nil {
		t.Fatal(err)
	}
	var rec *Report
	for i := range reports {
		if reports[i].TrainerVersion == TrainerVersion() {
			rec = &reports[i]
		}
	}
	if rec == nil {
		t.Fatalf("no recorded matrix for the linked trainer %s: write it with go generate ./...", TrainerVersion())
	}
	cases := map[string]Case{}
	for _, c := range Cases() {
		cases[c.Name] = c
	}
	checked := 0
	for _, row := range rec.Rows {
		if row.Launch == nil {
			continue
		}
		c, ok := cases[row.Case]
		if !ok {
			t.Errorf("recorded case %s is no longer in the matrix", row.Case)
			continue
		}
		o, err := RunCase(context.Background(), c)
		if err != nil {
			t.Errorf("case %s: %v", row.Case, err)
			continue
		}
		checked++
		if o.Launch.Judged != row.Launch.Judged || !slices.Equal(o.Launch.Problems, row.Launch.Problems) || !slices.Equal(o.Launch.Notes, row.Launch.Notes) {
			t.Errorf("trainer %s case %s: realized launch %+v, recorded %+v", TrainerVersion(), row.Case, o.Launch, *row.Launch)
		}
	}
	if checked == 0 {
		t.Fatal("no recorded launch checked")
	}
}
