package ncclreportcmd

import (
	"bytes"
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
		"gib, no floor":  {[]string{"--fabric", "gib", "--log", healthy}, "--floor is required with --fabric gib"},
		"gib, plugin version": {[]string{"--fabric", "gib", "--floor", "300", "--plugin-version", "v1.1.2", "--log", healthy},
			"--plugin-version applies to --fabric tcpxo only"},
		"gib, sign key": {[]string{"--fabric", "gib", "--floor", "300", "--sign-key", key, "--log", healthy}, "--sign-key applies to --fabric tcpxo only"},
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
