package rendercmd

import (
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// benchmarkDocs splits render benchmark's YAML stream into the runtime and
// the TrainJob.
func benchmarkDocs(t *testing.T, out string) (*trainer.TrainingRuntime, *trainer.TrainJob) {
	t.Helper()
	docs := strings.Split(out, "\n---\n")
	if len(docs) != 3 { // the header's comments, then the two objects
		t.Fatalf("%d documents, want the header and two objects:\n%s", len(docs), out)
	}
	var rt trainer.TrainingRuntime
	var tj trainer.TrainJob
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &rt); err != nil {
		t.Fatalf("first object: %v", err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[2]), &tj); err != nil {
		t.Fatalf("second object: %v", err)
	}
	return &rt, &tj
}

// For the example networks in the golden's namespace, render benchmark
// prints exactly the benchmark derive gives (the committed golden's object),
// and a TrainJob that runs it.
func TestRenderBenchmarkIsTheDerivedOne(t *testing.T) {
	code, out, stderr := render(t, "benchmark", "--interfaces", runtimes.ExampleInterfaces().String(), "--namespace", benchmark.GoldenNamespace)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rt, tj := benchmarkDocs(t, out)
	shippedRT, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	want, err := benchmark.GoldenRuntime(shippedRT, shipped.Facts())
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(rt, want) {
		t.Errorf("render benchmark differs from the derived golden runtime")
	}
	if tj.Kind != trainer.TrainJobKind || tj.Namespace != rt.Namespace || tj.Spec.RuntimeRef.Name != rt.Name ||
		tj.Spec.RuntimeRef.Kind == nil || *tj.Spec.RuntimeRef.Kind != trainer.TrainingRuntimeKind {
		t.Errorf("TrainJob %+v does not run %s/%s", tj, rt.Namespace, rt.Name)
	}
	if !strings.Contains(stderr, "nccl-report") {
		t.Errorf("stderr %q does not say how to judge the run", stderr)
	}
}

// The user's networks, namespace and node count reach the benchmark, whose
// ranks keep Google's open-files limit.
func TestRenderBenchmarkForACluster(t *testing.T) {
	code, out, stderr := render(t, "benchmark", "--interfaces", valid, "--namespace", "team-a", "--nodes", "4", "--node-selector", "pool=a3")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rt, _ := benchmarkDocs(t, out)
	if rt.Namespace != "team-a" || rt.Spec.MLPolicy == nil || rt.Spec.MLPolicy.NumNodes == nil || *rt.Spec.MLPolicy.NumNodes != 4 {
		t.Errorf("namespace %q, mlPolicy %+v; want team-a and 4 nodes", rt.Namespace, rt.Spec.MLPolicy)
	}
	for _, want := range []string{`"network":"net-8"`, "pool: a3", "ulimit -n 1048576"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// Bad input exits 2 with the flag named and prints nothing.
func TestRenderBenchmarkRejectsBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no mapping":      {nil, "eth1=<network>"},
		"seven networks":  {[]string{"--interfaces", valid[:strings.LastIndex(valid, ",")]}, "eth8"},
		"one node":        {[]string{"--interfaces", valid, "--nodes", "1"}, "--nodes 1"},
		"bad namespace":   {[]string{"--interfaces", valid, "--namespace", "Team_A"}, "Team_A"},
		"unpinned image":  {[]string{"--interfaces", valid, "--benchmark-image", "nccl:latest"}, "nccl:latest"},
		"unknown profile": {[]string{"--interfaces", valid, "--profile", "fast"}, "fast"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, stderr := render(t, append([]string{"benchmark"}, tc.args...)...)
			if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr mentioning %q", code, out, stderr, tc.want)
			}
		})
	}
}
