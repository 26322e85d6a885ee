package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/internal/names"

	"github.com/tcpxogen/tcpxogen/runtimes"
)

// pinnedImage is a benchmark image pinned the way validate requires; a dry
// run never pulls it.
const pinnedImage = "us-docker.pkg.dev/example/nccl-tests/nccl-tests:2.16.4@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// tcpxogenBinary builds the shipped CLI from the parent module, as a user
// gets it: `validate` is driven through its real entry point, its flags
// and a kubeconfig, not through package internals.
func tcpxogenBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tcpxogen-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath, buildErr = harness.BuildCLI(repoRoot, dir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// kubeconfig writes the control plane's admin credentials as a kubeconfig.
func kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// exampleRecipe is testdata/recipes/gke-h100.yaml (declares the trainer)
// with the networks of the shipped golden, so the golden this suite
// deploys is what the recipe renders.
func exampleRecipe(t *testing.T, networks []string) string {
	t.Helper()
	return recipeFile(t, networks, true)
}

// recipeFile writes a recipe mapping networks, declaring the trainer or not
// (testdata/recipes/gke-h100-trainer-undeclared.yaml's shape).
func recipeFile(t *testing.T, networks []string, declaresTrainer bool) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`apiVersion: tcpxogen.dev/v1alpha1
kind: Recipe
criteria: {service: gke, accelerator: h100, intent: training, platform: kubeflow}
components:
`)
	if declaresTrainer {
		b.WriteString("  - name: kubeflow-trainer\n    version: v2.2.0\n")
	}
	b.WriteString(`  - name: nccl-tcpxo-installer
configuration:
  gke:
    tcpxoInterfaces:
`)
	for i, n := range networks {
		fmt.Fprintf(&b, "      - {interfaceName: eth%d, network: %s}\n", i+1, n)
	}
	b.WriteString("constraints:\n  - name: nccl-all-reduce-bw\n    value: \">= 300\"\n")
	path := filepath.Join(t.TempDir(), "recipe.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func exampleNetworks() []string {
	var out []string
	for _, b := range runtimes.ExampleInterfaces().Bindings() {
		out = append(out, b.Network)
	}
	return out
}

// prepareCluster makes the control plane look like a provisioned A3 Mega
// cluster for validate: the GPU-NIC networks as Ready GKE Device networks,
// each node carrying them on its GPU NICs and running the pinned installer
// (what validate's preflight checks as check cluster does), and the
// trainer's and JobSet's controller Deployments standing for the
// controllers this process runs.
func prepareCluster(t *testing.T, ctx context.Context, networks []string) {
	t.Helper()
	if err := cp.ProvisionPool(ctx, networks, pinnedInstaller(t)); err != nil {
		t.Fatal(err)
	}
	if err := cp.RegisterControllerDeployments(ctx); err != nil {
		t.Fatal(err)
	}
}

