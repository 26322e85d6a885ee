package democmd

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

func TestDemo(t *testing.T) {
	out := t.TempDir()
	var o, e bytes.Buffer
	code := cli.Main(context.Background(), []string{"demo", "--out", out}, cli.Streams{Out: &o, Err: &e}, Commands())
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	for _, want := range []string{"installer   v1.0.15", "constants   matches the committed", "0 pruned fields", "wiring intact", fmt.Sprintf("%d of %d checks passed", len(coupling.Checks()), len(coupling.Checks())), "SUBSTITUTE"} {
		if !strings.Contains(o.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, o.String())
		}
	}
	for _, f := range []string{"zz_generated.go", "torch-distributed-tcpxo.yaml", "components.yaml", "jobset.yaml", "bom-check.txt"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("output %s missing or empty: %v", f, err)
		}
	}
	js, _ := os.ReadFile(filepath.Join(out, "jobset.yaml"))
	if !bytes.Contains(js, []byte("tcpxo-daemon")) || !bytes.Contains(js, []byte("networking.gke.io/interfaces")) {
		t.Error("the realized JobSet lacks the wiring")
	}
}
