package realize

import "github.com/tcpxogen/tcpxogen/internal/compat"

// The compatibility report: what the compat command writes and
// testdata/compat-<version>.json holds, one file per trainer version. Its
// bytes are the contract with the committed files and with
// docs/trainer-compat.md, which is rendered from them. The schema is
// declared once, in internal/compat, which pipeline/docgen reads it with
// without linking this package (and through it the generated constants);
// the names below are that schema, not copies of it.

// Row is one case's line in the compatibility report.
type Row = compat.Row

// Report is the compat command's output: one trainer version's matrix.
type Report = compat.Report

// SurvivalCategories are the keys of Row.Survives.
var SurvivalCategories = []string{"annotations", "sidecars", "volumes", "node container", "node env", "node mounts", "node capabilities", "node resources", "gpu limit", "gpu request"}

// MarshalReport renders rows, as realized on the linked trainer, the way
// the compat command writes them and the committed
// testdata/compat-<version>.json holds them (compat.Marshal): same rows,
// same bytes.
func MarshalReport(rows []Row) ([]byte, error) {
	return compat.Marshal(Report{TrainerVersion: TrainerVersion(), Rows: rows})
}

// CompatReportPath is where the committed report for a trainer version
// lives, relative to this package's directory.
func CompatReportPath(version string) string {
	return "testdata/compat-" + version + ".json"
}
