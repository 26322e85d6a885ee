package busbw

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// logsDir holds the recorded sample logs shared with the report and the
// nccl-report command.
var logsDir = filepath.Join("..", "..", "..", "testdata", "nccl-logs")

const pinned = "v1.0.15"

func parseFile(t *testing.T, name string) *Log {
	t.Helper()
	f, err := os.Open(filepath.Join(logsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return l
}

func mustFloor(t *testing.T, s string) Floor {
	t.Helper()
	f, err := ParseFloor(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func check(t *testing.T, v Verdict, name string) Check {
	t.Helper()
	for _, c := range v.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("verdict has no %s check: %+v", name, v.Checks)
	return Check{}
}

// problemsContaining counts the problems that mention every one of words.
func problemsContaining(v Verdict, words ...string) int {
	n := 0
	for _, p := range v.Problems {
		all := true
		for _, w := range words {
			all = all && strings.Contains(p, w)
		}
		if all {
			n++
		}
	}
	return n
}

func TestParseHealthy(t *testing.T) {
	l := parseFile(t, "healthy.log")
	if len(l.Rows) != 25 {
		t.Fatalf("%d rows, want 25 (1K..16G doubling)", len(l.Rows))
	}
	for i, r := range l.Rows {
		if want := int64(1024) << i; r.Size != want {
			t.Fatalf("row %d size %d, want %d", i, r.Size, want)
		}
		if r.Count != r.Size/4 || r.Type != "float" || r.RedOp != "sum" || r.Root != -1 {
			t.Fatalf("row %d = %+v", i, r)
		}
	}
	last := l.Rows[24]
	want := Row{Size: 17179869184, Count: 4294967296, Type: "float", RedOp: "sum", Root: -1,
		OOP: Result{TimeUS: 93832, AlgBW: 183.09, BusBW: 343.30, Wrong: 0, Checked: true},
		IP:  Result{TimeUS: 94409, AlgBW: 181.97, BusBW: 341.20, Wrong: 0, Checked: true}}
	if diff := cmp.Diff(want, last); diff != "" {
		t.Fatalf("16G row (-want +got):\n%s", diff)
	}
	if l.Ranks != 16 || l.Nodes != 2 || !slices.Equal(l.Hosts, []string{"nccl-bench-node-0", "nccl-bench-node-1"}) {
		t.Errorf("ranks %d nodes %d hosts %v", l.Ranks, l.Nodes, l.Hosts)
	}
	if l.Collective != AllReduce || l.TestsVersion != "2.13.11" || l.Legacy || l.Validation != 1 {
		t.Errorf("collective %q (%s) tests version %q legacy %v validation %d", l.Collective, l.CollectiveFrom, l.TestsVersion, l.Legacy, l.Validation)
	}
	if l.Network != "FasTrak" || len(l.Networks) != 1 || l.PluginVersion != "1.0.15" || len(l.PluginVersions) != 1 {
		t.Errorf("network %q %v, plugin %q %v", l.Network, l.Networks, l.PluginVersion, l.PluginVersions)
	}
	if l.NCCLVersion != "2.28.7+cuda12.8" {
		t.Errorf("NCCL version %q", l.NCCLVersion)
	}
	if l.MinBytes != 1024 || l.MaxBytes != 17179869184 || l.StepFactor != 2 || l.StepBytes != 0 {
		t.Errorf("parameters min %d max %d factor %d bytes %d", l.MinBytes, l.MaxBytes, l.StepFactor, l.StepBytes)
	}
	if !l.Complete || l.AvgBusBW != 122.429 || l.OutOfBounds != 0 || l.FirstError != "" {
		t.Errorf("complete %v avg %v oob %d firstError %q", l.Complete, l.AvgBusBW, l.OutOfBounds, l.FirstError)
	}
}

func TestEvaluateHealthyPasses(t *testing.T) {
	v := Evaluate(parseFile(t, "healthy.log"), mustFloor(t, ">= 300"), pinned)
	if !v.Pass || len(v.Problems) != 0 {
		t.Fatalf("healthy run failed: %q", v.Problems)
	}
	if v.Measured != 343.30 || v.Size != 17179869184 || v.Threshold != 270 {
		t.Errorf("measured %v at %d, threshold %v", v.Measured, v.Size, v.Threshold)
	}
	for _, c := range v.Checks {
		if c.Status != Passed {
			t.Errorf("check %s = %s: %s", c.Name, c.Status, c.Message)
		}
	}
	if got := check(t, v, CheckFloor).Message; !strings.Contains(got, "343.3 GB/s") || !strings.Contains(got, "270 GB/s") || !strings.Contains(got, "16G") {
		t.Errorf("floor message %q", got)
	}
}

// The measurement is out-of-place busbw at the largest size, not the best or
// the average: the rows are edited so that each of those would differ.
func TestMeasuredIsOutOfPlaceAtLargestSize(t *testing.T) {
	l := parseFile(t, "healthy.log")
	l.Rows[24].OOP.BusBW, l.Rows[24].IP.BusBW = 280, 400
	l.Rows[23].OOP.BusBW = 390
	v := Evaluate(l, mustFloor(t, "300"), pinned)
	if v.Measured != 280 || v.Size != 17179869184 {
		t.Fatalf("measured %v at %d, want 280 at 16G", v.Measured, v.Size)
	}
}

func TestEvaluateTCPFallback(t *testing.T) {
	l := parseFile(t, "tcp-fallback.log")
	if l.Network != "Socket" || l.PluginVersion != "" {
		t.Fatalf("network %q plugin %q", l.Network, l.PluginVersion)
	}
	v := Evaluate(l, mustFloor(t, ">= 300"), pinned)
	if v.Pass {
		t.Fatal("TCP fallback passed")
	}
	if v.Measured != 20.18 {
		t.Errorf("measured %v, want 20.18", v.Measured)
	}
	if len(v.Problems) != 2 {
		t.Fatalf("problems %q, want network then floor", v.Problems)
	}
	if !strings.HasPrefix(v.Problems[0], "NCCL used Socket: inter-node traffic between the 2 nodes went over TCP on eth0; the pod lacks the TCPXO wiring") {
		t.Errorf("first problem %q does not explain the TCP fallback", v.Problems[0])
	}
	if !strings.Contains(v.Problems[1], "below the pass threshold 270 GB/s") {
		t.Errorf("second problem %q", v.Problems[1])
	}
	if c := check(t, v, CheckPlugin); c.Status != Skipped {
		t.Errorf("plugin check %s, want skipped when the log has no plugin line", c.Status)
	}
}

func TestEvaluateWrongResults(t *testing.T) {
	l := parseFile(t, "wrong-results.log")
	v := Evaluate(l, mustFloor(t, ">= 300"), pinned)
	if v.Pass {
		t.Fatal("a run with wrong results passed")
	}
	if check(t, v, CheckFloor).Status != Passed {
		t.Fatal("the sample is meant to pass the floor, so only #wrong can fail it")
	}
	if problemsContaining(v, "wrong results", "256M (3 out-of-place)") != 1 || len(v.Problems) != 1 {
		t.Fatalf("problems %q", v.Problems)
	}
	if l.OutOfBounds != 3 {
		t.Errorf("out of bounds %d, want 3", l.OutOfBounds)
	}
}

func TestWrongInPlaceAlsoFails(t *testing.T) {
	l := parseFile(t, "healthy.log")
	l.Rows[3].IP.Wrong = 7
	v := Evaluate(l, mustFloor(t, "300"), pinned)
	if v.Pass || problemsContaining(v, "8K (7 in-place)") != 1 {
		t.Fatalf("pass %v problems %q", v.Pass, v.Problems)
	}
}

func TestOutOfBoundsWithoutWrongRowFails(t *testing.T) {
	l := parseFile(t, "healthy.log")
	l.OutOfBounds = 2
	v := Evaluate(l, mustFloor(t, "300"), pinned)
	if v.Pass || problemsContaining(v, "2 out-of-bounds") != 1 {
		t.Fatalf("pass %v problems %q", v.Pass, v.Problems)
	}
}

func TestValidationDisabledIsSkippedNotPassed(t *testing.T) {
	l := parseFile(t, "healthy.log")
	for i := range l.Rows {
		l.Rows[i].OOP.Wrong, l.Rows[i].IP.Wrong = -1, -1
		l.Rows[i].OOP.Checked, l.Rows[i].IP.Checked = false, false
	}
	v := Evaluate(l, mustFloor(t, "300"), pinned)
	if c := check(t, v, CheckCorrect); c.Status != Skipped || !strings.Contains(c.Message, "-c 0") {
		t.Fatalf("correctness check %+v", c)
	}
	if !v.Pass {
		t.Fatalf("problems %q", v.Problems)
	}
}

func TestEvaluatePluginMismatch(t *testing.T) {
	l := parseFile(t, "plugin-mismatch.log")
	if l.PluginVersion != "1.0.14" {
		t.Fatalf("plugin %q", l.PluginVersion)
	}
	v := Evaluate(l, mustFloor(t, ">= 300"), pinned)
	if v.Pass || len(v.Problems) != 1 || problemsContaining(v, "1.0.14", "v1.0.15") != 1 {
		t.Fatalf("pass %v problems %q", v.Pass, v.Problems)
	}
	// The expected version matches with or without its leading v.
	for _, want := range []string{"1.0.14", "v1.0.14", " v1.0.14 "} {
		if v := Evaluate(l, mustFloor(t, "300"), want); !v.Pass {
			t.Errorf("expected %q: %q", want, v.Problems)
		}
	}
	// Only one leading v is forgiven: no prefix matching, no other edits.
	for _, want := range []string{"vv1.0.14", "1.0.1", "1.0.140", "V1.0.14"} {
		if v := Evaluate(l, mustFloor(t, "300"), want); v.Pass {
			t.Errorf("expected %q matched plugin 1.0.14", want)
		}
	}
	if v := Evaluate(l, mustFloor(t, "300"), ""); v.Pass || problemsContaining(v, "no expected plugin version") != 1 {
		t.Errorf("empty expected version: pass %v %q", v.Pass, v.Problems)
	}
}

func TestEvaluateTruncated(t *testing.T) {
	l := parseFile(t, "truncated.log")
	if l.Complete || len(l.Rows) != 21 || l.Rows[20].Size != 1<<30 {
		t.Fatalf("complete %v rows %d", l.Complete, len(l.Rows))
	}
	v := Evaluate(l, mustFloor(t, ">= 300"), pinned)
	if v.Pass {
		t.Fatal("truncated run passed")
	}
	if problemsContaining(v, "truncated", "1G", "16G") != 1 {
		t.Fatalf("problems %q", v.Problems)
	}
	// The partial sweep's 1G number happens to clear the threshold; the
	// verdict must fail on truncation alone.
	if c := check(t, v, CheckFloor); c.Status != Passed || len(v.Problems) != 1 || !strings.Contains(c.Message, "1G across 2 nodes (16 ranks), the largest size this incomplete run reached") {
		t.Fatalf("checks %+v", v.Checks)
	}
}

// A trailer without the top sizes (rows lost, or a log spliced together) is
// truncated too: the sizes must reach maxBytes.
func TestSizesShortOfMaxBytesFail(t *testing.T) {
	l := parseFile(t, "healthy.log")
	l.Rows = l.Rows[:24]
	v := Evaluate(l, mustFloor(t, "300"), pinned)
	if v.Pass || problemsContaining(v, "truncated", "stop at 8G", "16G") != 1 {
		t.Fatalf("pass %v problems %q", v.Pass, v.Problems)
	}
}

func TestStepsShort(t *testing.T) {
	rows := func(last int64) []Row { return []Row{{Size: last}} }
	for _, tc := range []struct {
		name string
		l    Log
		want bool
	}{
		{"factor reaches max", Log{Rows: rows(16 << 30), MaxBytes: 16 << 30, StepFactor: 2}, false},
		{"factor one step short", Log{Rows: rows(8 << 30), MaxBytes: 16 << 30, StepFactor: 2}, true},
		{"factor, max not a power of two", Log{Rows: rows(8 << 30), MaxBytes: 12 << 30, StepFactor: 2}, false},
		{"bytes reaches", Log{Rows: rows(10 << 20), MaxBytes: 11 << 20, StepBytes: 2 << 20}, false},
		{"bytes short", Log{Rows: rows(8 << 20), MaxBytes: 11 << 20, StepBytes: 2 << 20}, true},
		{"no step known", Log{Rows: rows(8 << 20), MaxBytes: 16 << 20}, true},
	} {
		if got := stepsShort(&tc.l); got != tc.want {
			t.Errorf("%s: stepsShort = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEvaluateEmptyTable(t *testing.T) {
	l := parseFile(t, "empty-table.log")
	if len(l.Rows) != 0 || l.Complete {
		t.Fatalf("rows %d complete %v", len(l.Rows), l.Complete)
	}
	if !strings.Contains(l.FirstError, "NCCL WARN NET/FasTrak: cannot connect to the RxDM") {
		t.Errorf("first error %q", l.FirstError)
	}
	v := Evaluate(l, mustFloor(t, ">= 300"), pinned)
	if v.Pass || v.Measured != 0 || v.Size != 0 {
		t.Fatalf("pass %v measured %v at %d", v.Pass, v.Measured, v.Size)
	}
	if len(v.Problems) != 1 || problemsContaining(v, "table is empty", "cannot connect to the RxDM") != 1 {
		t.Fatalf("problems %q", v.Problems)
	}
	if check(t, v, CheckFloor).Status != Skipped || check(t, v, CheckCorrect).Status != Skipped {
		t.Errorf("checks %+v", v.Checks)
	}
}

// A table with its header and trailer but no rows (e.g. -b above -e) is
// empty, complete, and still a failure.
func TestEvaluateEmptyCompleteTable(t *testing.T) {
	in := "# nThread 1 nGpus 1 minBytes 34359738368 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : nan\n"
	l, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if !l.Complete || l.AvgBusBW != 0 || len(l.Rows) != 0 {
		t.Fatalf("complete %v avg %v rows %d", l.Complete, l.AvgBusBW, len(l.Rows))
	}
	if v := Evaluate(l, mustFloor(t, "300"), pinned); v.Pass || problemsContaining(v, "table is empty") != 1 {
		t.Fatalf("pass %v problems %q", v.Pass, v.Problems)
	}
}

func TestEvaluateNilLogFails(t *testing.T) {
	v := Evaluate(nil, mustFloor(t, "300"), pinned)
	if v.Pass || len(v.Problems) == 0 {
		t.Fatalf("nil log: %+v", v)
	}
}

// Exactly 0.9 × the floor passes; a hundredth below fails. Floors whose 0.9×
// product is inexact in binary are included on purpose.
func TestThresholdEdge(t *testing.T) {
	for _, tc := range []struct {
		floor                string
		threshold, justBelow float64
		thresholdText        string
	}{
		{">= 300", 270, 269.99, "270"},
		{">= 250", 225, 224.99, "225"},
		{">= 100", 90, 89.99, "90"},
		{"21", 18.9, 18.89, "18.9"}, // 21*0.9 != 18.9 in float64; 21*9/10 == 18.9
		{"333", 299.7, 299.69, "299.7"},
		{"3", 2.7, 2.69, "2.7"},
		{"123.4", 111.06, 111.05, "111.06"},
	} {
		f := mustFloor(t, tc.floor)
		// Whole-number floors give the decimal threshold exactly; a
		// fractional one may be an ulp off, which the comparison absorbs.
		if d := math.Abs(f.Threshold() - tc.threshold); d > 1e-12 || (f.GBps == math.Trunc(f.GBps) && d != 0) {
			t.Errorf("%s: threshold %v, want %v", tc.floor, f.Threshold(), tc.threshold)
		}
		l := parseFile(t, "healthy.log")
		l.Rows[24].OOP.BusBW = tc.threshold
		if v := Evaluate(l, f, pinned); !v.Pass {
			t.Errorf("%s: exactly %v failed: %q", tc.floor, tc.threshold, v.Problems)
		} else if m := check(t, v, CheckFloor).Message; !strings.Contains(m, "at or above the pass threshold "+tc.thresholdText+" GB/s") {
			t.Errorf("%s: message %q", tc.floor, m)
		}
		l.Rows[24].OOP.BusBW = tc.justBelow
		if v := Evaluate(l, f, pinned); v.Pass {
			t.Errorf("%s: %v passed a threshold of %v", tc.floor, tc.justBelow, tc.threshold)
		}
	}
}

func TestInvalidFloorFailsClosed(t *testing.T) {
	l := parseFile(t, "healthy.log")
	for _, f := range []Floor{{}, {Op: ">=", GBps: 0}, {Op: "<=", GBps: 300}, {Op: ">=", GBps: -1}} {
		if v := Evaluate(l, f, pinned); v.Pass || problemsContaining(v, "No valid bandwidth floor") != 1 {
			t.Errorf("floor %+v: pass %v problems %q", f, v.Pass, v.Problems)
		}
	}
}

func TestParseFloor(t *testing.T) {
	// The recipe's grammar, one parser for both: "> N" is a floor as in a
	// recipe, an exponent is not (the recipe never accepted one).
	for in, want := range map[string]float64{">= 300": 300, ">=300": 300, "300": 300, "  >=  250.5 ": 250.5, "> 300": 300} {
		f, err := ParseFloor(in)
		if err != nil || f.GBps != want || f.Op != ">=" {
			t.Errorf("ParseFloor(%q) = %+v, %v", in, f, err)
		}
	}
	for _, in := range []string{"", ">=", "1e2", "0x1p9", "1e308", "10001", "<= 300", "== 300", "300 GB/s", "0", "-5", ">= -5", "NaN", "Inf", ">= 3OO", "300,5"} {
		if f, err := ParseFloor(in); err == nil {
			t.Errorf("ParseFloor(%q) = %+v, want an error", in, f)
		} else if !strings.Contains(err.Error(), ">= 300") {
			t.Errorf("ParseFloor(%q): %v does not show the expected form", in, err)
		}
	}
	if s := mustFloor(t, ">=300").String(); s != ">= 300" {
		t.Errorf("String() = %q", s)
	}
}

const params = "# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"

const header = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"

func row(size int64, busbw string) string {
	return strings.Join([]string{itoa(size), itoa(size / 4), "float", "sum", "-1", "10.00", "1.00", busbw, "0", "10.00", "1.00", busbw, "0"}, "  ")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Launchers and collectors prefix lines in several ways; rows and NCCL lines
// are found through all of them, and the noise between them is ignored.
func TestParseToleratesPrefixesAndNoise(t *testing.T) {
	in := strings.Join([]string{
		"2025-03-04T10:11:12.123456789Z [1,0]<stdout>:" + strings.TrimSuffix(params, "\n"),
		"[pod/nccl-launcher-x7k2p/mpi-launcher] [1,8]<stdout>:gke-b:267:267 [0] NCCL INFO Using network FasTrak",
		"[nccl-bench-node-0:00211] 1 more process has sent help message help-mpi-btl-base.txt / btl:no-nics",
		"[nccl-bench-node-0:00211] Set MCA parameter \"orte_base_help_aggregate\" to 0 to see all help / error messages",
		"gke-a:211:211 [0] NCCL INFO NET/FasTrak: Initializing network FasTrak, version: v1.0.15,",
		"Warning: Permanently added 'x' (ED25519) to the list of known hosts.",
		"gke-a: " + row(1024, "0.04"),
		"2025-03-04T10:11:13+02:00 " + row(2048, "0.08"),
		"[1,0]<stderr>:gke-a:211:300 [0] NCCL WARN some transient warning",
		"[1,0]<stdout>:# Out of bounds values : 0 OK",
		"[1,0]<stdout>:# Avg bus bandwidth    : 0.06 ",
	}, "\r\n") + "\r\n"
	l, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Rows) != 2 || l.Rows[1].OOP.BusBW != 0.08 || !l.Complete || l.MaxBytes != 2048 {
		t.Fatalf("rows %+v complete %v max %d", l.Rows, l.Complete, l.MaxBytes)
	}
	if l.Network != "FasTrak" || l.PluginVersion != "v1.0.15" {
		t.Errorf("network %q plugin %q", l.Network, l.PluginVersion)
	}
	if l.FirstError != "gke-a:211:300 [0] NCCL WARN some transient warning" {
		t.Errorf("first error %q", l.FirstError)
	}
	if v := Evaluate(l, mustFloor(t, "0.05"), "1.0.15"); !v.Pass {
		t.Errorf("problems %q", v.Problems)
	}
}

func TestParseMixedNetworks(t *testing.T) {
	in := params + "a:1:1 [0] NCCL INFO Using network FasTrak\nb:2:2 [0] NCCL INFO Using network Socket\na:1:1 [1] NCCL INFO Using network FasTrak\n" +
		row(1024, "1") + "\n" + row(2048, "400") + "\n# Avg bus bandwidth : 1\n"
	l, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if l.Network != "FasTrak" || strings.Join(l.Networks, ",") != "FasTrak,Socket" {
		t.Fatalf("network %q %v", l.Network, l.Networks)
	}
	v := Evaluate(l, mustFloor(t, "300"), pinned)
	if v.Pass || problemsContaining(v, "NCCL used Socket on some ranks (FasTrak on others)") != 1 {
		t.Fatalf("pass %v problems %q", v.Pass, v.Problems)
	}
}

func TestNetworkOtherThanSocket(t *testing.T) {
	l := parseFile(t, "healthy.log")
	l.Network, l.Networks = "IB", []string{"IB"}
	if v := Evaluate(l, mustFloor(t, "300"), pinned); v.Pass || problemsContaining(v, "NCCL used IB, not FasTrak") != 1 {
		t.Fatalf("pass %v problems %q", v.Pass, v.Problems)
	}
}

// Without NCCL INFO lines the network and plugin are unknown, which is not a
// failure: bandwidth alone still separates TCPXO from TCP.
func TestNoNCCLInfoLines(t *testing.T) {
	in := params + row(1024, "1") + "\n" + row(2048, "400") + "\n# Avg bus bandwidth : 1\n"
	l, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	v := Evaluate(l, mustFloor(t, "300"), pinned)
	if !v.Pass || check(t, v, CheckNetwork).Status != Skipped || check(t, v, CheckPlugin).Status != Skipped {
		t.Fatalf("pass %v checks %+v", v.Pass, v.Checks)
	}
}

func TestMissingParameterLineFails(t *testing.T) {
	in := row(1024, "1") + "\n" + row(2048, "400") + "\n# Avg bus bandwidth : 1\n"
	l, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if v := Evaluate(l, mustFloor(t, "300"), pinned); v.Pass || problemsContaining(v, "parameter line") != 1 {
		t.Fatalf("pass %v problems %q", v.Pass, v.Problems)
	}
}

func TestParseRejectsMalformedRows(t *testing.T) {
	good := row(1024, "1")
	for name, line := range map[string]string{
		"missing column": strings.TrimSuffix(good, "  0"),
		"extra column":   good + "  0",
		"bad busbw":      strings.Replace(good, "  1  0", "  x  0", 1),
		"negative busbw": row(1024, "-1"),
		"nan busbw":      row(1024, "nan"),
		"inf busbw":      row(1024, "inf"),
		"bad wrong":      strings.Replace(good, "  1  0", "  1  many", 1),
		"negative wrong": strings.Replace(good, "  1  0", "  1  -2", 1),
		"bad root":       strings.Replace(good, "-1", "root", 1),
		"negative count": strings.Replace(good, "1024  256", "1024  -256", 1),
		"bad timestamp":  good + "  2025-06-03 17:40",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(params + line + "\n# Avg bus bandwidth : 1\n"))
			if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "malformed") {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestParseNAWrong(t *testing.T) {
	line := strings.ReplaceAll(row(1024, "1"), "  0", "  N/A")
	l, err := Parse(strings.NewReader(params + line + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Rows[0].OOP.Wrong != -1 || l.Rows[0].IP.Wrong != -1 {
		t.Fatalf("row %+v", l.Rows[0])
	}
}

func TestParseRejectsOutOfOrderAndSecondRun(t *testing.T) {
	for name, in := range map[string]string{
		"descending":      params + row(2048, "1") + "\n" + row(1024, "1") + "\n",
		"second run":      params + row(1024, "1") + "\n" + params,
		"two param lines": params + params,
		"second header":   params + header + row(1024, "1") + "\n" + header,
	} {
		if _, err := Parse(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "one run per file") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// A last line cut mid-write (no newline) is a torn row from a killed pod,
// not a malformed log: it is dropped and the run reads as truncated.
func TestParseTornLastLine(t *testing.T) {
	torn := row(2048, "400")[:40]
	l, err := Parse(strings.NewReader(params + row(1024, "1") + "\n" + torn))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Rows) != 1 || l.Complete {
		t.Fatalf("rows %d complete %v", len(l.Rows), l.Complete)
	}
	// The same line with its newline is a malformed row.
	if _, err := Parse(strings.NewReader(params + row(1024, "1") + "\n" + torn + "\n")); err == nil {
		t.Fatal("a newline-terminated partial row was accepted")
	}
	// A complete last row without a newline is kept.
	l, err = Parse(strings.NewReader(params + row(1024, "1") + "\n" + row(2048, "400")))
	if err != nil || len(l.Rows) != 2 {
		t.Fatalf("rows %v err %v", l, err)
	}
}

func TestParseNoOutput(t *testing.T) {
	for name, in := range map[string]string{
		"empty":          "",
		"yaml":           "apiVersion: v1\nkind: Pod\n",
		"only mpi noise": "[host:1] 1 more process has sent help message\nMPI_ABORT was invoked on rank 0\n",
		// Another tool's "size ... busbw" table (AWS Neuron's nccom-test).
		"nccom-test": "     size(B)    count(elems)     type    time(us)    algbw(GB/s)    busbw(GB/s)\n    33554432        33554432    uint8         768          40.69          40.69\nAvg bus bandwidth:      40.6901GB/s\n",
	} {
		if _, err := Parse(strings.NewReader(in)); !errors.Is(err, ErrNoOutput) {
			t.Errorf("%s: err = %v, want ErrNoOutput", name, err)
		}
	}
}

func TestParseReadError(t *testing.T) {
	r := io.MultiReader(strings.NewReader(params), iotest.ErrReader(errors.New("disk on fire")))
	if _, err := Parse(r); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v", err)
	}
}

// An overlong noise line is skipped without buffering it whole, and rows
// after it are still found.
func TestParseLongNoiseLine(t *testing.T) {
	in := params + strings.Repeat("x", 3*maxLine) + "\n" + row(1024, "1") + "\n"
	l, err := Parse(strings.NewReader(in))
	if err != nil || len(l.Rows) != 1 {
		t.Fatalf("rows %v err %v", l, err)
	}
}

func TestParseAllSampleLogs(t *testing.T) {
	entries, err := os.ReadDir(logsDir)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			parseFile(t, e.Name())
			seen++
		}
	}
	if seen < 6 {
		t.Fatalf("%d sample logs, want at least 6", seen)
	}
	// The floor is for all_reduce_perf, and every sample is one.
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			if err := parseFile(t, e.Name()).CheckCollective(AllReduce); err != nil {
				t.Errorf("%s: %v", e.Name(), err)
			}
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{1024: "1K", 512 << 10: "512K", 1 << 20: "1M", 16 << 30: "16G", 1 << 40: "1T", 1000: "1000B", 1536: "1536B", 3 << 20: "3M"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFormatGBps(t *testing.T) {
	for x, want := range map[float64]string{270: "270", 299.7: "299.7", 343.30: "343.3", 0.04: "0.04", 111.06: "111.06", 0: "0"} {
		if got := FormatGBps(x); got != want {
			t.Errorf("FormatGBps(%v) = %q, want %q", x, got, want)
		}
	}
}
