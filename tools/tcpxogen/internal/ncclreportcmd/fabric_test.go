package ncclreportcmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// gibLog is one of busbw's gIB logs: reconstructions, not captured logs
// (validators/performance/busbw/testdata/gib/README.md says what they rest
// on, and that the guest config checker's line is our belief).
func gibLog(name string) string {
	return filepath.Join("..", "..", "..", "..", "validators", "performance", "busbw", "testdata", "gib", name)
}

// gibVariant writes the reconstructed gIB run with edit applied.
func gibVariant(t *testing.T, edit func(string) string) string {
	t.Helper()
	data := string(readFile(t, gibLog("a3ultra-2node-gib.log")))
	edited := edit(data)
	if edited == data {
		t.Fatal("the edit changed nothing")
	}
	return writeFile(t, filepath.Join(t.TempDir(), "run.log"), []byte(edited))
}

func TestGIBRun(t *testing.T) {
	noNetwork := func(s string) string {
		var keep []string
		for _, line := range strings.Split(s, "\n") {
			if !strings.Contains(line, "Using network") {
				keep = append(keep, line)
			}
		}
		return strings.Join(keep, "\n")
	}
	checks := "check that the nccl-rdma-installer DaemonSet ran on the nodes, that the pod mounts the host's /home/kubernetes/bin/gib at /usr/local/gib, and that the pod's env sets NCCL_NET=gIB"
	for _, tc := range []struct {
		name string
		log  func(t *testing.T) string
		code int
		want []string
	}{
		{"gIB", func(*testing.T) string { return gibLog("a3ultra-2node-gib.log") }, cli.ExitOK, []string{
			"nccl-report: PASS\n  fabric     gib (GPUDirect-RDMA)\n",
			"network    gIB\n",
			"plugin     not checked (no gIB plugin version line is known)\n",
			"nccl       2.30.4+cuda13.0, from the 'NCCL INFO NCCL version' line (none pinned for this fabric yet)\n",
			"measured   359.68 GB/s out-of-place busbw at 8G",
		}},
		{"IB fallback", func(t *testing.T) string {
			return gibVariant(t, func(s string) string { return strings.ReplaceAll(s, "Using network gIB", "Using network IB") })
		}, cli.ExitFailure, []string{"network    IB\n", "- NCCL used IB, not gIB: Google's gIB plugin did not carry the traffic", checks}},
		{"Socket fallback", func(t *testing.T) string {
			return gibVariant(t, func(s string) string { return strings.ReplaceAll(s, "Using network gIB", "Using network Socket") })
		}, cli.ExitFailure, []string{"network    Socket\n", "- NCCL used Socket: inter-node traffic between the 2 nodes went over TCP; " + checks}},
		{"no network line", func(t *testing.T) string { return gibVariant(t, noNetwork) }, cli.ExitFailure, []string{
			"network    not in the log\n", "nothing proves gIB carried the traffic rather than a fallback to IB or Socket; set NCCL_DEBUG=INFO"}},
		{"checker abort", func(*testing.T) string { return gibLog("a3ultra-2node-checker-abort.log") }, cli.ExitFailure, []string{
			"- gIB's guest config checker aborted the run on enforced variable NCCL_CROSS_NIC (line ", "set NCCL_CROSS_NIC to the value the guest config enforces"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			code, out, stderr := ncclReport(t, "--fabric", "gib", "--floor", ">= 300", "--log", tc.log(t), "--out", dir)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("summary lacks %q:\n%s", want, out)
				}
			}
			ctrf, _ := written(t, dir, code)
			extra := ctrf["results"].(map[string]any)["tests"].([]any)[0].(map[string]any)["extra"].(map[string]any)
			if extra["fabric"] != "gib" {
				t.Errorf("report's fabric = %v, want gib", extra["fabric"])
			}
		})
	}
}

// --fabric tcpxo is today's behaviour, byte for byte.
func TestFabricTCPXOIsTheDefault(t *testing.T) {
	for _, log := range []string{sample("healthy.log"), sample("tcp-fallback.log")} {
		a, b := t.TempDir(), t.TempDir()
		codeA, outA, errA := ncclReport(t, "--log", log, "--out", a)
		codeB, outB, errB := ncclReport(t, "--fabric", "tcpxo", "--log", log, "--out", b)
		if codeA != codeB || strings.ReplaceAll(outA, a, "OUT") != strings.ReplaceAll(outB, b, "OUT") || strings.ReplaceAll(errA, a, "OUT") != strings.ReplaceAll(errB, b, "OUT") {
			t.Errorf("%s: without --fabric exit %d\n%s%s\nwith --fabric tcpxo exit %d\n%s%s", log, codeA, outA, errA, codeB, outB, errB)
		}
		if strings.Contains(outA, "fabric") {
			t.Errorf("the tcpxo summary gained a fabric line:\n%s", outA)
		}
		for _, f := range []string{ReportFile, ChartFile} {
			if !bytes.Equal(readFile(t, filepath.Join(a, f)), readFile(t, filepath.Join(b, f))) {
				t.Errorf("%s: %s differs with --fabric tcpxo", log, f)
			}
		}
	}
}

