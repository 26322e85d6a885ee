// Package report turns a judged nccl-tests run into the artifacts a reader
// keeps: a CTRF JSON report (the Common Test Report Format, so CI dashboards
// and the CTRF tooling read it without a custom parser) and an SVG chart of
// bus bandwidth against message size with the floor drawn on it.
//
// Both are deterministic: the same run and context give the same bytes, so a
// report can be committed, diffed and compared across runs.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
)

// File and ChartFile are the names of the report and the chart in an output
// directory, for every command that writes them (nccl-report, validate).
const (
	File      = "nccl-report.ctrf.json"
	ChartFile = "nccl-busbw.svg"
)

// Context is what the log cannot say about itself: where the benchmarked
// runtime came from, what the validator did to the trainer, and the versions
// of record.
type Context struct {
	// RuntimeSource is the result's provenance class (docs/design.md,
	// "Recipe-driven validation policy"): shipped, validator or user. Empty means nobody recorded
	// it (an offline evaluation of a captured log) and is reported as
	// "unknown", never guessed.
	RuntimeSource string
	// TrainerAction is the trainer lifecycle policy's decision for this run,
	// as the policy names it (lifecycle.Action: "use-declared",
	// "install-and-tear-down", "reuse-stray", ...). It is a string so the
	// report does not depend on the policy package.
	TrainerAction string
	// PluginVersion, NCCLVersion and TrainerVersion are the pinned versions
	// the run is judged against (the BOM's, not the log's). The report
	// writes them as the *Pinned fields, next to what the log showed.
	PluginVersion, NCCLVersion, TrainerVersion string
	// Recipe names the recipe file or its criteria.
	Recipe string
	// Start and Stop bound the run in milliseconds since the Unix epoch, as
	// CTRF's summary requires; 0 when unknown. They are never read from the
	// clock here, so a report is reproducible.
	Start, Stop int64
}

// RuntimeSources is the closed set of provenance classes.
var RuntimeSources = []string{"shipped", "validator", "user"}

// UnknownRuntimeSource is reported when Context.RuntimeSource is empty.
const UnknownRuntimeSource = "unknown"

// CTRF's identifiers and this report's names.
const (
	ctrfFormat      = "CTRF"
	ctrfSpecVersion = "1.0.0"
	toolName        = "tcpxogen"
	// TestName is the report's headline test; its status is the verdict.
	// An all_gather run's is AllGatherTestName.
	TestName          = "nccl-all-reduce-bw"
	AllGatherTestName = "nccl-all-gather-bw"
	testType          = "performance"
)

// Field order of these types is the output order; encoding/json keeps it.
type ctrfReport struct {
	ReportFormat string      `json:"reportFormat"`
	SpecVersion  string      `json:"specVersion"`
	GeneratedBy  string      `json:"generatedBy"`
	Results      ctrfResults `json:"results"`
}

type ctrfResults struct {
	Tool    ctrfTool    `json:"tool"`
	Summary ctrfSummary `json:"summary"`
	Tests   []ctrfTest  `json:"tests"`
}

type ctrfTool struct {
	Name string `json:"name"`
}

type ctrfSummary struct {
	Tests    int   `json:"tests"`
	Passed   int   `json:"passed"`
	Failed   int   `json:"failed"`
	Skipped  int   `json:"skipped"`
	Pending  int   `json:"pending"`
	Other    int   `json:"other"`
	Start    int64 `json:"start"`
	Stop     int64 `json:"stop"`
	Duration int64 `json:"duration"`
}

type ctrfTest struct {
	Name     string   `json:"name"`
	Status   string   `json:"status"`
	Duration int64    `json:"duration"`
	Suite    []string `json:"suite,omitempty"`
	Message  string   `json:"message,omitempty"`
	Type     string   `json:"type"`
	Extra    any      `json:"extra,omitempty"`
}

