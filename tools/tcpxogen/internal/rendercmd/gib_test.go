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
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
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
		{"discovered and given", []string{"--machine-type", "a4-highgpu-8g", "--from-cluster", "--interfaces", validRDMA}, "give the mapping once: --from-cluster discovers it"},
		{"discovered without a machine type", []string{"--from-cluster"}, "--machine-type is required with --fabric gib"},
		{"discovered from no kubeconfig", []string{"--machine-type", "a4-highgpu-8g", "--from-cluster", "--kubeconfig", "no-such-kubeconfig"}, "--from-cluster: kubeconfig no-such-kubeconfig"},
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

// render benchmark --fabric gib prints exactly the benchmark derived from
// the gIB runtime rendered for the mapping and machine type (for Google's
// network names in the golden's namespace, the committed golden's object),
// from --interfaces or --values alike, and the TrainJob that runs it.
func TestRenderGIBBenchmarkIsTheDerivedOne(t *testing.T) {
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(runtimes.ExampleRDMAInterfaces().ValuesYAML()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mt := range []string{"a3-ultragpu-8g", "a4-highgpu-8g"} {
		rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: runtimes.ExampleRDMAInterfaces(), MachineType: mt})
		if err != nil {
			t.Fatal(err)
		}
		want, err := benchmark.GIBGoldenRuntime(rt, in.GIB, mt)
		if err != nil {
			t.Fatal(err)
		}
		for _, mapping := range [][]string{{"--interfaces", validRDMA}, {"--values", values}} {
			code, out, stderr := render(t, append([]string{"benchmark", "--fabric", "gib", "--machine-type", mt, "--namespace", benchmark.GIBGoldenNamespace}, mapping...)...)
			if code != cli.ExitOK {
				t.Fatalf("%s %v: exit %d: %s", mt, mapping, code, stderr)
			}
			got, tj := benchmarkDocs(t, out)
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("%s %v: render benchmark differs from the derived golden runtime", mt, mapping)
			}
			if tj.Namespace != got.Namespace || tj.Spec.RuntimeRef.Name != "nccl-tests-rdma-"+mt {
				t.Errorf("TrainJob %s/%s runs %s", tj.Namespace, tj.Name, tj.Spec.RuntimeRef.Name)
			}
			if !strings.Contains(stderr, "nccl-report --fabric gib") {
				t.Errorf("stderr %q does not say how to judge the run", stderr)
			}
		}
	}
}

// The user's networks, namespace, nodes and collective reach the gIB
// benchmark.
func TestRenderGIBBenchmarkForACluster(t *testing.T) {
	code, out, stderr := render(t, "benchmark", "--fabric", "gib", "--machine-type", "a4-highgpu-8g", "--interfaces", strings.ReplaceAll(validRDMA, "rdma-", "ours-")+",eth1=gvnic-1",
		"--namespace", "team-a", "--nodes", "4", "--collective", "all_reduce", "--node-selector", "pool=a4")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rt, _ := benchmarkDocs(t, out)
	if rt.Namespace != "team-a" || *rt.Spec.MLPolicy.NumNodes != 4 {
		t.Errorf("namespace %q, numNodes %d", rt.Namespace, *rt.Spec.MLPolicy.NumNodes)
	}
	for _, want := range []string{`"network":"ours-7"`, `{"interfaceName":"eth1","network":"gvnic-1"}`, "pool: a4", "/third_party/nccl-tests-mpi/build/all_reduce_perf", "tuner_config_a4.txtpb", "NCCL all_reduce_perf benchmark"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "all_gather_perf") || strings.Contains(out, "ulimit") {
		t.Error("an all_reduce gIB benchmark runs all_gather_perf or TCPXO's rank prelude")
	}
}

// Bad gIB benchmark input exits 2 naming the flag, with nothing on stdout;
// TCPXO's benchmark refuses gIB's flags.
func TestRenderGIBBenchmarkRefuses(t *testing.T) {
	gib := []string{"benchmark", "--fabric", "gib"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no machine type", append(gib, "--interfaces", validRDMA), "--machine-type is required with --fabric gib"},
		{"no mapping", append(gib, "--machine-type", "a4-highgpu-8g"), "eth2"},
		{"seven networks", append(gib, "--machine-type", "a4-highgpu-8g", "--interfaces", strings.TrimSuffix(validRDMA, ",eth9=rdma-7")), "eth9 is not mapped"},
		{"A3 Mega numbering", append(gib, "--machine-type", "a4-highgpu-8g", "--interfaces", valid), "move each up one interface"},
		{"an A3 Mega machine type", append(gib, "--machine-type", "a3-megagpu-8g", "--interfaces", validRDMA), "not served by the gIB fabric"},
		{"unknown collective", append(gib, "--machine-type", "a4-highgpu-8g", "--interfaces", validRDMA, "--collective", "broadcast"), "--collective \"broadcast\": the gIB benchmark runs all_gather or all_reduce"},
		{"TCPXO's profile", append(gib, "--machine-type", "a4-highgpu-8g", "--interfaces", validRDMA, "--profile", "simple"), "drop --profile"},
		{"one node", append(gib, "--machine-type", "a4-highgpu-8g", "--interfaces", validRDMA, "--nodes", "1"), "--nodes 1"},
		{"unpinned image", append(gib, "--machine-type", "a4-highgpu-8g", "--interfaces", validRDMA, "--benchmark-image", "nccl:latest"), "nccl:latest"},
		{"bad namespace", append(gib, "--machine-type", "a4-highgpu-8g", "--interfaces", validRDMA, "--namespace", "Team_A"), "Team_A"},
		{"TCPXO all_gather", []string{"benchmark", "--interfaces", valid, "--collective", "all_gather"}, "the TCPXO benchmark runs all_reduce only"},
		{"TCPXO machine type", []string{"benchmark", "--interfaces", valid, "--machine-type", "a4-highgpu-8g"}, "--machine-type is for --fabric gib"},
		{"unknown fabric", []string{"benchmark", "--fabric", "infiniband", "--interfaces", valid}, "use one of tcpxo, gib"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := render(t, tc.args...)
			if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 naming %q", code, out, stderr, tc.want)
			}
		})
	}
}
