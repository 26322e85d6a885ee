package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/ncclreportcmd"
)

// TestBinaryStandsAlone builds the CLI from this module and runs it the way a
// user who has only the binary would: no go command on PATH, and empty
// GOPATH, GOMODCACHE and HOME, so nothing can come from a Go toolchain or a
// module cache. `go install .../tools/tcpxogen@version` from a clean GOPATH
// cannot be tested offline (it downloads the module); the binary it would
// produce is this one, built from the same module.
//
// What must work where (README, "Commands"): check trainjob, render runtime,
// render components and nccl-report work in any directory, with the reviewed
// inputs built into the binary; demo operates on a checkout (--root).
func TestBinaryStandsAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI (~30 s warm)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the CLI with: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "tcpxogen")
	start := time.Now()
	build := exec.Command(goBin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built in %v", time.Since(start).Round(time.Millisecond))

	// The run environment: PATH holds only an empty directory, and every
	// place a Go toolchain or module cache could be found is empty.
	empty := func() string { return t.TempDir() }
	env := []string{
		"PATH=" + empty(), "HOME=" + empty(), "GOPATH=" + empty(), "GOMODCACHE=" + empty(),
		"GOROOT=" + empty(), "XDG_CACHE_HOME=" + empty(), "TCPXOGEN_CACHE_DIR=" + empty(),
	}
	outside := empty() // a working directory outside any checkout
	if _, err := exec.LookPath(filepath.Join(strings.TrimPrefix(env[0], "PATH="), "go")); err == nil {
		t.Fatal("the run PATH has a go command")
	}

	reportDir := empty()
	for _, tc := range []struct {
		name string
		dir  string
		args []string
		want string // in stdout or stderr
	}{
		{"check trainjob", outside, []string{"check", "trainjob", filepath.Join(root, "tools", "tcpxogen", "internal", "checkcmd", "testdata", "trainjob-env-debug.yaml")}, "0 lose the fabric; launch ok"},
		{"render runtime", outside, []string{"render", "runtime", "--interfaces", "eth1=n1,eth2=n2,eth3=n3,eth4=n4,eth5=n5,eth6=n6,eth7=n7,eth8=n8"}, "kind: ClusterTrainingRuntime"},
		{"render components", outside, []string{"render", "components"}, "kind: DaemonSet"},
		{"nccl-report", outside, []string{"nccl-report", "--log", filepath.Join(root, "testdata", "nccl-logs", "published", "gke-a3mega-2node-mpirun.log"), "--out", reportDir}, ""},
		{"demo", outside, []string{"demo", "--root", root, "--out", empty()}, "realization"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir, cmd.Env = tc.dir, env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			t.Logf("%v", time.Since(start).Round(time.Millisecond))
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Fatalf("tcpxogen %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), exit.ExitCode(), stdout.String(), stderr.String())
			}
			if err != nil {
				t.Fatal(err)
			}
			if all := stdout.String() + stderr.String(); !strings.Contains(all, tc.want) {
				t.Errorf("tcpxogen %s: output lacks %q:\n%s", strings.Join(tc.args, " "), tc.want, all)
			}
		})
	}
	for _, f := range []string{ncclreportcmd.ReportFile, ncclreportcmd.ChartFile} {
		if _, err := os.Stat(filepath.Join(reportDir, f)); err != nil {
			t.Errorf("nccl-report: %v", err)
		}
	}
}
