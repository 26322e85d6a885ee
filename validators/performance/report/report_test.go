package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var logsDir = filepath.Join("..", "..", "..", "testdata", "nccl-logs")

var samples = []string{"healthy", "tcp-fallback", "wrong-results", "plugin-mismatch", "truncated", "empty-table"}

func judge(t *testing.T, name string) (*busbw.Log, busbw.Verdict) {
	t.Helper()
	f, err := os.Open(filepath.Join(logsDir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := busbw.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	floor, err := busbw.ParseFloor(">= 300")
	if err != nil {
		t.Fatal(err)
	}
	return l, busbw.Evaluate(l, floor, "v1.0.15")
}

var ctx = Context{RuntimeSource: "shipped", TrainerAction: "use-declared", PluginVersion: "v1.0.15", NCCLVersion: "2.28.7", TrainerVersion: "v2.2.0", Recipe: "h100-gke-training.yaml"}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; review the change and run go test -update", name)
	}
}

// ---- CTRF ----

// The keys the CTRF JSON schema (ctrf-io/ctrf schema/ctrf.schema.json)
// allows, for the objects this report emits; every one of them sets
// additionalProperties: false, so an unknown key makes the report invalid.
var (
	rootRequired    = []string{"results", "reportFormat", "specVersion"}
	rootAllowed     = []string{"reportFormat", "specVersion", "reportId", "timestamp", "generatedBy", "extra", "results", "insights", "baseline"}
	resultsRequired = []string{"tool", "summary", "tests"}
	resultsAllowed  = []string{"tool", "summary", "tests", "environment", "extra"}
	toolAllowed     = []string{"name", "version", "extra"}
	summaryRequired = []string{"tests", "passed", "failed", "skipped", "pending", "other", "start", "stop"}
	summaryAllowed  = append(slices.Clone(summaryRequired), "flaky", "suites", "duration", "extra")
	testRequired    = []string{"name", "status", "duration"}
	testAllowed     = []string{"id", "name", "status", "duration", "start", "stop", "suite", "message", "trace", "snippet", "ai", "line", "rawStatus", "tags", "labels", "type", "filePath", "retries", "retryAttempts", "flaky", "stdout", "stderr", "threadId", "browser", "device", "screenshot", "attachments", "parameters", "steps", "insights", "extra"}
	statuses        = []string{"passed", "failed", "skipped", "pending", "other"}
)

func keys(t *testing.T, where string, obj map[string]any, required, allowed []string) {
	t.Helper()
	for _, k := range required {
		if _, ok := obj[k]; !ok {
			t.Errorf("%s lacks required %q", where, k)
		}
	}
	for k := range obj {
		if !slices.Contains(allowed, k) {
			t.Errorf("%s has %q, which the CTRF schema does not allow", where, k)
		}
	}
}

func integer(t *testing.T, where string, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%s = %v (%T), want an integer", where, v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%s = %s, want an integer", where, n)
	}
	return i
}

func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, data)
	}
	return doc
}

// validateCTRF checks a report against the CTRF schema's rules for the parts
// this package emits: required and permitted keys, the format constant, a
// semver spec version, integer counts and times, the status enum, and that
// the summary counts agree with the tests.
func validateCTRF(t *testing.T, data []byte) (summary map[string]any, tests []map[string]any) {
	t.Helper()
	doc := decode(t, data)
	keys(t, "report", doc, rootRequired, rootAllowed)
	if doc["reportFormat"] != "CTRF" {
		t.Errorf("reportFormat %v", doc["reportFormat"])
	}
	if sv, _ := doc["specVersion"].(string); len(strings.Split(sv, ".")) != 3 {
		t.Errorf("specVersion %q is not MAJOR.MINOR.PATCH", sv)
	}
	results := doc["results"].(map[string]any)
	keys(t, "results", results, resultsRequired, resultsAllowed)
	tool := results["tool"].(map[string]any)
	keys(t, "tool", tool, []string{"name"}, toolAllowed)
	if tool["name"] != "tcpxogen" {
		t.Errorf("tool name %v", tool["name"])
	}
	summary = results["summary"].(map[string]any)
	keys(t, "summary", summary, summaryRequired, summaryAllowed)
	counts := map[string]int64{}
	for _, k := range summaryRequired {
		counts[k] = integer(t, "summary."+k, summary[k])
	}
	raw := results["tests"].([]any)
	perStatus := map[string]int64{}
	for i, r := range raw {
		tc := r.(map[string]any)
		tests = append(tests, tc)
		keys(t, "test", tc, testRequired, testAllowed)
		integer(t, "test duration", tc["duration"])
		st, _ := tc["status"].(string)
		if !slices.Contains(statuses, st) {
			t.Errorf("test %d status %q", i, st)
		}
		perStatus[st]++
		if s, ok := tc["suite"]; ok && len(s.([]any)) == 0 {
			t.Errorf("test %d suite is empty; the schema wants at least one item", i)
		}
		if n, _ := tc["name"].(string); n == "" {
			t.Errorf("test %d has an empty name", i)
		}
	}
	if counts["tests"] != int64(len(raw)) {
		t.Errorf("summary.tests %d, %d tests", counts["tests"], len(raw))
	}
	for _, st := range statuses {
		if counts[st] != perStatus[st] {
			t.Errorf("summary.%s %d, %d tests with that status", st, counts[st], perStatus[st])
		}
	}
	return summary, tests
}

