package ncclreportcmd

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// --log goes through the input helper: a FIFO hung nccl-report, /dev/zero
// spun in it forever.
func TestHostileLog(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{fifo: "is a FIFO", dir: "is a directory"}
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases["/dev/zero"] = "is a character device"
	}
	for path, want := range cases {
		out := t.TempDir()
		code, stdout, stderr := ncclReport(t, "--log", path, "--out", out)
		if code != cli.ExitUsage || !strings.Contains(stderr, "--log "+path+" "+want) {
			t.Errorf("--log %s: exit %d, want 2 and %q: %s%s", path, code, want, stdout, stderr)
		}
		noFiles(t, out)
	}
}

// --floor reads the recipe's grammar: "> N" is a floor, a hex float (0x1p9
// passed as 512 GB/s), an exponent, an infinity and a value past any link
// are not.
func TestFloorFlagNumbers(t *testing.T) {
	for floor, code := range map[string]int{"> 300": cli.ExitOK, "0x1p9": cli.ExitUsage, "1e2": cli.ExitUsage, "Inf": cli.ExitUsage, "10001": cli.ExitUsage} {
		out := t.TempDir()
		got, stdout, stderr := ncclReport(t, "--log", sample("healthy.log"), "--floor", floor, "--out", out)
		if got != code {
			t.Errorf("--floor %q: exit %d, want %d: %s%s", floor, got, code, stdout, stderr)
		}
	}
}

// The report is never written over what is not a regular file.
func TestReportTargetIsAFIFO(t *testing.T) {
	out := t.TempDir()
	fifo := filepath.Join(out, ReportFile)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := ncclReport(t, "--log", sample("healthy.log"), "--out", out)
	if code != cli.ExitUsage || !strings.Contains(stderr, "is a FIFO") {
		t.Fatalf("exit %d, want 2: %s", code, stderr)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the FIFO was replaced: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(out, ChartFile)); !os.IsNotExist(err) {
		t.Errorf("the chart was written without its report: %v", err)
	}
}