// headlineExtra is the evidence a reader needs to trust or reject the
// number: provenance, what the log showed next to what was pinned, and the
// measurement against its floor. The observed fields come from the log only;
// notInLog names those it did not show, so an absent value is never read as
// the pinned one.
type headlineExtra struct {
	// Fabric is the fabric the run was judged for, written only for a
	// fabric other than busbw.DefaultFabric: reports from before fabrics
	// were named were all TCPXO's, and read the same.
	Fabric                string   `json:"fabric,omitempty"`
	RuntimeSource         string   `json:"runtimeSource"`
	TrainerAction         string   `json:"trainerAction,omitempty"`
	Recipe                string   `json:"recipe,omitempty"`
	PluginVersionPinned   string   `json:"pluginVersionPinned,omitempty"`
	PluginVersionObserved string   `json:"pluginVersionObserved,omitempty"`
	NCCLVersionPinned     string   `json:"ncclVersionPinned,omitempty"`
	NCCLVersionObserved   string   `json:"ncclVersionObserved,omitempty"`
	NCCLVersionFrom       string   `json:"ncclVersionObservedFrom,omitempty"`
	TrainerVersion        string   `json:"trainerVersion,omitempty"`
	Collective            string   `json:"collective,omitempty"`
	CollectiveFrom        string   `json:"collectiveFrom,omitempty"`
	NCCLTestsVersion      string   `json:"ncclTestsVersion,omitempty"`
	Table                 string   `json:"table,omitempty"`
	Nodes                 int      `json:"nodes,omitempty"`
	Ranks                 int      `json:"ranks,omitempty"`
	Hosts                 []string `json:"hosts,omitempty"`
	NodesFrom             string   `json:"nodesFrom,omitempty"`
	Network               string   `json:"network,omitempty"`
	NotInLog              []string `json:"notInLog"`
	MeasuredBusBWGBps     float64  `json:"measuredBusBwGBps"`
	MeasuredAtBytes       int64    `json:"measuredAtBytes"`
	Floor                 string   `json:"floor"`
	FloorGBps             float64  `json:"floorGBps"`
	ThresholdGBps         float64  `json:"thresholdGBps"`
	PassFraction          float64  `json:"passFraction"`
	AvgBusBWGBps          float64  `json:"avgBusBwGBps"`
	Sizes                 int      `json:"sizes"`
	MaxBytes              int64    `json:"maxBytes"`
	Complete              bool     `json:"complete"`
	Problems              []string `json:"problems"`
}

// notInLog names the observed facts the log did not show, in a fixed order.
func notInLog(l *busbw.Log) []string {
	missing := []string{}
	for _, f := range []struct {
		name   string
		absent bool
	}{
		{"ncclVersion", l.NCCLVersion == ""},
		{"pluginVersion", len(l.PluginVersions) == 0},
		{"network", len(l.Networks) == 0},
		{"nodes", l.Nodes == 0},
		{"ranks", l.Ranks == 0},
		{"ncclTestsVersion", l.TestsVersion == ""},
	} {
		if f.absent {
			missing = append(missing, f.name)
		}
	}
	return missing
}

type checkExtra struct {
	Check string `json:"check"`
}