// runValidate runs the shipped CLI's validate against the control plane
// and returns its exit code, stdout and stderr.
func runValidate(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	full := append([]string{"validate", "--kubeconfig", kubeconfig(t), "--root", root, "--benchmark-image", pinnedImage, "--out", t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, tcpxogenBinary(t), full...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running tcpxogen validate: %v", err)
	}
	return code, out.String(), errb.String()
}

// TestValidatePreflights runs `validate --dry-run` against the control
// plane: with the trainer declared and running, the GPU pool attached to
// the recipe's networks and the shipped runtime deployed as the recipe
// renders it, every preflight passes and the run is planned; with a
// recipe whose networks the cluster's runtime does not use, the deployed
// runtime check refuses, and a dry run writes nothing either way.
func TestValidatePreflights(t *testing.T) {
	ctx := context.Background()
	installShippedRuntime(t, ctx)
	nets := exampleNetworks()
	prepareCluster(t, ctx, nets)
	ns := namespace(t, ctx, "validate-dry")

	t.Run("agrees", func(t *testing.T) {
		code, out, errs := runValidate(t, ctx, "--recipe", exampleRecipe(t, nets), "--namespace", ns, "--dry-run")
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		for _, want := range []string{"shipped runtime: ClusterTrainingRuntime " + names.Runtime + ": ok", "GPU pool", "cluster fabric (tcpxogen check cluster): ok"} {
			if !strings.Contains(out, want) {
				t.Errorf("plan lacks %q:\n%s", want, out)
			}
		}
		t.Logf("plan:\n%s", out)
	})
	t.Run("runtime differs from recipe", func(t *testing.T) {
		other := make([]string, len(nets))
		for i := range nets {
			other[i] = fmt.Sprintf("other-gpu-nic-%d", i+1)
		}
		code, out, errs := runValidate(t, ctx, "--recipe", exampleRecipe(t, other), "--namespace", ns, "--dry-run")
		if code == 0 {
			t.Fatalf("validate accepted a cluster whose runtime and node networks differ from the recipe:\n%s", out)
		}
		if !strings.Contains(out+errs, "does not agree with what the recipe's mapping renders") {
			t.Errorf("refusal does not name the runtime disagreement:\nstdout:\n%s\nstderr:\n%s", out, errs)
		}
	})
	// check cluster's pools (issue 20): validate refuses to benchmark them.
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, nodes []string)
		want  []string
	}{{
		name: "a gVNIC in a GPU NIC's slot on every node",
		spoil: func(t *testing.T, nodes []string) {
			provision(t, ctx, nets, func(string) []harness.HostNIC { return displaced(nets) })
		},
		want: []string{"network gvnic-net sits on host NIC gve0 (0000:06:00.0), which is not a GPU NIC"},
	}, {
		name: "an installer drifted on one node",
		spoil: func(t *testing.T, nodes []string) {
			if err := cp.SetInstallerPod(ctx, nodes[1], driftedInstaller(t)); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{"FAIL installer " + cp.Nodes.NodeNames()[1] + ": the node runs installer v9.9.9, but bom/bom.yaml pins"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() { prepareCluster(t, ctx, nets) })
			c.spoil(t, cp.Nodes.NodeNames())
			code, out, errs := runValidate(t, ctx, "--recipe", exampleRecipe(t, nets), "--namespace", ns, "--dry-run")
			if code != 1 {
				t.Fatalf("exit %d, want 1: validate did not refuse a pool check cluster fails\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			for _, want := range append([]string{"cluster fabric (tcpxogen check cluster): FAILED", "cluster fabric: the GPU pool fails"}, c.want...) {
				if !strings.Contains(out+errs, want) {
					t.Errorf("validate's refusal lacks %q:\nstdout:\n%s\nstderr:\n%s", want, out, errs)
				}
			}
		})
	}
	var tjs trainer.TrainJobList
	if err := cp.Client.List(ctx, &tjs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var trs trainer.TrainingRuntimeList
	if err := cp.Client.List(ctx, &trs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(tjs.Items)+len(trs.Items) != 0 {
		t.Errorf("a dry run created %d TrainJobs and %d TrainingRuntimes", len(tjs.Items), len(trs.Items))
	}
}

// runLabel is the label validate puts on everything it creates
// (validate.RunLabel), spelled out here: it is what users select leftovers
// by, so a rename must fail this suite.
const runLabel = "tcpxogen.dev/validation-run"

// TestValidateCleanupAfterFailure runs validate live with the trainer
// declared and present (the reuse row) on a cluster whose benchmark pods
// never start: the run must fail at its --timeout (10 s), say so, delete the
// benchmark TrainingRuntime and TrainJob it created (the garbage
// collector then takes the JobSet, Jobs and pods), and leave the trainer,
// its controllers and the shipped runtime exactly as they were.
func TestValidateCleanupAfterFailure(t *testing.T) {
	ctx := context.Background()
	shipped := installShippedRuntime(t, ctx)
	nets := exampleNetworks()
	prepareCluster(t, ctx, nets)
	ns := namespace(t, ctx, "validate-never-starts")
	cp.Nodes.SetPlan(ns, harness.Plan{Outcome: func(*corev1.Pod) harness.Outcome { return harness.NeverStart }})

	var deps appsv1.DeploymentList
	if err := cp.Client.List(ctx, &deps, client.InNamespace(harness.ControllerNamespace)); err != nil {
		t.Fatal(err)
	}

	code, out, errs := runValidate(t, ctx, "--recipe", exampleRecipe(t, nets), "--namespace", ns, "--timeout", "10s")
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errs)
	if code == 0 {
		t.Fatal("validate passed although no benchmark pod ever started")
	}
	for _, want := range []string{"created TrainingRuntime", "created TrainJob", "deleted TrainJob", "deleted TrainingRuntime", "did not finish within --timeout 10s", "the benchmark never started"} {
		if !strings.Contains(errs, want) {
			t.Errorf("validate's report lacks %q", want)
		}
	}

	// Teardown: nothing of the run survives, down to its pods.
	waitFor(t, ctx, 2*time.Minute, "the run's objects to be gone or deleted", func() (bool, error) {
		return runDeleted(ctx, ns)
	}, func() string { return describeRun(ctx, ns) })

	// Nothing else touched.
	after := &trainer.ClusterTrainingRuntime{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: names.Runtime}, after); err != nil {
		t.Fatalf("the shipped runtime is gone: %v", err)
	}
	if after.ResourceVersion != shipped.ResourceVersion {
		t.Errorf("validate modified the deployed shipped runtime (resourceVersion %s -> %s)", shipped.ResourceVersion, after.ResourceVersion)
	}
	var depsAfter appsv1.DeploymentList
	if err := cp.Client.List(ctx, &depsAfter, client.InNamespace(harness.ControllerNamespace)); err != nil {
		t.Fatal(err)
	}
	if len(depsAfter.Items) != len(deps.Items) {
		t.Errorf("validate changed the trainer's controllers: %d Deployments before, %d after", len(deps.Items), len(depsAfter.Items))
	}
	for i := range deps.Items {
		if depsAfter.Items[i].ResourceVersion != deps.Items[i].ResourceVersion {
			t.Errorf("validate modified Deployment %s", deps.Items[i].Name)
		}
	}
}

