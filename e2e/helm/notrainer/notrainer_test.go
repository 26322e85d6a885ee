// The Helm chart on a control plane without Kubeflow Trainer: its own test
// binary, because the chart's other scenarios need the trainer from the
// start.
package notrainer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/e2e/helm"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

const repoRoot = "../../.."

var cp *harness.ControlPlane

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
	return m.Run()
}

// TestInstallWithoutTrainer: helm install on a cluster without the
// trainer's CRDs fails before it creates anything, saying which kind is
// missing and that its CRDs must be installed first; no object of the
// chart, no namespace and no release record is left.
func TestInstallWithoutTrainer(t *testing.T) {
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	h := helm.Cluster{Kubeconfig: kubeconfig}
	ch, err := helm.Load(helm.ChartDir(repoRoot, "tcpxo"))
	if err != nil {
		t.Fatal(err)
	}
	m := runtimes.ExampleInterfaces()
	vals, err := common.ReadValues([]byte(m.ValuesYAML() + "benchmark: {enabled: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	const releaseNS = "tcpxo-system"
	_, err = h.Install(ch, helm.ReleaseName, releaseNS, vals)
	if err == nil {
		t.Fatal("helm install succeeded on a cluster without the trainer")
	}
	for _, want := range []string{`no matches for kind "ClusterTrainingRuntime" in version "trainer.kubeflow.org/v1alpha1"`, "ensure CRDs are installed first"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("helm install's error lacks %q:\n%v", want, err)
		}
	}
	t.Logf("helm install: %v", err)

	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	for _, ds := range runtimes.Components(in) {
		err := cp.Client.Get(ctx, client.ObjectKeyFromObject(ds), &appsv1.DaemonSet{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("DaemonSet %s/%s after the failed install: %v, want not found", ds.Namespace, ds.Name, err)
		}
	}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: releaseNS}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the failed install: %v, want not found", releaseNS, err)
	}
	rels, err := h.Releases(releaseNS)
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) > 0 {
		t.Errorf("the failed install left %d releases recorded", len(rels))
	}
}
