package rendercmd

import (
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// Node selectors and tolerations are checked with the API server's label
// rules before anything is printed; before, each of these rendered a
// runtime the cluster then rejected (or, for a look-alike key, one that
// never matched a node).
func TestRenderRuntimeValidatesPodFields(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"selector key with a space":     {[]string{"--node-selector", "my pool=a3"}, "name part must consist of alphanumeric characters"},
		"selector key with two slashes": {[]string{"--node-selector", "a/b/c=x"}, "a valid label key must consist of"},
		"selector value too long":       {[]string{"--node-selector", "pool=" + strings.Repeat("a", 64)}, "must be no more than 63 bytes"},
		"selector value with a slash":   {[]string{"--node-selector", "pool=a/b"}, "a valid label must be"},
		"selector look-alike key":       {[]string{"--node-selector", "cloud.google.com/gke-acc\u0435lerator=nvidia-h100-mega-80gb"}, "U+0435 CYRILLIC SMALL LETTER IE"},
		"selector twice":                {[]string{"--node-selector", "pool=a", "--node-selector", "pool=b"}, "already selected"},
		"toleration key":                {[]string{"--toleration", "nvidia gpu=present:NoSchedule"}, "key \"nvidia gpu\""},
		"toleration value":              {[]string{"--toleration", "nvidia.com/gpu=pre sent:NoSchedule"}, "value \"pre sent\""},
		"toleration effect":             {[]string{"--toleration", "gpu=present:NoExecute:x"}, "Effect"},
		"toleration effect case":        {[]string{"--toleration", "gpu:noschedule"}, "Effect one of NoSchedule"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, stderr := render(t, append([]string{"runtime", "--interfaces", valid}, tc.args...)...)
			if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %d bytes, stderr %q; want exit 2, no stdout, stderr mentioning %q", code, len(out), stderr, tc.want)
			}
		})
	}
	for _, args := range [][]string{
		{"--node-selector", "cloud.google.com/gke-nodepool=a3-mega", "--node-selector", "empty="},
		{"--toleration", "nvidia.com/gpu:NoSchedule", "--toleration", "dedicated=ml:NoExecute"},
	} {
		if code, _, stderr := render(t, append([]string{"runtime", "--interfaces", valid}, args...)...); code != cli.ExitOK {
			t.Errorf("%q: exit %d: %s", args, code, stderr)
		}
	}
}

// --values goes through the input helper.
func TestRenderRuntimeValuesFileRefused(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := render(t, "runtime", "--values", dir)
	if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, "--values "+dir+" is a directory") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
