package versioncmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/linkedtrainer"
)

func runMain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var o, e bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Streams{Out: &o, Err: &e}, Commands())
	return o.String(), e.String(), code
}

// TestVersionNamesWhatShips: the pair named is the compiled-in one (what
// this binary renders), the trainer the linked one; --version is the same
// command (issue 38: it answered "unknown command").
func TestVersionNamesWhatShips(t *testing.T) {
	out, errOut, code := runMain(t, "version")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"tcpxogen ",
		"fabric tcpxo: installer " + tcpxo.PluginVersion + " (" + tcpxo.Facts().Provenance.Pinned + ")",
		"daemon " + tcpxo.DaemonVersion + " (",
		"trainer " + linkedtrainer.Version() + " (linked)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
	flag, _, code := runMain(t, "--version")
	if code != cli.ExitOK || flag != out {
		t.Errorf("--version (exit %d) printed\n%s\nwant what version prints:\n%s", code, flag, out)
	}
}

func TestVersionRefusesArguments(t *testing.T) {
	_, errOut, code := runMain(t, "version", "extra")
	if code != cli.ExitUsage || !strings.Contains(errOut, `unexpected arguments ["extra"]`) {
		t.Fatalf("exit %d, stderr %q; want exit 2 naming the stray argument", code, errOut)
	}
}
