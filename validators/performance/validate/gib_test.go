package validate

import (
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/performance/recipe"
)

const gibRecipe = "gke-a4-gib.yaml"

// gibObjects reads the TrainingRuntime and TrainJob a gIB dry run prints
// after its plan.
func gibObjects(t *testing.T, out string) (*trainer.TrainingRuntime, *trainer.TrainJob) {
	t.Helper()
	docs := strings.Split(out, "\n---\n")
	if len(docs) != 3 {
		t.Fatalf("%d documents, want the plan and two objects:\n%s", len(docs), out)
	}
	var rt trainer.TrainingRuntime
	var tj trainer.TrainJob
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &rt); err != nil {
		t.Fatal(err)
	}
	tail := strings.TrimSuffix(strings.TrimSpace(docs[2]), "dry run: nothing was created, changed or deleted")
	if err := yaml.UnmarshalStrict([]byte(tail), &tj); err != nil {
		t.Fatal(err)
	}
	return &rt, &tj
}

// validate --fabric gib --dry-run reads no cluster: it derives the gIB
// benchmark from the recipe's machine type and RDMA mapping, run from the
// pinned diagnostic image, on the collective the recipe's floor names, with
// the shipped gIB runtime's wiring, and prints the plan and both objects.
func TestGIBDryRunDerivesWithoutACluster(t *testing.T) {
	code, out, stderr := validate(t, noConnect(t), "--fabric", "gib", "--recipe", recipePath(gibRecipe), "--dry-run", "--namespace", "bench", "--nodes", "3")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	pins := shipped.GIBFacts()
	contains(t, "plan", out,
		"fabric gib on a4-highgpu-8g",
		"cluster: not read",
		"derived from torch-distributed-rdma-a4-highgpu-8g rendered for the recipe's configuration.gke.rdmaInterfaces (eth1=gvnic-1,eth2=rdma-0,",
		"image "+pins.DiagnosticImage+"; 3 nodes × 8 ranks (one per GPU); all_gather_perf 1K..8G over MPI, sshd on port 222; wiring equal to the shipped runtime",
		"floor: nccl-all-gather-bw >= 275.2 GB/s (recipe); passes at >= 247.68 GB/s",
		"tcpxogen nccl-report --fabric gib --floor '>= 275.2' --log FILE",
		"dry run: nothing was created, changed or deleted")
	bench, tj := gibObjects(t, out)
	if bench.Namespace != "bench" || !strings.HasPrefix(bench.Name, "nccl-tests-rdma-a4-highgpu-8g-") || tj.Spec.RuntimeRef.Name != bench.Name || tj.Labels[RunLabel] == "" {
		t.Errorf("benchmark %s/%s, TrainJob runs %s labelled %v", bench.Namespace, bench.Name, tj.Spec.RuntimeRef.Name, tj.Labels)
	}
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := recipe.Load(recipePath(gibRecipe))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: rec.Interfaces(), MachineType: "a4-highgpu-8g"})
	if err != nil {
		t.Fatal(err)
	}
	if diffs := benchmark.WiringEqual(rt, bench); len(diffs) > 0 {
		t.Errorf("the printed benchmark does not carry the shipped gIB wiring: %s", strings.Join(diffs, "; "))
	}
}

// The recipe's floor names the collective: an all_reduce floor runs
// all_reduce_perf.
func TestGIBDryRunFollowsTheRecipesCollective(t *testing.T) {
	r := writeFile(t, "r.yaml", strings.Replace(readFile(t, recipePath(gibRecipe)), "nccl-all-gather-bw", "nccl-all-reduce-bw", 1))
	code, out, stderr := validate(t, noConnect(t), "--fabric", "gib", "--recipe", r, "--dry-run")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	contains(t, "plan", out, "all_reduce_perf 1K..8G", "/third_party/nccl-tests-mpi/build/all_reduce_perf", "floor: nccl-all-reduce-bw >= 275.2")
	if strings.Contains(out, "all_gather_perf") {
		t.Errorf("an all_reduce recipe runs all_gather_perf:\n%s", out)
	}
}

// What a gIB dry run cannot do is bad input, exit 2, nothing on stdout,
// no cluster contacted; a gIB recipe is not validated as TCPXO's.
func TestGIBDryRunRefuses(t *testing.T) {
	gib := []string{"--fabric", "gib", "--recipe", recipePath(gibRecipe), "--dry-run"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a live run", []string{"--fabric", "gib", "--recipe", recipePath(gibRecipe)}, "--fabric gib runs with --dry-run only"},
		{"a TCPXO recipe", []string{"--fabric", "gib", "--recipe", recipePath(declared), "--dry-run"}, "is for fabric tcpxo, not gib"},
		{"a gIB recipe as TCPXO", []string{"--recipe", recipePath(gibRecipe), "--dry-run"}, "is for fabric gib: run validate --fabric gib"},
		{"unknown fabric", []string{"--fabric", "rdma", "--recipe", recipePath(gibRecipe), "--dry-run"}, `--fabric: unknown fabric "rdma"`},
		{"signing", append(gib, "--sign-key", "key.pem"), "--sign-key and --allow-mutable-tags sign a live run's results"},
		{"a kubeconfig", append(gib, "--kubeconfig", "kc"), "reads no cluster"},
		{"one node", append(gib, "--nodes", "1"), "--nodes 1"},
		{"bad namespace", append(gib, "--namespace", "Bad_NS"), `namespace "Bad_NS"`},
		{"image by tag", append(gib, "--benchmark-image", "nvcr.io/example/nccl-tests:2.16.4"), "not pinned by digest"},
		{"no recipe", []string{"--fabric", "gib", "--dry-run"}, "--recipe is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := validate(t, noConnect(t), tc.args...)
			if code != exitUsage || stdout != "" {
				t.Fatalf("exit %d, stdout %q; want exit 2 and nothing printed; stderr:\n%s", code, stdout, stderr)
			}
			contains(t, "stderr", stderr, tc.want)
		})
	}
}