// TestValidateLifecycleRows runs validate for the rows of the recipe-driven
// trainer lifecycle policy this control plane can be in (the trainer runs
// in-process, so "missing" is out of reach; see README): complete and
// undeclared reuses the trainer; with its controller Deployments gone the
// trainer is partial, and validate refuses whether the recipe declares it
// or not, before creating anything. Each live run is checked to have
// created nothing.
func TestValidateLifecycleRows(t *testing.T) {
	ctx := context.Background()
	installShippedRuntime(t, ctx)
	nets := exampleNetworks()
	prepareCluster(t, ctx, nets)
	ns := namespace(t, ctx, "validate-rows")
	cp.Nodes.SetPlan(ns, harness.Plan{Outcome: func(*corev1.Pod) harness.Outcome { return harness.NeverStart }})

	createdNothing := func(t *testing.T) {
		t.Helper()
		var tjs trainer.TrainJobList
		var trs trainer.TrainingRuntimeList
		for _, l := range []client.ObjectList{&tjs, &trs} {
			if err := cp.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(tjs.Items) + len(trs.Items); n != 0 {
			t.Errorf("validate created %d objects in %s", n, ns)
		}
	}
	t.Run("undeclared and complete: reuse", func(t *testing.T) {
		code, out, errs := runValidate(t, ctx, "--recipe", recipeFile(t, nets, false), "--namespace", ns, "--dry-run")
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		if !strings.Contains(out, "trainer lifecycle: reuse-stray") || !strings.Contains(out, "installs nothing and deletes nothing") {
			t.Errorf("plan does not reuse the undeclared trainer:\n%s", out)
		}
		createdNothing(t)
	})

	// Partial: the CRDs stay, the controller Deployments go.
	var deps appsv1.DeploymentList
	if err := cp.Client.List(ctx, &deps, client.InNamespace(harness.ControllerNamespace)); err != nil {
		t.Fatal(err)
	}
	for i := range deps.Items {
		if err := cp.Client.Delete(ctx, &deps.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := cp.RegisterControllerDeployments(ctx); err != nil {
			t.Errorf("restoring the controller Deployments: %v", err)
		}
	})
	for _, row := range []struct {
		name     string
		declared bool
		action   string
	}{
		{"declared and partial: refuse", true, "fail-declared-not-deployed"},
		{"undeclared and partial: refuse", false, "fail-partial"},
	} {
		t.Run(row.name, func(t *testing.T) {
			// Live, not a dry run: the refusal must come before any write.
			code, out, errs := runValidate(t, ctx, "--recipe", recipeFile(t, nets, row.declared), "--namespace", ns, "--timeout", "10s")
			if code == 0 {
				t.Fatalf("validate ran on a partial trainer:\n%s", out)
			}
			if !strings.Contains(out+errs, row.action) {
				t.Errorf("the refusal does not name %s:\nstdout:\n%s\nstderr:\n%s", row.action, out, errs)
			}
			if strings.Contains(errs, "validate: created") {
				t.Errorf("validate created objects before refusing:\n%s", errs)
			}
			createdNothing(t)
		})
	}
}

// TestValidateLauncherFails runs validate live while the benchmark's
// launcher fails and its workers hang: the TrainJob fails, validate says
// so (and that the launcher's log could not be read: no kubelet serves
// logs here), and deletes what it created, down to the pods.
func TestValidateLauncherFails(t *testing.T) {
	ctx := context.Background()
	installShippedRuntime(t, ctx)
	nets := exampleNetworks()
	prepareCluster(t, ctx, nets)
	ns := namespace(t, ctx, "validate-launcher-fails")
	cp.Nodes.SetPlan(ns, harness.Plan{Outcome: func(p *corev1.Pod) harness.Outcome {
		if p.Labels[jobsetv1alpha2.ReplicatedJobNameKey] == "launcher" {
			return harness.Fail
		}
		return harness.KeepRunning
	}})
	code, out, errs := runValidate(t, ctx, "--recipe", exampleRecipe(t, nets), "--namespace", ns, "--timeout", "60s")
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errs)
	if code == 0 {
		t.Fatal("validate passed although the launcher failed")
	}
	for _, want := range []string{"created TrainJob", "deleted TrainJob", "deleted TrainingRuntime", "failed"} {
		if !strings.Contains(errs, want) {
			t.Errorf("validate's report lacks %q", want)
		}
	}
	if strings.Contains(errs, "did not finish within") {
		t.Error("validate timed out instead of seeing the TrainJob fail")
	}
	waitFor(t, ctx, 2*time.Minute, "the run's objects to be gone or deleted", func() (bool, error) {
		return runDeleted(ctx, ns)
	}, func() string { return describeRun(ctx, ns) })
}