func TestFabricBadUsage(t *testing.T) {
	healthy := gibLog("a3ultra-2node-gib.log")
	key := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(key, []byte("not read"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"unknown fabric": {[]string{"--fabric", "rdma", "--log", healthy}, `--fabric: unknown fabric "rdma": use one of tcpxo, gib`},
		"empty fabric":   {[]string{"--fabric", "", "--log", healthy}, `unknown fabric "": use one of tcpxo, gib`},
		"gib, no floor":  {[]string{"--fabric", "gib", "--log", healthy}, "--floor or --machine-type is required with --fabric gib"},
		"gib, all_reduce with a declared floor": {[]string{"--fabric", "gib", "--machine-type", "a4-highgpu-8g", "--log", healthy},
			"is all_reduce_perf's: gIB floors are declared for all_gather_perf only"},
		"gib, unknown machine type": {[]string{"--fabric", "gib", "--machine-type", "a3-megagpu-8g", "--log", gibLog("a4-2node-all-gather.log")},
			`--machine-type "a3-megagpu-8g": gIB floors are declared for a3-ultragpu-8g and a4-highgpu-8g`},
		"tcpxo, machine type": {[]string{"--machine-type", "a4-highgpu-8g", "--log", healthy}, "--machine-type is for --fabric gib"},
		"tcpxo, all_gather":   {[]string{"--log", gibLog("a4-2node-all-gather.log")}, "it is all_gather_perf (identified from the '# Collective test starting' line), not all_reduce_perf"},
		"gib, plugin version": {[]string{"--fabric", "gib", "--floor", "300", "--plugin-version", "v1.1.2", "--log", healthy},
			"--plugin-version applies to --fabric tcpxo only"},
		// The key is read before the log is judged, for gIB as for TCPXO.
		"gib, unusable sign key": {[]string{"--fabric", "gib", "--floor", "300", "--sign-key", key, "--log", healthy}, "--sign-key " + key + ": unusable input: not a PEM key"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			code, out, stderr := ncclReport(t, append(tc.args, "--out", dir)...)
			if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr with %q", code, out, stderr, tc.want)
			}
			noFiles(t, dir)
		})
	}
}

// An all_gather gIB run (what render benchmark --fabric gib runs by
// default) is judged against the floor declared for its machine type, 80 %
// of Google's published 2-node busbw, the summary saying where it comes
// from; the report and chart name all_gather.
func TestGIBAllGatherDeclaredFloor(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"A4", []string{"--machine-type", "a4-highgpu-8g"}, cli.ExitOK, []string{
			"nccl-report: PASS\n  fabric     gib (GPUDirect-RDMA)\n",
			"benchmark  all_gather_perf, from the '# Collective test starting' line\n",
			"measured   342.69 GB/s out-of-place busbw at 8G\n",
			"threshold  247.68 GB/s (0.9 × declared floor >= 275.2 GB/s)\n",
			"floor      80 % of the published 344 GB/s (a4-highgpu-8g, all_gather, 2 nodes, 8 GB; Google, \"Run NCCL on custom GKE clusters that use A4 or A3 Ultra\" (about 344 GB/s)): tcpxogen's judgement, not a published rule\n",
		}},
		{"A3 Ultra", []string{"--machine-type", "a3-ultragpu-8g"}, cli.ExitOK, []string{
			"threshold  237.6 GB/s (0.9 × declared floor >= 264 GB/s)\n", "80 % of the published 330 GB/s (a3-ultragpu-8g,"}},
		{"an explicit floor wins", []string{"--machine-type", "a4-highgpu-8g", "--floor", ">= 400"}, cli.ExitFailure, []string{
			"nccl-report: FAIL\n", "threshold  360 GB/s (0.9 × declared floor >= 400 GB/s)\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			code, out, stderr := ncclReport(t, append([]string{"--fabric", "gib", "--log", gibLog("a4-2node-all-gather.log"), "--out", dir}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("summary lacks %q:\n%s", want, out)
				}
			}
			if tc.name == "an explicit floor wins" && strings.Contains(out, "published") {
				t.Errorf("an explicit floor is reported as the published one:\n%s", out)
			}
			var ctrf map[string]any
			if err := json.Unmarshal(readFile(t, filepath.Join(dir, ReportFile)), &ctrf); err != nil {
				t.Fatal(err)
			}
			head := ctrf["results"].(map[string]any)["tests"].([]any)[0].(map[string]any)
			extra := head["extra"].(map[string]any)
			if head["name"] != "nccl-all-gather-bw" || extra["collective"] != "all_gather_perf" || extra["fabric"] != "gib" {
				t.Errorf("headline %v, collective %v, fabric %v", head["name"], extra["collective"], extra["fabric"])
			}
			if svg := string(readFile(t, filepath.Join(dir, ChartFile))); !strings.Contains(svg, "<title>NCCL all_gather_perf bus bandwidth: ") {
				t.Errorf("chart not titled all_gather_perf")
			}
		})
	}
}
