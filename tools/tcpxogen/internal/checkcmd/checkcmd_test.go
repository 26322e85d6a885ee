package checkcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/cli"
)

func runCheck(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var o, e bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"check"}, args...), cli.Streams{Out: &o, Err: &e}, Commands())
	return code, o.String() + e.String()
}

func TestCheckRealTree(t *testing.T) {
	code, out := runCheck(t)
	if code != cli.ExitOK || !strings.Contains(out, "10 checks: 9 passed, 0 failed, 1 with nothing to compare") || !strings.Contains(out, "SUBSTITUTE") {
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
