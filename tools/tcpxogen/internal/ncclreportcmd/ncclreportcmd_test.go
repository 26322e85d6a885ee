package ncclreportcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

var logsDir = filepath.Join("..", "..", "..", "..", "testdata", "nccl-logs")

func sample(name string) string { return filepath.Join(logsDir, name) }

func published(name string) string { return filepath.Join(logsDir, "published", name) }

func ncclReport(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var o, e bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"nccl-report"}, args...), cli.Streams{Out: &o, Err: &e}, Commands())
	return code, o.String(), e.String()
}

// written reads both outputs and checks each is what it claims to be: CTRF
// JSON whose headline status matches the exit code, and well-formed SVG.
func written(t *testing.T, dir string, code int) (ctrf map[string]any, svg string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatalf("report not written: %v", err)
	}
	if err := json.Unmarshal(data, &ctrf); err != nil || ctrf["reportFormat"] != "CTRF" {
		t.Fatalf("report is not CTRF JSON (%v):\n%s", err, data)
	}
	head := ctrf["results"].(map[string]any)["tests"].([]any)[0].(map[string]any)
	want := map[int]string{cli.ExitOK: "passed", cli.ExitFailure: "failed"}[code]
	if head["name"] != "nccl-all-reduce-bw" || head["status"] != want {
		t.Errorf("headline %v %v, exit %d", head["name"], head["status"], code)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ChartFile))
	if err != nil {
		t.Fatalf("chart not written: %v", err)
	}
	dec := xml.NewDecoder(bytes.NewReader(raw))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("chart is not XML: %v", err)
		}
	}
	return ctrf, string(raw)
}

func noFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("bad input left files behind: %v", entries)
	}
}

func TestEverySampleLog(t *testing.T) {
	for _, tc := range []struct {
		log     string
		code    int
		summary []string
	}{
		{"healthy.log", cli.ExitOK, []string{"nccl-report: PASS", "measured   343.3 GB/s out-of-place busbw at 16G", "threshold  270 GB/s (0.9 × declared floor >= 300 GB/s)", "network    FasTrak", "plugin     1.0.15 (expected " + tcpxo.PluginVersion + ")", "25 sizes, 1K..16G, complete", "benchmark  all_reduce_perf", "nodes      16 ranks on 2 node(s): nccl-bench-node-0, nccl-bench-node-1", "nccl       2.28.7+cuda12.8, from the 'NCCL INFO NCCL version' line (pinned " + tcpxo.NCCLVersion + ")"}},
		{"tcp-fallback.log", cli.ExitFailure, []string{"nccl-report: FAIL", "measured   20.18 GB/s", "network    Socket", "plugin     not in the log", "nodes      16 ranks on 2 node(s)", "- NCCL used Socket: inter-node traffic between the 2 nodes went over TCP on eth0; the pod lacks the TCPXO wiring", "below the pass threshold 270 GB/s"}},
		{"wrong-results.log", cli.ExitFailure, []string{"nccl-report: FAIL", "measured   341.29 GB/s", "- nccl-tests found wrong results (#wrong > 0) at 256M (3 out-of-place)"}},
		{"plugin-mismatch.log", cli.ExitFailure, []string{"nccl-report: FAIL", "plugin     1.0.14 (expected v1.0.15)", "- The pods loaded FasTrak plugin 1.0.14 but the BOM pins v1.0.15"}},
		{"truncated.log", cli.ExitFailure, []string{"nccl-report: FAIL", "21 sizes, 1K..1G, no closing trailer", "- The run is truncated: the last size measured is 1G"}},
		{"empty-table.log", cli.ExitFailure, []string{"nccl-report: FAIL", "measured   nothing", "no data rows", "benchmark  not named in the log", "- The results table is empty", "cannot connect to the RxDM"}},
	} {
		t.Run(tc.log, func(t *testing.T) {
			dir := t.TempDir()
			code, out, stderr := ncclReport(t, "--log", sample(tc.log), "--out", dir)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, stderr)
			}
			for _, want := range tc.summary {
				if !strings.Contains(out, want) {
					t.Errorf("summary lacks %q:\n%s", want, out)
				}
			}
			for _, f := range []string{ReportFile, ChartFile} {
				if !strings.Contains(out, filepath.Join(dir, f)) {
					t.Errorf("summary does not name %s", f)
				}
			}
			if tc.code == cli.ExitFailure && !strings.Contains(stderr, "the benchmark failed with") {
				t.Errorf("stderr %q", stderr)
			}
			if tc.code == cli.ExitOK && stderr != "" {
				t.Errorf("stderr on success: %q", stderr)
			}
			written(t, dir, code)
		})
	}
}

