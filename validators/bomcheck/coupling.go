// Package bomcheck is the coupling check behind `make bom-check`: every
// pair of things that must agree — the BOM, the published release table,
// the generated facts, the reviewed overrides, the emitted manifests and
// go.mod — is one named check, and a failure names the files, both values
// and the fix. It reads the tree it is pointed at (parsing the committed
// generated file rather than trusting constants compiled into itself), so
// it judges exactly what would ship from that tree. It owns the checks and
// their report, not the rules they apply (internal/fabric; package bom for
// the release rules bump, review and render apply too: the differences from
// the published NCCL list, the plugin libraries' CUDA binding; the retired
// daemon flags are release data in bom/releases.yaml) nor the artefacts they
// compare (goldens, runtimes).
package bomcheck

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/facts"
)

// Status is a check's outcome.
type Status string

const (
	Pass Status = "ok"
	Fail Status = "FAIL"
	// Empty means the check exists but has nothing to compare yet.
	Empty Status = "n/a"
)

// Result is one check's outcome.
type Result struct {
	ID      string
	Title   string
	Status  Status
	Message string   // what was compared, or what disagrees (both values)
	Files   []string // files involved, repo-relative
	Fix     string
}

// Check is one named invariant.
type Check struct {
	ID    string
	Title string
	Run   func(context.Context, *Tree) Result
}

// Options tune a run.
type Options struct {
	// CacheDir is the blob cache re-extraction may read; the check never
	// touches the network (see Offline).
	CacheDir string
	// Transport, when set, replaces the offline transport (tests only).
	Transport http.RoundTripper
	// Reproduce re-runs the pipeline in memory from the sources the
	// committed generated file records: package pipeline's Reproduce, which
	// the command hands in because the checks sit below the pipeline.
	// Without it the reproducibility check fails: it never passes unrun.
	Reproduce Reproducer
}

// Reproducer re-runs the pipeline for the tree at root from the sources
// and library directory committed records, with the reviewed inputs, and
// returns the recorded installer source as recorded, every artefact of the
// run (the generated file, every golden and generated page, repo-relative)
// and the network requests it made. A nil transport refuses every request.
type Reproducer func(ctx context.Context, root string, b *bom.BOM, committed *facts.Facts, r *bom.Releases, o *bom.Overrides, cacheDir string, transport http.RoundTripper) (source string, files map[string][]byte, requests int64, err error)

// Report is the outcome of all checks.
type Report struct {
	Results []Result
	// Substitute describes the image the committed generated data was read
	// from when it was not the pinned one; empty otherwise.
	Substitute string
}

// Failed reports whether any check failed.
func (r Report) Failed() bool {
	for _, res := range r.Results {
		if res.Status == Fail {
			return true
		}
	}
	return false
}

// Run loads the tree at root and runs every check in order. Checks run even
// when some inputs failed to load, each reporting what it could not read.
func Run(ctx context.Context, root string, opts Options) Report {
	t := Load(root, opts)
	var rep Report
	for _, c := range Checks() {
		res := c.Run(ctx, t)
		res.ID, res.Title = c.ID, c.Title
		rep.Results = append(rep.Results, res)
	}
	var subs []string
	for _, f := range []*facts.Facts{t.Generated, t.GIB} {
		if f != nil && f.Provenance.Substituted {
			subs = append(subs, fmt.Sprintf("%s (%s)", f.Provenance.Read, f.Provenance.Kind))
		}
	}
	rep.Substitute = strings.Join(subs, " and ")
	return rep
}

// Write prints a report for humans.
func (r Report) Write(w io.Writer, name string) {
	counts := map[Status]int{}
	for _, res := range r.Results {
		counts[res.Status]++
	}
	for i, res := range r.Results {
		fmt.Fprintf(w, "%-4s %2d %-38s %s\n", res.Status, i+1, res.ID, res.Message)
		if res.Status == Fail {
			if len(res.Files) > 0 {
				fmt.Fprintf(w, "          files: %s\n", strings.Join(res.Files, ", "))
			}
			if res.Fix != "" {
				fmt.Fprintf(w, "          fix:   %s\n", res.Fix)
			}
		}
	}
	fmt.Fprintf(w, "%s: %d checks: %d passed, %d failed, %d with nothing to compare\n", name, len(r.Results), counts[Pass], counts[Fail], counts[Empty])
	if r.Substitute != "" {
		fmt.Fprintf(w, "NOTE: the committed generated data was read from a SUBSTITUTE, %s, not the pinned installer image. make release-check refuses it; extract from the real image with `make generate SOURCE=registry`.\n", r.Substitute)
	}
}

func pass(format string, a ...any) Result {
	return Result{Status: Pass, Message: fmt.Sprintf(format, a...)}
}

func fail(files []string, fix, format string, a ...any) Result {
	return Result{Status: Fail, Message: fmt.Sprintf(format, a...), Files: files, Fix: fix}
}
