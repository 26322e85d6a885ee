package rendercmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

const valid = "eth1=net-1,eth2=net-2,eth3=net-3,eth4=net-4,eth5=net-5,eth6=net-6,eth7=net-7,eth8=net-8"

func render(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var o, e bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"render"}, args...), cli.Streams{Out: &o, Err: &e}, Commands())
	return code, o.String(), e.String()
}

func TestRenderRuntime(t *testing.T) {
	code, out, stderr := render(t, "runtime", "--interfaces", valid, "--node-selector", "pool=a3", "--toleration", "nvidia.com/gpu=present:NoSchedule", "--profile", "simple")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("output is not YAML: %v", err)
	}
	for _, want := range []string{"name: torch-distributed-tcpxo", `"network":"net-8"`, "pool: a3", "value: present", "NCCL_ALGO"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	code, out, _ = render(t, "runtime", "--interfaces", valid, "-o", "json")
	if code != cli.ExitOK || !strings.HasPrefix(out, "{") {
		t.Fatalf("json: exit %d, %.40s", code, out)
	}
}

func TestRenderRuntimeFromValues(t *testing.T) {
	p := filepath.Join(t.TempDir(), "values.yaml")
	var b strings.Builder
	b.WriteString("tcpxoInterfaces:\n")
	for i := 1; i <= 8; i++ {
		b.WriteString("  - {interfaceName: eth" + string(rune('0'+i)) + ", network: vpc-" + string(rune('0'+i)) + "}\n")
	}
	os.WriteFile(p, []byte(b.String()), 0o644)
	code, out, stderr := render(t, "runtime", "--values", p)
	if code != cli.ExitOK || !strings.Contains(out, `"network":"vpc-3"`) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// Every invalid mapping exits 2 with a precise message and no YAML.
func TestRenderRuntimeRejectsBadMappings(t *testing.T) {
	seven := strings.TrimSuffix(valid, ",eth8=net-8")
	long := strings.Repeat("a", 42)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"seven entries":         {[]string{"--interfaces", seven}, "eth8"},
		"duplicate network":     {[]string{"--interfaces", strings.Replace(valid, "net-2", "net-1", 1)}, "net-1"},
		"eth9":                  {[]string{"--interfaces", strings.Replace(valid, "eth8=", "eth9=", 1)}, "eth9"},
		"42-character name":     {[]string{"--interfaces", strings.Replace(valid, "net-1", long, 1)}, "42"},
		"upper-case name":       {[]string{"--interfaces", strings.Replace(valid, "net-1", "Net-1", 1)}, "Net-1"},
		"interface given twice": {[]string{"--interfaces", valid + ",eth3=net-9"}, "eth3"},
		"empty input":           {[]string{"--interfaces", ""}, "eth1=<network>"},
		"no mapping at all":     {nil, "eth1=<network>"},
		"both forms":            {[]string{"--interfaces", valid, "--values", "x.yaml"}, "not both"},
		"bad selector":          {[]string{"--interfaces", valid, "--node-selector", "pool"}, "key=value"},
		"bad toleration":        {[]string{"--interfaces", valid, "--toleration", "gpu:Sometimes"}, "Effect"},
		"unpinned worker":       {[]string{"--interfaces", valid, "--worker-image", "pytorch/pytorch:latest"}, "digest"},
		// Any "@sha256:" used to pass; the BOM's rule wants 64 hex digits.
		"worker digest not hex": {[]string{"--interfaces", valid, "--worker-image", "x:latest@sha256:not-hex"}, "digest has 7 hex characters, want 64"},
		"worker digest only":    {[]string{"--interfaces", valid, "--worker-image", "x@sha256:" + strings.Repeat("a", 64)}, "has no tag"},
		"unknown profile":       {[]string{"--interfaces", valid, "--profile", "fast"}, "fast"},
		"unknown format":        {[]string{"--interfaces", valid, "-o", "toml"}, "toml"},
		"discovered and given":  {[]string{"--from-cluster", "--interfaces", valid}, "give the mapping once: --from-cluster discovers it"},
		"discovered and values": {[]string{"--from-cluster", "--values", "x.yaml"}, "give the mapping once: --from-cluster discovers it"},
		"kubeconfig without it": {[]string{"--interfaces", valid, "--kubeconfig", "k"}, "--kubeconfig and --context are for --from-cluster"},
		"no kubeconfig file":    {[]string{"--from-cluster", "--kubeconfig", "no-such-kubeconfig"}, "--from-cluster: kubeconfig no-such-kubeconfig"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, stderr := render(t, append([]string{"runtime"}, tc.args...)...)
			if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr mentioning %q", code, out, stderr, tc.want)
			}
		})
	}
}

func TestRenderComponents(t *testing.T) {
	code, out, stderr := render(t, "components")
	if code != cli.ExitOK || strings.Count(out, "kind: DaemonSet") != 2 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
}

func TestRenderUsage(t *testing.T) {
	if code, _, _ := render(t); code != cli.ExitUsage {
		t.Errorf("bare render: exit %d", code)
	}
	if code, _, _ := render(t, "nonsense"); code != cli.ExitUsage {
		t.Errorf("unknown target: exit %d", code)
	}
	if code, _, _ := render(t, "runtime", "--help"); code != cli.ExitOK {
		t.Errorf("--help: exit %d", code)
	}
}

func TestRenderWorkerImageNamesTheCUDAMajor(t *testing.T) {
	img := "registry.example/train:v1@sha256:" + strings.Repeat("a", 64)
	code, out, stderr := render(t, "runtime", "--interfaces", valid, "--worker-image", img)
	if code != cli.ExitOK || !strings.Contains(out, img) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	major, _, _ := strings.Cut(tcpxo.CUDAVersion, ".")
	if want := "must be built for CUDA " + major + " "; !strings.Contains(stderr, want) || !strings.Contains(stderr, "libcudart.so."+major) {
		t.Errorf("stderr %q does not say the worker needs CUDA %s", stderr, major)
	}
}