// The published logs through the command: the exit code a careful engineer
// gives each (README.md in testdata/nccl-logs/published says why), and the
// line of the summary that says why.
func TestPublishedLogs(t *testing.T) {
	for _, tc := range []struct {
		log  string
		code int
		want string
	}{
		{"gke-a3mega-2node-mpirun.log", cli.ExitOK, "nodes      16 ranks on 2 node(s)"},
		{"dstack-2604-nebius-ib-2node.log", cli.ExitOK, "measured   477.69 GB/s"},
		{"synthetic-kubectl-prefix-timestamps.log", cli.ExitOK, "network    FasTrak"},
		{"synthetic-per-iteration-timestamps.log", cli.ExitOK, "23 columns"},
		{"skypilot-gcp-a100-2node.log", cli.ExitFailure, "below the pass threshold"},
		{"eks-efa-t4-2node-tagged-size0.log", cli.ExitFailure, "- NCCL used AWS Libfabric, not FasTrak"},
		{"eks-karpenter-socket-excerpt.log", cli.ExitFailure, "lacks the nccl-tests parameter line"},
		{"aws-k8s-tester-464-socket-indented.log", cli.ExitFailure, "inter-node traffic between the 2 nodes went over TCP"},
		{"ibm-pcb-1-single-node-h100.log", cli.ExitFailure, "- The run had one node"},
		{"nccl-1530-single-node-rtx4090-g8.log", cli.ExitFailure, "- The run had one node"},
		{"nccl-tests-249-hash-stripped-single-gpu.log", cli.ExitFailure, "its only rank ran on one host"},
		{"synthetic-single-node-socket.log", cli.ExitFailure, "- The run had one node"},
		{"nccl-tests-176-legacy-error-column.log", cli.ExitFailure, "pre-2.13 nccl-tests table"},
		{"awsome-slurm-srun-label-p4de.log", cli.ExitFailure, "measured   24 GB/s out-of-place busbw at 25M"},
		{"gke-a3mega-benchmark-wrapper-no-validation.log", cli.ExitFailure, "benchmark  all_reduce_perf, from the benchmark name on line 1"},
		{"synthetic-wrong-scientific.log", cli.ExitFailure, "(1.04858e+06 out-of-place)"},
		{"triton-distributed-137-all-gather.log", cli.ExitUsage, "all_gather_perf"},
		{"bottlerocket-304-eks-all-gather-indented.log", cli.ExitUsage, "redop \"none\""},
		{"nccl-tests-128-reduce-scatter-size0.log", cli.ExitUsage, "reduce_scatter"},
		{"synthetic-torchrun-size-busbw.log", cli.ExitUsage, "not an nccl-tests log"},
	} {
		t.Run(tc.log, func(t *testing.T) {
			dir := t.TempDir()
			code, out, stderr := ncclReport(t, "--log", published(tc.log), "--out", dir)
			if code != tc.code || !strings.Contains(out+stderr, tc.want) {
				t.Fatalf("exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", code, tc.code, tc.want, out, stderr)
			}
			if tc.code == cli.ExitUsage {
				noFiles(t, dir)
				return
			}
			written(t, dir, code)
		})
	}
}

