package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// gibRecipeFile writes a gIB recipe for the machine type whose GPU is gpu
// (criteria.accelerator: h200 is A3 Ultra, b200 A4), mapping the goldens'
// RDMA networks, declaring the trainer, with an all_gather floor.
func gibRecipeFile(t *testing.T, gpu, floor string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: tcpxogen.dev/v1alpha1
kind: Recipe
fabric: gib
criteria: {service: gke, accelerator: %s, intent: training, platform: kubeflow}
components:
  - name: kubeflow-trainer
    version: v2.2.0
  - name: nccl-rdma-installer
configuration:
  gke:
    rdmaInterfaces:
`, gpu)
	for _, bd := range runtimes.ExampleRDMAInterfaces().Bindings() {
		fmt.Fprintf(&b, "      - {interfaceName: %s, network: %s}\n", bd.Interface, bd.Network)
	}
	fmt.Fprintf(&b, "constraints:\n  - name: nccl-all-gather-bw\n    value: %q\n", floor)
	path := filepath.Join(t.TempDir(), "recipe-gib.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// addProvisionedGIBPool adds a pool of two mt nodes as Google's setup
// provisions one (the RDMA networks Ready with deviceMode RDMA on
// eth2..eth9, the pinned nccl-rdma-installer's pod on each node, a kubelet
// above the machine type's GKE floor), and removes the pool and its
// installer pods when t ends. It returns the pool's nodes.
func addProvisionedGIBPool(t *testing.T, ctx context.Context, name string, mt fabric.MachineType) []string {
	t.Helper()
	nodes := addClusterPool(t, ctx, harness.Pool{Name: name, InstanceType: mt.Name, Accelerator: mt.Accelerator, Nodes: 2})
	provisionGIB(t, ctx, gibRDMANetworks, nil, nodes, func(string) []harness.HostNIC { return harness.RDMANICs("", gibRDMANetworks) })
	return nodes
}

// gibPassingLog is a passing 2-node all_gather run on gIB on A3 Ultra,
// taken the way busbw's gIB tests take theirs: busbw's reconstructed A4 log
// (validators/performance/busbw/testdata/gib, "RECONSTRUCTION" in its
// header: 342.69 GB/s at 8 GB, NCCL's "Using network gIB" lines), with
// A3 Ultra's host and GPU names.
func gibPassingLog(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "validators", "performance", "busbw", "testdata", "gib", "a4-2node-all-gather.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("a4-node-", "a3u-node-", "NVIDIA B200", "NVIDIA H200").Replace(string(data))
}

// gibPlan runs the launcher for a while and serves the gIB log; the
// workers run until JobSet ends them.
func gibPlan(t *testing.T) harness.Plan {
	t.Helper()
	log := gibPassingLog(t)
	return launcherPlan(func(*corev1.Pod) string { return log })
}

// TestValidateGIB runs `validate --fabric gib` live against the control
// plane on a simulated A3 Ultra pool beside the A3 Mega nodes, as a
// ServiceAccount bound to exactly what `render rbac --for validate`
// prints: the pool gate, check cluster's gIB checks, the deployed
// torch-distributed-rdma-a3-ultragpu-8g's agreement, the benchmark derived
// from it run through the trainer's and JobSet's controllers, its workers
// bound to the pool and judged by gIB's rules, the launcher's log judged
// with gIB's rules against the recipe's all_gather floor, and everything it
// created deleted. An A4 recipe on this cluster is refused before anything
// is created, naming the machine types the cluster has.
func TestValidateGIB(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	installGIBRuntimes(t, ctx)
	if err := cp.RegisterControllerDeployments(ctx); err != nil {
		t.Fatal(err)
	}
	a3u, ok := fabric.GIB.MachineType("a3-ultragpu-8g")
	if !ok {
		t.Fatal("no a3-ultragpu-8g in the fabric registry")
	}
	pool := addProvisionedGIBPool(t, ctx, "validate-gib", a3u)

	t.Run("passes under its role", func(t *testing.T) {
		ns := namespace(t, ctx, "validate-gib")
		cp.Nodes.SetPlan(ns, gibPlan(t))
		applyRBAC(t, ctx, renderRBAC(t, "--for", "validate", "--namespace", ns))
		keys := filepath.Join(repoRoot, "internal", "evidence", "testdata")
		results := t.TempDir()
		code, out, errs := runValidate(t, ctx, "--fabric", "gib", "--recipe", gibRecipeFile(t, "h200", ">= 264"), "--namespace", ns, "--timeout", "90s",
			"--kubeconfig", asServiceAccount(t, ctx, ns), "--out", results, "--sign-key", filepath.Join(keys, "ed25519.pem"))
		t.Logf("stdout:\n%s\nstderr:\n%s", out, errs)
		if code != 0 {
			t.Fatalf("validate --fabric gib failed a healthy run under its role (exit %d)", code)
		}
		// The run is signed as a TCPXO one is: tcpxogen verify (sigstore-go's
		// verifier, the public key alone) accepts the bundle over the
		// report, chart and log, and prints the fabric and its pins from the
		// signed predicate.
		args := []string{"verify", "--key", filepath.Join(keys, "ed25519.pub.pem"), filepath.Join(results, "evidence.sigstore.json")}
		for _, f := range []string{"nccl-report.ctrf.json", "nccl-busbw.svg", "nccl-launcher.log"} {
			args = append(args, "--report", filepath.Join(results, f))
		}
		vcode, vout, verrs := runOffline(t, args...)
		if vcode != 0 {
			t.Fatalf("tcpxogen verify refused validate --fabric gib's bundle: exit %d\n%s%s", vcode, vout, verrs)
		}
		for _, want := range []string{"verify: OK", "fabric     gib; runtime source shipped", "installer  " + pinnedGIBInstaller(t), "daemon     none"} {
			if !strings.Contains(vout, want) {
				t.Errorf("verify does not say %q:\n%s", want, vout)
			}
		}
		for _, want := range []string{
			"fabric gib on a3-ultragpu-8g",
			"GPU pool: ok",
			"cluster fabric (tcpxogen check cluster): ok",
			"shipped runtime: ClusterTrainingRuntime torch-distributed-rdma-a3-ultragpu-8g: ok",
			"all_gather_perf 1K..8G over MPI",
			"result: PASS",
			"342.69 GB/s",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("validate's output lacks %q", want)
			}
		}
		for _, want := range []string{"created TrainJob " + ns + "/nccl-tests-rdma-a3-ultragpu-8g-", "deleted TrainJob", "deleted TrainingRuntime"} {
			if !strings.Contains(errs, want) {
				t.Errorf("validate's report lacks %q", want)
			}
		}
		// The workers ran on the pool: the runtime's machine-type
		// affinity, carried into the benchmark, bound them there.
		pods, err := cp.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Labels[jobsetv1alpha2.ReplicatedJobNameKey] == "node" && p.Spec.NodeName != pool[0] && p.Spec.NodeName != pool[1] {
				t.Errorf("worker %s ran on %s, not on the A3 Ultra pool %v", p.Name, p.Spec.NodeName, pool)
			}
		}
	})

	t.Run("an A4 recipe is refused", func(t *testing.T) {
		ns := namespace(t, ctx, "validate-gib-a4")
		code, out, errs := runValidate(t, ctx, "--fabric", "gib", "--recipe", gibRecipeFile(t, "b200", ">= 275.2"), "--namespace", ns, "--timeout", "60s")
		if code != 1 {
			t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		for _, want := range []string{"validation refused", "the recipe is for a4-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g"} {
			if !strings.Contains(errs, want) {
				t.Errorf("the refusal lacks %q:\n%s", want, errs)
			}
		}
		if strings.Contains(errs, "created ") {
			t.Errorf("a refused run created something:\n%s", errs)
		}
	})
	t.Logf("TestValidateGIB: %s", time.Since(start).Round(100*time.Millisecond))
}
