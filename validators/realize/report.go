package realize

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The compatibility report: what the compat command writes and
// testdata/compat-<version>.json holds, one file per trainer version. Its
// bytes are the contract with the committed files and with
// docs/trainer-compat.md, which is rendered from them.

// Row is one case's line in the compatibility report.
type Row struct {
	Case           string `json:"case"`
	Summary        string `json:"summary"`
	TrainerVersion string `json:"trainerVersion"`
	// Supported is false when the linked trainer cannot express the case;
	// Note then says why.
	Supported bool   `json:"supported"`
	Note      string `json:"note,omitempty"`
	// Survives says, per wiring category, whether everything the runtime
	// set reaches the realized node pod unchanged.
	Survives map[string]bool `json:"survives,omitempty"`
	// LosesFabric lists the categories in which a change loses the fabric
	// by Judge; a change the fabric rule set allows is in Changes only.
	LosesFabric []string `json:"losesFabric,omitempty"`
	// Changes lists what was lost or changed; Added what the trainer or
	// the TrainJob added. Both in wiring.Diff order.
	Changes []string `json:"changes,omitempty"`
	Added   []string `json:"added,omitempty"`
	// Observed records values a reader of the report needs: node count,
	// the torchrun env, GPU resources, the MPI hostfile.
	Observed map[string]string `json:"observed,omitempty"`
	// Launch is the launch verdict of the realized TrainJob.
	Launch *Launch `json:"launch,omitempty"`
	// LaunchKey is the TrainJob's LaunchKey, for cases realized against
	// the shipped runtime only: the cases with one key share one verdict
	// (TestLaunchKeyDecidesLaunch).
	LaunchKey string `json:"launchKey,omitempty"`
	// Objects lists every realized object as Kind/name.
	Objects []string `json:"objects,omitempty"`
	// Unexpected lists expectation failures: realized behaviour that does
	// not match what is recorded for this trainer version.
	Unexpected []string `json:"unexpected,omitempty"`
}

// SurvivalCategories are the keys of Row.Survives.
var SurvivalCategories = []string{"annotations", "sidecars", "volumes", "node container", "node env", "node mounts", "node capabilities", "node resources", "gpu limit", "gpu request"}

// Report is the compat command's output: one trainer version's matrix.
type Report struct {
	TrainerVersion string `json:"trainerVersion"`
	Rows           []Row  `json:"rows"`
}

// MarshalReport renders rows as the compat command writes them, and as the
// committed testdata/compat-<version>.json holds them: indented, without
// HTML escaping (values such as "<none>" and "->" stay readable), newline
// terminated. Same rows, same bytes.
func MarshalReport(rows []Row) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(Report{TrainerVersion: TrainerVersion(), Rows: rows}); err != nil {
		return nil, fmt.Errorf("encoding compat report: %w", err)
	}
	return buf.Bytes(), nil
}

// CompatReportPath is where the committed report for a trainer version
// lives, relative to this package's directory.
func CompatReportPath(version string) string {
	return "testdata/compat-" + version + ".json"
}
