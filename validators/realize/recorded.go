package realize

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sync"
)

// A binary links exactly one trainer version, so what another version does
// with a TrainJob cannot be realized here. It was realized by that
// version's own test run, though: the matrix report it wrote,
// testdata/compat-<version>.json, is embedded, and RecordedLaunches finds in
// it the verdict for a TrainJob with the same LaunchKey. The verdict is
// known only for the shapes the matrix realizes on the shipped runtime;
// for any other shape it is reported unknown, never extrapolated.

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
		var r Report
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("embedded %s: %w (regenerate it with the realize suite's -update)", p, err)
		}
		if r.TrainerVersion == "" {
			return nil, fmt.Errorf("embedded %s names no trainer version", p)
		}
		reports = append(reports, r)
	}
	return reports, nil
})

// RecordedLaunch is the launch verdict another trainer version's matrix
// recorded for a TrainJob shape.
type RecordedLaunch struct {
	TrainerVersion string
	// Case is the first matrix case with the TrainJob's LaunchKey; empty
	// when the matrix realizes no such shape, and Launch is then nil.
	Case   string
	Launch *Launch
	// Covered lists the matrix cases that carry a launch key, for saying
	// what is known when this shape is not.
	Covered []string
}

// RecordedLaunches returns, for every trainer version with an embedded
// matrix report other than the linked one (in the order of the report
// files' names), the launch verdict recorded for a TrainJob of the shipped
// runtime with launch key key (see LaunchKey).
func RecordedLaunches(key string) ([]RecordedLaunch, error) {
	reports, err := recordedReports()
	if err != nil {
		return nil, err
	}
	var out []RecordedLaunch
	for _, r := range reports {
		if r.TrainerVersion == TrainerVersion() {
			continue
		}
		rec := RecordedLaunch{TrainerVersion: r.TrainerVersion}
		for _, row := range r.Rows {
			if row.LaunchKey == "" || row.Launch == nil {
				continue
			}
			rec.Covered = append(rec.Covered, row.Case)
			if rec.Launch == nil && row.LaunchKey == key {
				rec.Case, rec.Launch = row.Case, row.Launch
			}
		}
		out = append(out, rec)
	}
	return out, nil
}
