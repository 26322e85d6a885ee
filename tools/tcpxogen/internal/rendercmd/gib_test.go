package rendercmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

const validRDMA = "eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7"

// render runtime --fabric gib prints exactly what the builder gives for
// the mapping and machine type, from --interfaces or --values alike.
func TestRenderRDMARuntime(t *testing.T) {
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	m, err := interfaces.RDMA.Parse(validRDMA + ",eth1=gvnic-1")
	if err != nil {
		t.Fatal(err)
	}
	want, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: m, MachineType: "a3-ultragpu-8g"})
	if err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(m.ValuesYAML()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mapping := range [][]string{{"--interfaces", validRDMA + ",eth1=gvnic-1"}, {"--values", values}} {
		code, out, stderr := render(t, append([]string{"runtime", "--fabric", "gib", "--machine-type", "a3-ultragpu-8g"}, mapping...)...)
		if code != cli.ExitOK {
			t.Fatalf("%v: exit %d: %s", mapping, code, stderr)
		}
		var got trainer.ClusterTrainingRuntime
		if err := yaml.UnmarshalStrict([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(&got, want) {
			t.Errorf("%v: render differs from the builder's runtime", mapping)
		}
	}
}

func TestRenderRDMAComponents(t *testing.T) {
	code, out, stderr := render(t, "components", "--fabric", "gib")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict([]byte(out), &ds); err != nil {
		t.Fatal(err)
	}
	if ds.Name != "nccl-rdma-installer" {
		t.Errorf("rendered %s, want nccl-rdma-installer", ds.Name)
	}
}

// Bad gIB input exits 2 with the fix and nothing on stdout.
func TestRenderRDMARefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"seven networks", []string{"--machine-type", "a4-highgpu-8g", "--interfaces", strings.TrimSuffix(validRDMA, ",eth9=rdma-7")}, "eth9 is not mapped"},
		{"a duplicate", []string{"--machine-type", "a4-highgpu-8g", "--interfaces", validRDMA + ",eth2=rdma-9"}, "eth2 is mapped twice"},
		{"A3 Mega numbering", []string{"--machine-type", "a4-highgpu-8g", "--interfaces", valid}, "move each up one interface"},
		{"a name GKE rejects", []string{"--machine-type", "a4-highgpu-8g", "--interfaces", strings.Replace(validRDMA, "rdma-0", strings.Repeat("r", 42), 1)}, "41"},
		{"no machine type", []string{"--interfaces", validRDMA}, "--machine-type is required with --fabric gib"},
		{"an A3 Mega machine type", []string{"--machine-type", "a3-megagpu-8g", "--interfaces", validRDMA}, "not served by the gIB fabric"},
		{"TCPXO's profile", []string{"--machine-type", "a4-highgpu-8g", "--interfaces", validRDMA, "--profile", "simple"}, "drop --profile"},
		{"from the cluster", []string{"--machine-type", "a4-highgpu-8g", "--from-cluster"}, "--from-cluster does not read gIB pools yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := render(t, append([]string{"runtime", "--fabric", "gib"}, tc.args...)...)
			if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 naming %q", code, out, stderr, tc.want)
			}
		})
	}
	code, out, stderr := render(t, "runtime", "--fabric", "infiniband", "--interfaces", valid)
	if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, "use one of tcpxo, gib") {
		t.Errorf("unknown fabric: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, _, stderr = render(t, "runtime", "--machine-type", "a4-highgpu-8g", "--interfaces", valid)
	if code != cli.ExitUsage || !strings.Contains(stderr, "--machine-type is for --fabric gib") {
		t.Errorf("--machine-type on TCPXO: exit %d, stderr %q", code, stderr)
	}
}
