package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainerSiblings builds the CLI twice, as `make build` does (the go.mod
// trainer, and trainer v2.3.0 from its modfile), side by side, and holds
// `check trainjob --trainer` to its contract: each version realized by the
// binary that links it, saying so; the done-when TrainJobs judged on
// v2.3.0; a missing sibling an exit-1 error naming its make target.
func TestTrainerSiblings(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI twice (~40 s warm)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the CLI with: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	main, v23 := filepath.Join(dir, "tcpxogen"), filepath.Join(dir, "tcpxogen-trainer-v2.3.0")
	for _, b := range []struct{ out, modfile string }{{main, ""}, {v23, filepath.Join(root, "validators", "realize", "trainer-v2.3.0.mod")}} {
		args := []string{"build", "-o", b.out}
		if b.modfile != "" {
			args = append(args, "-modfile="+b.modfile)
		}
		build := exec.Command(goBin, append(args, ".")...)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	testdata := filepath.Join(root, "tools", "tcpxogen", "internal", "checkcmd", "testdata")
	run := func(t *testing.T, bin string, args ...string) (int, string) {
		t.Helper()
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return 0, out.String()
		case errors.As(err, &exit):
			return exit.ExitCode(), out.String()
		}
		t.Fatalf("running %s: %v", bin, err)
		return 0, ""
	}
	for _, tc := range []struct {
		bin, trainer, file string
		code               int
		want               []string
	}{
		{main, "v2.3.0", "trainjob-memory-only.yaml", 1, []string{
			"trainer v2.3.0: realized in-process by " + v23,
			"FAIL  launch on trainer v2.3.0: processes per node: PET_NPROC_PER_NODE=1 on a node container with nvidia.com/gpu: 8",
			"upstream: kubeflow/trainer PR 3974", `fix: restate the GPUs in spec.trainer.resourcesPerNode (nvidia.com/gpu: "8"`,
		}},
		{main, "v2.3.0", "trainjob-patch-daemon-caps.yaml", 1, []string{
			"FAIL  capability lost: initContainer tcpxo-daemon capability NET_ADMIN", "kubeflow/trainer PR 3309",
			"fix: remove the tcpxo-daemon entry from spec.runtimePatches",
		}},
		{main, "v2.3.0", "trainjob-memory-gpus.yaml", 0, []string{"trainer v2.3.0: 0 wiring change(s) listed above", "0 lose the fabric; launch ok"}},
		// A shape no matrix case has: realized, not "not known".
		{main, "v2.3.0", "trainjob-env-debug.yaml", 0, []string{"trainer v2.3.0: realized in-process by " + v23, "launch ok"}},
		{main, "all", "trainjob-memory-gpus.yaml", 0, []string{
			"trainer v2.2.0: realized in-process by " + main, "trainer v2.3.0: realized in-process by " + v23,
		}},
		// The v2.3.0 binary's default is the pinned trainer, in its sibling.
		{v23, "", "trainjob-memory-gpus.yaml", 0, []string{"trainer v2.2.0: realized in-process by " + main}},
		{main, "v2.4.0", "trainjob-memory-gpus.yaml", 2, []string{"not a supported trainer version"}},
	} {
		t.Run(filepath.Base(tc.bin)+" "+tc.trainer+" "+tc.file, func(t *testing.T) {
			args := []string{"check", "trainjob"}
			if tc.trainer != "" {
				args = append(args, "--trainer", tc.trainer)
			}
			code, out := run(t, tc.bin, append(args, filepath.Join(testdata, tc.file))...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "not known") {
				t.Errorf("a verdict is not known:\n%s", out)
			}
		})
	}
	t.Run("missing sibling", func(t *testing.T) {
		if err := os.Remove(v23); err != nil {
			t.Fatal(err)
		}
		code, out := run(t, main, "check", "trainjob", "--trainer", "all", filepath.Join(testdata, "trainjob-memory-gpus.yaml"))
		if code != 1 || !strings.Contains(out, v23+", which does not exist") || !strings.Contains(out, "make bin/tcpxogen-trainer-v2.3.0") ||
			!strings.Contains(out, "trainer v2.2.0: 0 wiring change(s) listed above") {
			t.Fatalf("exit %d, want 1 with the v2.2.0 report and the make target:\n%s", code, out)
		}
	})
}
