package rendercmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/runtimes/admission"
)

// render policy prints what the goldens hold, for both forms, and refuses a
// bad runtime name as bad input.
func TestRenderPolicy(t *testing.T) {
	for golden, args := range map[string][]string{
		admission.GoldenPath:           {"policy"},
		admission.GoldenEnforcePath:    {"policy", "--enforce"},
		admission.GoldenGIBPath:        {"policy", "--fabric", "gib"},
		admission.GoldenGIBEnforcePath: {"policy", "--fabric", "gib", "--enforce"},
	} {
		code, out, errOut := render(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "..", "..", filepath.FromSlash(golden)))
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(string(want), "\n---\n")
		if out != body {
			t.Errorf("render %v differs from %s", args, golden)
		}
	}
	if code, _, errOut := render(t, "policy", "--runtime", "Not_A_Name"); code != 2 || !strings.Contains(errOut, "Not_A_Name") {
		t.Errorf("bad --runtime: exit %d: %s", code, errOut)
	}
	code, out, _ := render(t, "policy", "--exempt", "cpu-only", "--runtime", "my-tcpxo")
	// TCPXO's advisory exempts the other fabrics' runtimes besides the
	// named ones: they carry their own wiring.
	if code != 0 || !strings.Contains(out, `["my-tcpxo"]`) || !strings.Contains(out, `["cpu-only", "torch-distributed-rdma-a3-ultragpu-8g",`) {
		t.Errorf("--runtime/--exempt not in the policy (exit %d)", code)
	}
}