// TestValidatePasses runs validate's whole live path on the declared row:
// the workers run (sshd never exits, as in the real benchmark image), the
// launcher succeeds after 5 s and logs testdata/nccl-logs/healthy.log,
// which the simulated kubelet serves through the API server's pods/log.
// validate must judge the log, check the workers' wiring, pass, and clean
// up. When the launcher ends JobSet deletes the running workers: validate
// must have checked them while they ran (it did not, before this suite).
func TestValidatePasses(t *testing.T) {
	ctx := context.Background()
	installShippedRuntime(t, ctx)
	nets := exampleNetworks()
	prepareCluster(t, ctx, nets)
	ns := namespace(t, ctx, "validate-passes")
	// The launcher runs a while, as all_reduce_perf does (minutes on a
	// cluster), longer than validate's worker-pod poll (2 s).
	cp.Nodes.SetPlan(ns, healthyPlan(t))
	code, out, errs := runValidate(t, ctx, "--recipe", exampleRecipe(t, nets), "--namespace", ns, "--timeout", "90s")
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errs)
	if code != 0 {
		t.Fatalf("validate failed a healthy run (exit %d)", code)
	}
	for _, want := range []string{"deleted TrainJob", "deleted TrainingRuntime"} {
		if !strings.Contains(errs, want) {
			t.Errorf("validate's report lacks %q", want)
		}
	}
}