// CTRF renders the verdict as a CTRF report. The headline test TestName
// carries the overall verdict and the evidence in its extra; one further
// test per rule (suite TestName, names "nccl-all-reduce-bw/<check>") lets a
// dashboard show which rule failed, and a rule the log could not answer is
// "skipped" rather than silently passed.
func CTRF(v busbw.Verdict, l *busbw.Log, ctx Context) ([]byte, error) {
	if l == nil {
		l = &busbw.Log{OutOfBounds: -1, Validation: -1}
	}
	source, err := runtimeSource(ctx.RuntimeSource)
	if err != nil {
		return nil, err
	}
	fab, err := v.JudgedFabric()
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	fabric := ""
	if fab.Name != busbw.DefaultFabric {
		fabric = fab.Name
	}
	if ctx.Start < 0 || ctx.Stop < 0 || (ctx.Stop != 0 && ctx.Stop < ctx.Start) {
		return nil, fmt.Errorf("report: run bounds start %d, stop %d: want milliseconds since the epoch with stop >= start, or 0 when unknown", ctx.Start, ctx.Stop)
	}
	var duration int64
	if ctx.Start > 0 && ctx.Stop > 0 {
		duration = ctx.Stop - ctx.Start
	}
	problems := v.Problems
	if problems == nil {
		problems = []string{} // an empty list reads as "none", null as "not reported"
	}
	name := TestName
	if l.Collective == busbw.AllGather {
		name = AllGatherTestName
	}
	headline := ctrfTest{
		Name:     name,
		Status:   status(v.Pass),
		Duration: duration,
		Message:  headlineMessage(v),
		Type:     testType,
		Extra: headlineExtra{
			Fabric:                fabric,
			RuntimeSource:         source,
			TrainerAction:         ctx.TrainerAction,
			Recipe:                ctx.Recipe,
			PluginVersionPinned:   ctx.PluginVersion,
			PluginVersionObserved: strings.Join(l.PluginVersions, ", "),
			NCCLVersionPinned:     ctx.NCCLVersion,
			NCCLVersionObserved:   l.NCCLVersion,
			NCCLVersionFrom:       l.NCCLVersionFrom,
			TrainerVersion:        ctx.TrainerVersion,
			Collective:            l.Collective,
			CollectiveFrom:        l.CollectiveFrom,
			NCCLTestsVersion:      l.TestsVersion,
			Table:                 l.Table,
			Nodes:                 l.Nodes,
			Ranks:                 l.Ranks,
			Hosts:                 l.Hosts,
			NodesFrom:             l.NodesFrom,
			Network:               strings.Join(l.Networks, ", "),
			NotInLog:              notInLog(l),
			MeasuredBusBWGBps:     v.Measured,
			MeasuredAtBytes:       v.Size,
			Floor:                 v.Floor.String(),
			FloorGBps:             v.Floor.GBps,
			ThresholdGBps:         v.Threshold,
			PassFraction:          busbw.PassFraction,
			AvgBusBWGBps:          l.AvgBusBW,
			Sizes:                 len(l.Rows),
			MaxBytes:              l.MaxBytes,
			Complete:              l.Complete,
			Problems:              problems,
		},
	}
	tests := []ctrfTest{headline}
	for _, c := range v.Checks {
		tests = append(tests, ctrfTest{
			Name:    name + "/" + c.Name,
			Status:  string(c.Status),
			Suite:   []string{name},
			Message: c.Message,
			Type:    testType,
			Extra:   checkExtra{Check: c.Name},
		})
	}
	sum := ctrfSummary{Tests: len(tests), Start: ctx.Start, Stop: ctx.Stop, Duration: duration}
	for _, t := range tests {
		switch busbw.Status(t.Status) {
		case busbw.Passed:
			sum.Passed++
		case busbw.Failed:
			sum.Failed++
		case busbw.Skipped:
			sum.Skipped++
		default:
			return nil, fmt.Errorf("report: check %q has status %q; want passed, failed or skipped", t.Name, t.Status)
		}
	}
	doc := ctrfReport{
		ReportFormat: ctrfFormat,
		SpecVersion:  ctrfSpecVersion,
		GeneratedBy:  toolName,
		Results:      ctrfResults{Tool: ctrfTool{Name: toolName}, Summary: sum, Tests: tests},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // messages quote ">= 300"; keep them readable
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("report: encode CTRF (a measurement is not a finite number?): %w", err)
	}
	return buf.Bytes(), nil
}

func runtimeSource(s string) (string, error) {
	if s == "" {
		return UnknownRuntimeSource, nil
	}
	for _, ok := range RuntimeSources {
		if s == ok {
			return s, nil
		}
	}
	return "", fmt.Errorf("report: runtime source %q: want one of %s (or empty when unrecorded)", s, strings.Join(RuntimeSources, ", "))
}

func status(pass bool) string {
	if pass {
		return string(busbw.Passed)
	}
	return string(busbw.Failed)
}

// headlineMessage is the one line a dashboard shows: the number and the
// threshold, then every problem.
func headlineMessage(v busbw.Verdict) string {
	var b strings.Builder
	if v.Rows > 0 {
		fmt.Fprintf(&b, "%s GB/s out-of-place busbw at %s; pass threshold %s GB/s (%g × the declared floor %s GB/s).",
			busbw.FormatGBps(v.Measured), busbw.FormatSize(v.Size), busbw.FormatGBps(v.Threshold), busbw.PassFraction, v.Floor)
	} else {
		fmt.Fprintf(&b, "Nothing measured; pass threshold %s GB/s (%g × the declared floor %s GB/s).", busbw.FormatGBps(v.Threshold), busbw.PassFraction, v.Floor)
	}
	for _, p := range v.Problems {
		b.WriteString(" ")
		b.WriteString(p)
	}
	return b.String()
}