func TestCTRFEverySampleIsValid(t *testing.T) {
	for _, name := range samples {
		t.Run(name, func(t *testing.T) {
			l, v := judge(t, name)
			data, err := CTRF(v, l, ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, tests := validateCTRF(t, data)
			head := tests[0]
			if head["name"] != TestName {
				t.Fatalf("first test %v, want %s", head["name"], TestName)
			}
			want := "failed"
			if v.Pass {
				want = "passed"
			}
			if head["status"] != want {
				t.Errorf("headline status %v, verdict pass=%v", head["status"], v.Pass)
			}
			if len(tests) != 1+len(v.Checks) {
				t.Errorf("%d tests, want the headline and %d checks", len(tests), len(v.Checks))
			}
			for _, p := range v.Problems {
				if !strings.Contains(head["message"].(string), p) {
					t.Errorf("headline message lacks problem %q", p)
				}
			}
		})
	}
}

func TestCTRFHealthy(t *testing.T) {
	l, v := judge(t, "healthy")
	data, err := CTRF(v, l, ctx)
	if err != nil {
		t.Fatal(err)
	}
	summary, tests := validateCTRF(t, data)
	if summary["passed"] != json.Number("9") || summary["failed"] != json.Number("0") {
		t.Errorf("summary %v", summary)
	}
	extra := tests[0]["extra"].(map[string]any)
	for k, want := range map[string]any{
		"runtimeSource":         "shipped",
		"trainerAction":         "use-declared",
		"recipe":                "h100-gke-training.yaml",
		"pluginVersionPinned":   "v1.0.15",
		"pluginVersionObserved": "1.0.15",
		"ncclVersionPinned":     "2.28.7",
		"ncclVersionObserved":   "2.28.7+cuda12.8",
		"trainerVersion":        "v2.2.0",
		"nodes":                 json.Number("2"),
		"ranks":                 json.Number("16"),
		"collective":            "all_reduce_perf",
		"ncclTestsVersion":      "2.13.11",
		"measuredBusBwGBps":     json.Number("343.3"),
		"measuredAtBytes":       json.Number("17179869184"),
		"floor":                 ">= 300",
		"floorGBps":             json.Number("300"),
		"thresholdGBps":         json.Number("270"),
		"passFraction":          json.Number("0.9"),
		"network":               "FasTrak",
		"complete":              true,
	} {
		if extra[k] != want {
			t.Errorf("extra.%s = %v (%T), want %v", k, extra[k], extra[k], want)
		}
	}
	if p, ok := extra["problems"].([]any); !ok || len(p) != 0 {
		t.Errorf("problems = %v, want an empty list (not null)", extra["problems"])
	}
	if n, ok := extra["notInLog"].([]any); !ok || len(n) != 0 {
		t.Errorf("notInLog = %v, want an empty list: the healthy log shows every fact", extra["notInLog"])
	}
	golden(t, "healthy.ctrf.json", data)
}

func TestCTRFChecksAreTests(t *testing.T) {
	l, v := judge(t, "tcp-fallback")
	data, err := CTRF(v, l, ctx)
	if err != nil {
		t.Fatal(err)
	}
	summary, tests := validateCTRF(t, data)
	got := map[string]string{}
	for _, tc := range tests[1:] {
		got[tc["name"].(string)] = tc["status"].(string)
		if s := tc["suite"].([]any); len(s) != 1 || s[0] != TestName {
			t.Errorf("%v suite %v", tc["name"], s)
		}
	}
	want := map[string]string{
		"nccl-all-reduce-bw/run-complete":    "passed",
		"nccl-all-reduce-bw/results-correct": "passed",
		"nccl-all-reduce-bw/inter-node":      "passed",
		"nccl-all-reduce-bw/network":         "failed",
		"nccl-all-reduce-bw/plugin-version":  "skipped",
		"nccl-all-reduce-bw/bandwidth-floor": "failed",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
	if summary["failed"] != json.Number("3") || summary["skipped"] != json.Number("1") || summary["passed"] != json.Number("5") {
		t.Errorf("summary %v", summary)
	}
	extra := tests[0]["extra"].(map[string]any)
	if extra["network"] != "Socket" || extra["pluginVersionObserved"] != nil || extra["pluginVersionPinned"] != "v1.0.15" {
		t.Errorf("extra %v", extra)
	}
	// The log has no plugin line: the report says so rather than showing
	// the pinned version as if it had been seen.
	if n, ok := extra["notInLog"].([]any); !ok || !slices.Equal(n, []any{"pluginVersion"}) {
		t.Errorf("notInLog = %v, want [pluginVersion]", extra["notInLog"])
	}
	golden(t, "tcp-fallback.ctrf.json", data)
}

func TestCTRFRuntimeSource(t *testing.T) {
	l, v := judge(t, "healthy")
	for in, want := range map[string]string{"": "unknown", "shipped": "shipped", "validator": "validator", "user": "user"} {
		data, err := CTRF(v, l, Context{RuntimeSource: in})
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		_, tests := validateCTRF(t, data)
		if got := tests[0]["extra"].(map[string]any)["runtimeSource"]; got != want {
			t.Errorf("runtime source %q reported as %v, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"Shipped", "fixture", "unknown"} {
		if _, err := CTRF(v, l, Context{RuntimeSource: bad}); err == nil || !strings.Contains(err.Error(), "shipped, validator, user") {
			t.Errorf("runtime source %q: err = %v", bad, err)
		}
	}
}

func TestCTRFTimes(t *testing.T) {
	l, v := judge(t, "healthy")
	data, err := CTRF(v, l, Context{Start: 1_700_000_000_000, Stop: 1_700_000_095_500})
	if err != nil {
		t.Fatal(err)
	}
	summary, tests := validateCTRF(t, data)
	if summary["start"] != json.Number("1700000000000") || summary["stop"] != json.Number("1700000095500") || summary["duration"] != json.Number("95500") {
		t.Errorf("summary %v", summary)
	}
	if tests[0]["duration"] != json.Number("95500") {
		t.Errorf("headline duration %v", tests[0]["duration"])
	}
	for _, c := range []Context{{Start: 10, Stop: 5}, {Start: -1}, {Stop: -1}} {
		if _, err := CTRF(v, l, c); err == nil {
			t.Errorf("start %d stop %d accepted", c.Start, c.Stop)
		}
	}
}

// Nothing in the report comes from the clock or randomness: the same input
// gives the same bytes, and no timestamp or random id is emitted.
func TestCTRFDeterministic(t *testing.T) {
	l, v := judge(t, "wrong-results")
	a, err := CTRF(v, l, ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := CTRF(v, l, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two renderings differ")
	}
	doc := decode(t, a)
	for _, k := range []string{"timestamp", "reportId"} {
		if _, ok := doc[k]; ok {
			t.Errorf("report carries %q", k)
		}
	}
}

func TestCTRFRejectsNonFinite(t *testing.T) {
	l, v := judge(t, "healthy")
	v.Measured = math.NaN()
	if _, err := CTRF(v, l, ctx); err == nil || !strings.Contains(err.Error(), "finite") {
		t.Fatalf("err = %v", err)
	}
}

func TestCTRFNilLog(t *testing.T) {
	v := busbw.Evaluate(nil, busbw.Floor{Op: ">=", GBps: 300}, "v1.0.15")
	data, err := CTRF(v, nil, Context{})
	if err != nil {
		t.Fatal(err)
	}
	_, tests := validateCTRF(t, data)
	if tests[0]["status"] != "failed" {
		t.Fatalf("nil log headline %v", tests[0]["status"])
	}
}
