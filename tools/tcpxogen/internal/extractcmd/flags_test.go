package extractcmd

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// Flag values extract only failed on mid-run (exit 1, naming Go fields such
// as Limits.MaxCompressedBytes) are bad usage: exit 2, naming the flag, and
// nothing written.
func TestExtractRefusesBadFlags(t *testing.T) {
	root := repoRootForTest(t)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"negative read limit":  {[]string{"--source", "testdata", "--max-read-bytes", "-1"}, "--max-read-bytes is -1"},
		"negative file limit":  {[]string{"--source", "testdata", "--max-file-bytes", "-5"}, "--max-file-bytes is -5"},
		"relative lib dir":     {[]string{"--source", "testdata", "--lib-dir", "rel/dir"}, `--lib-dir "rel/dir" must be an absolute`},
		"missing OCI layout":   {[]string{"--source", "oci-layout:/nonexistent/layout"}, "--source oci-layout:/nonexistent/layout: /nonexistent/layout is not an OCI image layout"},
		"malformed substitute": {[]string{"--source", "mirror.example/x@sha256:abc"}, `--source "mirror.example/x@sha256:abc" is not a valid`},
		"malformed daemon pin": {[]string{"--source", "testdata", "--daemon-source", "mirror.example/d@sha256:xyz"}, "--daemon-source"},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			var o, e bytes.Buffer
			args := append([]string{"extract", "--root", root, "--out", out, "--cache-dir", ""}, tc.args...)
			code := cli.Main(context.Background(), args, cli.Streams{Out: &o, Err: &e}, Commands())
			if code != cli.ExitUsage || !strings.Contains(e.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, e.String(), tc.want)
			}
			if strings.Contains(e.String(), "Limits.") || strings.Contains(e.String(), "LibDir") {
				t.Errorf("the message names a Go identifier: %s", e.String())
			}
		})
	}
}
