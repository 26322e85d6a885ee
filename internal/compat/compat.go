// Package compat is the schema of the trainer compatibility report: one
// Kubeflow Trainer version's realization matrix, as validators/realize runs
// it and tools/compat writes it (validators/realize/testdata/compat-<version>.json),
// and as pipeline/docgen reads it to render docs/trainer-compat.md.
//
// The schema is declared once, here, rather than in package realize,
// because its reader must not link its writer: realize links the shipped
// runtime and with it the generated constants (generated/tcpxo), and the
// pipeline that renders the page regenerates those constants, so it links
// nothing compiled against them (TestRegeneratorLinksNoGeneratedCode). A
// leaf both can import keeps one definition without that link.
package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Report is one trainer version's matrix.
type Report struct {
	TrainerVersion string `json:"trainerVersion"`
	Rows           []Row  `json:"rows"`
}

// Row is one case's line in the compatibility report: one TrainJob shape
// realized against a runtime (the shipped one unless the case says
// otherwise).
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
	// by realize.Judge; a change the fabric rule set allows is in Changes
	// only.
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
	// (realize's TestLaunchKeyDecidesLaunch).
	LaunchKey string `json:"launchKey,omitempty"`
	// Objects lists every realized object as Kind/name.
	Objects []string `json:"objects,omitempty"`
	// Unexpected lists expectation failures: realized behaviour that does
	// not match what is recorded for this trainer version. The compat
	// command refuses to write a report that has any.
	Unexpected []string `json:"unexpected,omitempty"`
}

// Launch is the launch verdict for one realized TrainJob on one trainer
// version: whether torchrun in the realized node container would run the
// job the TrainJob describes. realize.JudgeLaunch decides it; it is declared
// here because the report carries it.
type Launch struct {
	// Judged is false when the runtime has no torch policy (an MPI runtime,
	// say): the checks below are torchrun's. Summary then says why.
	Judged bool `json:"judged"`
	// Summary says in one line what the launch is.
	Summary string `json:"summary"`
	// Notes say what holds, for a reader checking the launch by hand (what
	// torchrun will infer from "auto", where the node count comes from).
	Notes []string `json:"notes,omitempty"`
	// Problems are the checks that fail, in the order rendezvous, processes
	// per node, node count.
	Problems []LaunchProblem `json:"problems,omitempty"`
}

// OK reports whether no launch check fails.
func (l Launch) OK() bool { return len(l.Problems) == 0 }

// LaunchProblem is one failed launch check.
type LaunchProblem struct {
	// Check is one of realize's Launch* check names.
	Check string `json:"check"`
	// Problem says what is wrong in the realized node container.
	Problem string `json:"problem"`
	// Cause says which TrainJob field leads there, and how.
	Cause string `json:"cause,omitempty"`
	// Upstream names the upstream trainer issue or pull request.
	Upstream string `json:"upstream,omitempty"`
	// Fix is what the user can change in the TrainJob.
	Fix string `json:"fix"`
}

// Marshal renders a report as the committed
// testdata/compat-<version>.json holds it: indented, without HTML escaping
// (values such as "<none>" and "->" stay readable), newline terminated.
// Same report, same bytes.
func Marshal(r Report) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encoding compat report: %w", err)
	}
	return buf.Bytes(), nil
}

// Parse decodes one report, named name in errors. It is strict: a field the
// schema does not have is an error, not dropped, so a report written by an
// older or newer schema is regenerated rather than half read; so is a
// report that names no trainer version or has no rows.
func Parse(name string, data []byte) (Report, error) {
	var r Report
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%s: %w (regenerate it with go generate ./...)", name, err)
	}
	if r.TrainerVersion == "" || len(r.Rows) == 0 {
		return r, fmt.Errorf("%s: no trainer version or no rows", name)
	}
	return r, nil
}