// The CTRF report records what the log showed next to what was pinned, and
// names what the log did not show.
func TestReportRecordsObservedVersions(t *testing.T) {
	dir := t.TempDir()
	if code, out, stderr := ncclReport(t, "--log", published("eks-efa-t4-2node-tagged-size0.log"), "--out", dir); code != cli.ExitFailure {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	ctrf, _ := written(t, dir, cli.ExitFailure)
	extra := ctrf["results"].(map[string]any)["tests"].([]any)[0].(map[string]any)["extra"].(map[string]any)
	for k, want := range map[string]any{
		"ncclVersionObserved":     "2.12.7+cuda11.4",
		"ncclVersionObservedFrom": "the 'NCCL version' line",
		"ncclVersionPinned":       tcpxo.NCCLVersion,
		"pluginVersionPinned":     tcpxo.PluginVersion,
		"network":                 "AWS Libfabric",
		"nodes":                   float64(2),
		"ranks":                   float64(2),
	} {
		if extra[k] != want {
			t.Errorf("extra.%s = %v, want %v", k, extra[k], want)
		}
	}
	if _, ok := extra["pluginVersionObserved"]; ok {
		t.Errorf("pluginVersionObserved = %v, but the log shows no FasTrak plugin", extra["pluginVersionObserved"])
	}
	if got := fmt.Sprint(extra["notInLog"]); got != "[pluginVersion ncclTestsVersion]" {
		t.Errorf("notInLog = %s", got)
	}
}

func TestDefaultOutIsWorkingDirectory(t *testing.T) {
	log, err := filepath.Abs(sample("healthy.log"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, stderr := ncclReport(t, "--log", log)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	written(t, dir, code)
}

// --out is created if missing, and a rerun replaces both files.
func TestOutDirCreatedAndReplaced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if code, _, stderr := ncclReport(t, "--log", sample("tcp-fallback.log"), "--out", dir); code != cli.ExitFailure {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if code, _, stderr := ncclReport(t, "--log", sample("healthy.log"), "--out", dir); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, svg := written(t, dir, cli.ExitOK)
	if !strings.Contains(svg, ">PASS<") {
		t.Error("the chart was not replaced by the passing run's")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("%d files in --out, want exactly the report and the chart (no temp files)", len(entries))
	}
}

func TestFloorFlag(t *testing.T) {
	for _, tc := range []struct {
		floor string
		code  int
		want  string
	}{
		{">= 300", cli.ExitOK, "threshold  270 GB/s"},
		{">=381", cli.ExitOK, "threshold  342.9 GB/s"},    // 343.3 clears 342.9
		{"382", cli.ExitFailure, "threshold  343.8 GB/s"}, // and not 343.8
		{"250", cli.ExitOK, "declared floor >= 250 GB/s"},
	} {
		dir := t.TempDir()
		code, out, stderr := ncclReport(t, "--log", sample("healthy.log"), "--floor", tc.floor, "--out", dir)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("--floor %q: exit %d, want %d and %q\n%s%s", tc.floor, code, tc.code, tc.want, out, stderr)
		}
	}
}

// The plugin version compares with or without its leading v.
func TestPluginVersionFlag(t *testing.T) {
	for _, v := range []string{"1.0.14", "v1.0.14"} {
		dir := t.TempDir()
		if code, out, stderr := ncclReport(t, "--log", sample("plugin-mismatch.log"), "--plugin-version", v, "--out", dir); code != cli.ExitOK {
			t.Errorf("--plugin-version %s: exit %d\n%s%s", v, code, out, stderr)
		}
	}
	dir := t.TempDir()
	code, out, _ := ncclReport(t, "--log", sample("healthy.log"), "--plugin-version", "v1.0.16", "--out", dir)
	if code != cli.ExitFailure || !strings.Contains(out, "1.0.15 but the BOM pins v1.0.16") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func writeFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestBadInputExits2WithoutWriting(t *testing.T) {
	notNCCL := writeFile(t, filepath.Join(t.TempDir(), "pod.yaml"), []byte("apiVersion: v1\nkind: Pod\n"))
	data := readFile(t, sample("healthy.log"))
	malformed := writeFile(t, filepath.Join(t.TempDir(), "malformed.log"), bytes.Replace(data, []byte("  343.30      0"), []byte("  343.30"), 1))
	garbage := writeFile(t, filepath.Join(t.TempDir(), "garbage.log"), bytes.Replace(data, []byte("  343.30      0"), []byte("  343.30      "+strings.Repeat("x", 5000)), 1))
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no --log":       {nil, "--log is required"},
		"missing file":   {[]string{"--log", filepath.Join(t.TempDir(), "absent.log")}, "no such file"},
		"directory":      {[]string{"--log", t.TempDir()}, "is a directory"},
		"not nccl-tests": {[]string{"--log", notNCCL}, "not an nccl-tests log"},
		"malformed row":  {[]string{"--log", malformed}, "malformed nccl-tests data row"},
		"all_gather":     {[]string{"--log", published("triton-distributed-137-all-gather.log")}, "it is all_gather_perf (identified from the '# Collective test starting' line), not all_reduce_perf"},
		"reduce_scatter": {[]string{"--log", published("nccl-tests-128-reduce-scatter-size0.log")}, "a per-rank count as reduce_scatter and all_gather print it"},
		"torchrun":       {[]string{"--log", published("synthetic-torchrun-size-busbw.log")}, "not an nccl-tests log: the input is a PyTorch (torch.distributed) program's log"},
		"garbage row":    {[]string{"--log", garbage}, "malformed nccl-tests data row"},
		"bad floor":      {[]string{"--log", sample("healthy.log"), "--floor", "fast"}, `--floor: floor "fast"`},
		"negative floor": {[]string{"--log", sample("healthy.log"), "--floor", "-300"}, "positive"},
		"other operator": {[]string{"--log", sample("healthy.log"), "--floor", "<= 300"}, `">= N"`},
		"empty plugin":   {[]string{"--log", sample("healthy.log"), "--plugin-version", " "}, "--plugin-version is empty"},
		"unknown flag":   {[]string{"--log", sample("healthy.log"), "--bogus"}, "bogus"},
		"stray argument": {[]string{"--log", sample("healthy.log"), "extra"}, "unexpected arguments"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			code, out, stderr := ncclReport(t, append(tc.args, "--out", dir)...)
			if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr with %q", code, out, stderr, tc.want)
			}
			// A message quotes at most a line's first 80 characters.
			if len(stderr) > 1000 {
				t.Errorf("stderr is %d bytes: a bad line was echoed whole", len(stderr))
			}
			noFiles(t, dir)
		})
	}
}

