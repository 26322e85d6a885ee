// The lifecycle rows that need a cluster without Kubeflow Trainer: their
// own test binary, because the main suite's control plane runs the trainer
// from the start. Here the control plane has no trainer or JobSet CRDs,
// webhooks or controllers.
package notrainer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/validators/performance/lifecycle"
)

const repoRoot = "../.."

const pinnedImage = "us-docker.pkg.dev/example/nccl-tests/nccl-tests:2.16.4@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var (
	cp  *harness.ControlPlane
	cli string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	opts := harness.Options{NoTrainer: true}
	if os.Getenv("TCPXOGEN_E2E_LOG") != "" {
		opts.Log = os.Stderr
	}
	var err error
	if cp, err = harness.Start(context.Background(), opts); err != nil {
		fmt.Fprintf(os.Stderr, "starting the control plane: %v\n", err)
		return 1
	}
	defer cp.Stop()
	dir, err := os.MkdirTemp("", "tcpxogen-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if cli, err = harness.BuildCLI(repoRoot, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func networks() []string {
	var out []string
	for _, b := range runtimes.ExampleInterfaces().Bindings() {
		out = append(out, b.Network)
	}
	return out
}

func recipe(t *testing.T, declaresTrainer bool) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: tcpxogen.dev/v1alpha1\nkind: Recipe\ncriteria: {service: gke, accelerator: h100, intent: training, platform: kubeflow}\ncomponents:\n")
	if declaresTrainer {
		b.WriteString("  - name: kubeflow-trainer\n    version: v2.2.0\n")
	}
	b.WriteString("  - name: nccl-tcpxo-installer\nconfiguration:\n  gke:\n    tcpxoInterfaces:\n")
	for i, n := range networks() {
		fmt.Fprintf(&b, "      - {interfaceName: eth%d, network: %s}\n", i+1, n)
	}
	b.WriteString("constraints:\n  - name: nccl-all-reduce-bw\n    value: \">= 300\"\n")
	p := filepath.Join(t.TempDir(), "recipe.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runValidate(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, cli, append([]string{"validate", "--kubeconfig", kc, "--root", root, "--benchmark-image", pinnedImage, "--out", t.TempDir()}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running tcpxogen validate: %v", err)
	}
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	return code, out.String(), errb.String()
}

// trainerLeft lists what of a trainer install is on the cluster: trainer
// and JobSet CRDs, a namespace an install created (the namespace controller
// removes it once deleted), and any Deployment.
func trainerLeft(t *testing.T, ctx context.Context) []string {
	t.Helper()
	var left []string
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := cp.Client.List(ctx, &crds); err != nil {
		t.Fatal(err)
	}
	for _, c := range crds.Items {
		if strings.HasSuffix(c.Name, ".trainer.kubeflow.org") || strings.HasSuffix(c.Name, ".jobset.x-k8s.io") {
			left = append(left, "CRD "+c.Name)
		}
	}
	var nss corev1.NamespaceList
	if err := cp.Client.List(ctx, &nss); err != nil {
		t.Fatal(err)
	}
	for _, n := range nss.Items {
		if n.Labels[lifecycle.InstallIDLabel] != "" {
			left = append(left, "Namespace "+n.Name+" ("+string(n.Status.Phase)+")")
		}
	}
	var deps appsv1.DeploymentList
	if err := cp.Client.List(ctx, &deps); err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		left = append(left, "Deployment "+d.Namespace+"/"+d.Name)
	}
	return left
}

func prepare(t *testing.T, ctx context.Context) string {
	t.Helper()
	// A healthy pool as GKE shows one, running the pinned installer:
	// validate's preflight checks both (as check cluster does).
	b, _, _, err := bom.LoadEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.ProvisionPool(ctx, networks(), b.Images.Installer.Reference); err != nil {
		t.Fatal(err)
	}
	ns := "validate"
	if err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return ns
}

// TestDeclaredAndMissing: the recipe declares the trainer, the cluster has
// none: validate refuses before writing anything.
func TestDeclaredAndMissing(t *testing.T) {
	ctx := context.Background()
	ns := prepare(t, ctx)
	code, out, errs := runValidate(t, ctx, "--recipe", recipe(t, true), "--namespace", ns, "--timeout", "30s")
	if code == 0 {
		t.Fatal("validate ran although the declared trainer is missing")
	}
	if !strings.Contains(out+errs, "fail-declared-not-deployed") {
		t.Error("the refusal does not name fail-declared-not-deployed")
	}
	if strings.Contains(errs, "validate: created") || strings.Contains(errs, "validate: installed") {
		t.Error("validate wrote to the cluster before refusing")
	}
	if left := trainerLeft(t, ctx); len(left) > 0 {
		t.Errorf("a trainer appeared: %v", left)
	}
}

