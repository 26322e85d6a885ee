package democmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/bomcheck"
)

func TestDemo(t *testing.T) {
	out := t.TempDir()
	var o, e bytes.Buffer
	code := cli.Main(context.Background(), []string{"demo", "--out", out}, cli.Streams{Out: &o, Err: &e}, Commands())
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	want := []string{"installer   " + tcpxo.PluginVersion, "constants   matches the committed", "0 pruned fields", "wiring intact", fmt.Sprintf("%d of %d checks passed", len(bomcheck.Checks()), len(bomcheck.Checks()))}
	// The committed constants say whether they came from a substitute; the
	// summary must say the same.
	if tcpxo.ProvenanceSubstituted {
		want = append(want, "SUBSTITUTE")
	}
	// The newer published pairs (bom/releases.yaml) are named with the
	// command that bumps to them.
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	newer := in.Releases.NewerPairs(in.BOM.Images.Installer.Version)
	for _, p := range newer {
		want = append(want, fmt.Sprintf("%s <-> daemon %s (%s)", p.Installer, p.Daemon, p.Date))
	}
	if len(newer) > 0 {
		want = append(want, "tcpxogen bump --installer "+newer[0].Installer)
	}
	for _, w := range want {
		if !strings.Contains(o.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, o.String())
		}
	}
	for _, f := range []string{generatedOutput, "torch-distributed-tcpxo.yaml", "components.yaml", "jobset.yaml", "bom-check.txt"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("output %s missing or empty: %v", f, err)
		}
		if !strings.Contains(o.String(), f) {
			t.Errorf("summary does not list output %s", f)
		}
	}
	// out/demo/ is inside the module: a .go file there would be built by
	// `go vet ./...` and `go test ./...` as a package of the repository.
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".go" {
			t.Errorf("demo wrote Go source %s; go ./... would build it", e.Name())
		}
	}
	js, err := os.ReadFile(filepath.Join(out, "jobset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js, []byte("tcpxo-daemon")) || !bytes.Contains(js, []byte("networking.gke.io/interfaces")) {
		t.Error("the realized JobSet lacks the wiring")
	}
}