// An --out that cannot be created is an environment failure (exit 1), not
// bad input, and the message names the directory.
func TestUnwritableOut(t *testing.T) {
	file := writeFile(t, filepath.Join(t.TempDir(), "file"), nil)
	code, _, stderr := ncclReport(t, "--log", sample("healthy.log"), "--out", filepath.Join(file, "sub"))
	// The user named a file where a directory belongs: bad usage (exit 2),
	// refused before anything is staged.
	if code != cli.ExitUsage || !strings.Contains(stderr, "write the report to") || !strings.Contains(stderr, "not a directory") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

func TestHelp(t *testing.T) {
	// Asked-for help is output: stdout.
	code, stderr, errs := ncclReport(t, "--help")
	if code != cli.ExitOK || errs != "" || !strings.Contains(stderr, "--plugin-version") || !strings.Contains(stderr, tcpxo.PluginVersion) || !strings.Contains(stderr, "--log FILE") {
		t.Fatalf("exit %d: %s%s", code, stderr, errs)
	}
	// The help names the formats and prefixes the parser reads, and the
	// exit-code contract.
	for _, want := range []string{"nccl-tests 2.13 and later", "before 2.13", "1.04858e+06", "size 0", "'#'", "[1,0]<stdout>:", "[pod/NAME/CONTAINER]", "(head, rank=0, pid=123)", "srun --label", "RFC 3339", "Exit status: 0", "2 bad usage"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// The same log gives byte-identical files: nothing comes from the clock.
func TestOutputDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ncclReport(t, "--log", sample("wrong-results.log"), "--out", a)
	ncclReport(t, "--log", sample("wrong-results.log"), "--out", b)
	for _, f := range []string{ReportFile, ChartFile} {
		x, y := readFile(t, filepath.Join(a, f)), readFile(t, filepath.Join(b, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between runs", f)
		}
	}
}

// Variants of a published passing log, built here (the published file stays
// as published), with the two failures the round-3 facts name: a plugin that
// could not load the CUDA runtime of its major ("Error loading
// libnccl-net_internal.so: libcudart.so.N") and the guest config checker's
// "NCCL WARN NCCL/NET (shim) mismatch enforced". Each exits 1 and says what
// to fix.
func TestPluginFailuresInTheLog(t *testing.T) {
	data := readFile(t, published("gke-a3mega-2node-mpirun.log"))
	at := bytes.Index(data, []byte("# nThread"))
	if at < 0 {
		t.Fatal("the published log has no parameter line")
	}
	for _, tc := range []struct {
		name, line string
		want       []string
	}{
		{"cuda", "a3mega-vm-7xq2:7012:7012 [0] NCCL WARN Error loading libnccl-net_internal.so: libcudart.so.13: cannot open shared object file: No such file or directory",
			[]string{"could not load libcudart.so.13", "the worker image's CUDA major must be 13"}},
		{"enforced", "a3mega-vm-7xq2:7012:7012 [0] NCCL WARN NCCL/NET (shim) mismatch enforced NCCL_PROTO",
			[]string{"guest config checker found an enforced value violated", "What a workload may tune"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			variant := append(append(append([]byte{}, data[:at]...), tc.line+"\n"...), data[at:]...)
			log := writeFile(t, filepath.Join(dir, "run.log"), variant)
			out := filepath.Join(dir, "out")
			code, stdout, stderr := ncclReport(t, "--log", log, "--out", out)
			if code != cli.ExitFailure {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, cli.ExitFailure, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", w, stdout, stderr)
				}
			}
			written(t, out, code)
		})
	}
	// The published log itself passes: the failure is the inserted line's.
	if code, stdout, _ := ncclReport(t, "--log", published("gke-a3mega-2node-mpirun.log"), "--out", t.TempDir()); code != cli.ExitOK {
		t.Fatalf("the published log exits %d:\n%s", code, stdout)
	}
}