// TestUndeclaredAndAbsent: the recipe does not declare the trainer and the
// cluster has none: validate installs the pinned trainer it renders from
// the Go modules (no --trainer-manifests) and, when it never becomes ready
// (no kubelet runs its controllers here), tears down exactly what it
// installed, leaving nothing of it behind.
func TestUndeclaredAndAbsent(t *testing.T) {
	ctx := context.Background()
	ns := prepare(t, ctx)
	code, out, errs := runValidate(t, ctx, "--recipe", recipe(t, false), "--namespace", ns, "--timeout", "15s")
	if code == 0 {
		t.Fatal("validate passed with a trainer that never became ready")
	}
	if !strings.Contains(out, "install-and-tear-down") || !strings.Contains(out, "rendered offline with kustomize") {
		t.Errorf("the plan does not install the rendered trainer")
	}
	if !strings.Contains(errs, "CustomResourceDefinition") {
		t.Errorf("validate's report names no CRD it installed or removed")
	}
	waitTrainerGone(t, ctx, "validate")
}

// validateArgs are runValidate's fixed arguments, with the kubeconfig given.
func validateArgs(t *testing.T, kubeconfig string, args ...string) []string {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"validate", "--kubeconfig", kubeconfig, "--root", root, "--benchmark-image", pinnedImage, "--out", t.TempDir()}, args...)
}

// waitTrainerGone waits for the server to finish removing what an install
// left (CRD deletion is asynchronous: their instances go first).
func waitTrainerGone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		left = trainerLeft(t, ctx)
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("%s left the trainer it installed behind: %v", what, left)
	}
}

// TestInstallInterrupted: SIGTERM while validate installs the trainer (it
// has created the first CRDs, not yet the rest): it stops, deletes what it
// installed, and leaves nothing of the trainer (issue 25).
func TestInstallInterrupted(t *testing.T) {
	ctx := context.Background()
	ns := prepare(t, ctx)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	p := harness.StartProcess(t, cli, validateArgs(t, kc, "--recipe", recipe(t, false), "--namespace", ns, "--timeout", "2m")...)
	p.Await(t, "created CustomResourceDefinition", time.Minute)
	p.Signal(t, syscall.SIGTERM)
	code := p.Wait(t)
	errs := p.Stderr()
	t.Logf("exit %d\nstderr:\n%s", code, errs)
	if code != 1 {
		t.Errorf("interrupted validate exited %d, want 1", code)
	}
	if !strings.Contains(errs, "deleted CustomResourceDefinition") {
		t.Error("validate's report names no CRD it removed after the signal")
	}
	if strings.Contains(errs, "left on the cluster, not cleaned up") {
		t.Error("validate reports leftovers after a single signal, whose cleanup must complete")
	}
	waitTrainerGone(t, ctx, "the interrupted validate")
}

// TestInstallUnderItsRole: validate's install row run as a ServiceAccount
// bound to exactly what `render rbac --for validate --install-trainer`
// prints: every create and delete of the install is allowed (the trainer
// never becomes ready here, so the run fails on readiness, not on a
// permission) and the teardown leaves nothing (issue 25).
func TestInstallUnderItsRole(t *testing.T) {
	ctx := context.Background()
	ns := prepare(t, ctx)
	cp.ApplyRBAC(t, ctx, harness.RenderRBAC(t, cli, "--for", "validate", "--install-trainer", "--namespace", ns))
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.ServiceAccountKubeconfig(ctx, ns, "tcpxogen-validate", kc); err != nil {
		t.Fatal(err)
	}
	p := harness.StartProcess(t, cli, validateArgs(t, kc, "--recipe", recipe(t, false), "--namespace", ns, "--timeout", "15s")...)
	code := p.Wait(t)
	errs := p.Stderr()
	t.Logf("exit %d\nstderr:\n%s", code, errs)
	if code == 0 {
		t.Fatal("validate passed with a trainer that never became ready")
	}
	for _, refused := range []string{"the API server refused", "forbidden", "Forbidden"} {
		if strings.Contains(errs, refused) {
			t.Errorf("validate under its install role was refused a request (%q):\n%s", refused, errs)
		}
	}
	if !strings.Contains(errs, "deleted CustomResourceDefinition") {
		t.Error("validate's report names no CRD it removed")
	}
	waitTrainerGone(t, ctx, "validate under its install role")
}