// TestValidateSignsEvidence is TestValidatePasses with --sign-key: the
// bundle written next to the report verifies with the public key
// (`tcpxogen verify`, sigstore-go's verifier) against the report, chart and
// log, and its predicate carries the digests the (simulated) kubelet
// reported in the pods' containerStatuses, and no pod name.
func TestValidateSignsEvidence(t *testing.T) {
	ctx := context.Background()
	installShippedRuntime(t, ctx)
	nets := exampleNetworks()
	prepareCluster(t, ctx, nets)
	ns := namespace(t, ctx, "validate-signs")
	cp.Nodes.SetPlan(ns, healthyPlan(t))
	keys := filepath.Join(repoRoot, "internal", "evidence", "testdata")
	out := t.TempDir()
	code, stdout, errs := runValidate(t, ctx, "--recipe", exampleRecipe(t, nets), "--namespace", ns, "--timeout", "90s",
		"--out", out, "--sign-key", filepath.Join(keys, "ed25519.pem"))
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout, errs)
	if code != 0 {
		t.Fatalf("validate --sign-key failed a healthy run (exit %d)", code)
	}
	bundlePath := filepath.Join(out, "evidence.sigstore.json")
	args := []string{"verify", "--key", filepath.Join(keys, "ed25519.pub.pem"), bundlePath}
	for _, f := range []string{"nccl-report.ctrf.json", "nccl-busbw.svg", "nccl-launcher.log"} {
		args = append(args, "--report", filepath.Join(out, f))
	}
	if vout, err := exec.CommandContext(ctx, tcpxogenBinary(t), args...).CombinedOutput(); err != nil {
		t.Fatalf("tcpxogen verify refused validate's bundle: %v\n%s", err, vout)
	}

	// The predicate, read from the (verified) DSSE payload.
	raw, err := os.ReadFile(bundlePath)
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		DSSE struct {
			Payload []byte `json:"payload"`
		} `json:"dsseEnvelope"`
	}
	var stmt struct {
		Predicate struct {
			Images []struct {
				Container, Image, ImageID string
				Init                      bool
			} `json:"images"`
			DeployedRuntimeDigest string `json:"deployedRuntimeDigest"`
			RuntimeSource         string `json:"runtimeSource"`
		} `json:"predicate"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.DSSE.Payload, &stmt); err != nil {
		t.Fatal(err)
	}
	p := stmt.Predicate
	if !strings.HasPrefix(p.DeployedRuntimeDigest, "sha256:") || p.RuntimeSource != "shipped" {
		t.Errorf("predicate: deployedRuntimeDigest %q, runtimeSource %q", p.DeployedRuntimeDigest, p.RuntimeSource)
	}
	benchSeen := false
	for _, img := range p.Images {
		if !strings.Contains(img.ImageID, "@sha256:") {
			t.Errorf("image of container %s has no digest: %q", img.Container, img.ImageID)
		}
		benchSeen = benchSeen || img.ImageID == pinnedImage
	}
	if !benchSeen {
		t.Errorf("the predicate's images %+v lack the benchmark image %s", p.Images, pinnedImage)
	}
	// The run's pods are named after its TrainJob (and gone by now); the
	// nodes are the pool's.
	payload := string(b.DSSE.Payload)
	if strings.Contains(payload, names.Benchmark+"-") {
		t.Errorf("the signed statement names one of the run's objects or pods (%s-...)", names.Benchmark)
	}
	var nodes corev1.NodeList
	if err := cp.Client.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if strings.Contains(payload, n.Name) {
			t.Errorf("the signed statement names node %s", n.Name)
		}
	}
}
