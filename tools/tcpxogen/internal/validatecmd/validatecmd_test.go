package validatecmd

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/performance/validate"
)

// The command maps the validator's input errors, and its own flag errors,
// to exit 2, and reaches for no cluster before the input is sound; every
// other error is exit 1. (The validator's behaviour is tested in its
// package.)
func TestExitStatus(t *testing.T) {
	noCluster := func(string, string) (*validate.Clients, error) {
		t.Error("the command connected to a cluster before rejecting its input")
		return nil, errors.New("no cluster in this test")
	}
	unreachable := func(string, string) (*validate.Clients, error) { return nil, errors.New("the cluster is down") }
	for _, tc := range []struct {
		name    string
		connect validate.ConnectFunc
		args    []string
		code    int
		want    string
	}{
		{"no recipe", noCluster, nil, cli.ExitUsage, "--recipe is required"},
		{"stray argument", noCluster, []string{"--recipe", "r.yaml", "extra"}, cli.ExitUsage, "unexpected arguments"},
		{"unknown flag", noCluster, []string{"--recipes", "r.yaml"}, cli.ExitUsage, "--recipes"},
		{"help", noCluster, []string{"--help"}, cli.ExitOK, "--trainer-manifests"},
		{"help names the role", noCluster, []string{"--help"}, cli.ExitOK, "tcpxogen render rbac --for validate [--install-trainer] --namespace NS"},
		{"failure after the input", unreachable, []string{"--recipe", "../../../../testdata/recipes/gke-h100-trainer-declared.yaml", "--benchmark-image", "registry.example/nccl-tests:v2@sha256:" + strings.Repeat("0", 64), "--dry-run"}, cli.ExitFailure, "the cluster is down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o, e bytes.Buffer
			code := cli.Main(context.Background(), append([]string{"validate"}, tc.args...), cli.Streams{Out: &o, Err: &e}, commands(tc.connect))
			// --help is output (stdout, exit 0); every refusal is on stderr.
			stream, got := "stderr", e.String()
			if tc.code == cli.ExitOK {
				stream, got = "stdout", o.String()
			}
			if code != tc.code || !strings.Contains(got, tc.want) {
				t.Errorf("exit %d, want %d; %s, which should mention %q:\n%s", code, tc.code, stream, tc.want, got)
			}
		})
	}
}
