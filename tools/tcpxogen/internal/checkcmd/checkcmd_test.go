package checkcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/cli"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/coupling"
)

func runCheck(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var o, e bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"check"}, args...), cli.Streams{Out: &o, Err: &e}, Commands())
	return code, o.String() + e.String()
}

func TestCheckRealTree(t *testing.T) {
	code, out := runCheck(t)
	n := len(coupling.Checks())
	if code != cli.ExitOK || !strings.Contains(out, fmt.Sprintf("%d checks: %d passed, 0 failed, 0 with nothing to compare", n, n)) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestCheckBrokenTreeExits1(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module github.com/tcpxogen/tcpxogen\n"), 0o644)
	code, out := runCheck(t, "--root", root)
	if code != cli.ExitFailure || !strings.Contains(out, "FAIL") || !strings.Contains(out, "cannot run") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestCheckUsage(t *testing.T) {
	if code, _ := runCheck(t, "--bogus"); code != cli.ExitUsage {
		t.Fatalf("bad flag exit %d", code)
	}
}

func TestCheckTrainJob(t *testing.T) {
	for _, tc := range []struct {
		file string
		code int
		want []string
	}{
		{"trainjob-env-debug.yaml", cli.ExitOK, []string{"NCCL_DEBUG (WARN -> INFO): your value wins", "0 lose the fabric"}},
		{"trainjob-cpu-only.yaml", cli.ExitFailure, []string{"FAIL  resource lost: limits nvidia.com/gpu (8 -> <none>)", "FAIL  env overridden: env NCCL_SOCKET_IFNAME (eth0 -> eth1)", "would lose the GPUDirect-TCPXO fabric"}},
		{"trainjob-patch-resources.yaml", cli.ExitFailure, []string{"FAIL  schema: pruned", "resources", "vanishes silently"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			code, out := runCheck(t, "trainjob", filepath.Join("testdata", tc.file))
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestCheckTrainJobBadInput(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.yaml")
	os.WriteFile(other, []byte("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: x}\nspec: {runtimeRef: {name: torch-distributed}}\n"), 0o644)
	notJob := filepath.Join(dir, "pod.yaml")
	os.WriteFile(notJob, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"), 0o644)
	for name, args := range map[string][]string{
		"no file":       {"trainjob"},
		"missing file":  {"trainjob", filepath.Join(dir, "nope.yaml")},
		"other runtime": {"trainjob", other},
		"not a job":     {"trainjob", notJob},
	} {
		if code, out := runCheck(t, args...); code != cli.ExitUsage {
			t.Errorf("%s: exit %d, want 2:\n%s", name, code, out)
		}
	}
}
