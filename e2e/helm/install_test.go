package helm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/e2e/scenario"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/markdown"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/performance/podcheck"
)

// guideTrainJob is the user guide's first TrainJob of the shipped runtime
// that the guide presents as correct.
func guideTrainJob(t *testing.T) *trainer.TrainJob {
	t.Helper()
	page := filepath.Join(repoRoot, "docs", "tcpxo-workloads.md")
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range markdown.YAMLBlocks(data) {
		if b.Info == "pitfall" {
			continue
		}
		for _, doc := range scenario.Documents(b.Content) {
			u, err := scenario.Decode(doc)
			if err != nil {
				t.Fatalf("%s line %d: %v", page, b.Line, err)
			}
			if u.GetKind() != trainer.TrainJobKind {
				continue
			}
			job := &trainer.TrainJob{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, job); err != nil {
				t.Fatal(err)
			}
			if job.Spec.RuntimeRef.Name == names.Runtime {
				return job
			}
		}
	}
	t.Fatalf("%s has no correct TrainJob of %s", page, names.Runtime)
	return nil
}

// TestInstallRunAndUninstall: Helm's install action puts the chart into a
// control plane running the trainer; the runtime the API server stored
// carries the wiring render runtime builds for the same mapping; the
// guide's TrainJob runs on it to completion with pods that carry the
// wiring; helm uninstall then leaves nothing the chart installed, the
// runtime included, and the user's TrainJob alone.
func TestInstallRunAndUninstall(t *testing.T) {
	cp := controlPlane(t)
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	helm := Cluster{Kubeconfig: kubeconfig}
	ch, err := Load(loadChart(t))
	if err != nil {
		t.Fatal(err)
	}
	const releaseNS = "tcpxo-system"
	m := mustMapping(t, vpcs)
	rel, err := helm.Install(ch, ReleaseName, releaseNS, values(t, m.ValuesYAML()+"benchmark: {enabled: true}\n"))
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Logf("helm install: release %s revision %d, %s", rel.Name, rel.Version, rel.Info.Status)

	// What the API server stored is what render runtime builds.
	stored := &trainer.ClusterTrainingRuntime{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: names.Runtime}, stored); err != nil {
		t.Fatalf("the installed runtime: %v", err)
	}
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	want, err := runtimes.TorchRuntime(in, runtimes.Options{Interfaces: m})
	if err != nil {
		t.Fatal(err)
	}
	wantPod, err := wiring.RuntimePodTemplate(want, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	gotPod, err := wiring.RuntimePodTemplate(stored, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	if d := wiring.Diff(wiring.Of(wantPod, constants.Node), wiring.Of(gotPod, constants.Node)); len(d) > 0 {
		t.Fatalf("the installed runtime's wiring differs from render runtime's: %v", d)
	}
	installed := []client.Object{
		&trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: names.Runtime}},
		&trainer.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: names.Benchmark, Namespace: releaseNS}},
	}
	for _, ds := range runtimes.Components(in) {
		installed = append(installed, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: ds.Name, Namespace: ds.Namespace}})
	}
	for _, o := range installed {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatalf("%T %s after helm install: %v", o, client.ObjectKeyFromObject(o), err)
		}
		if o.GetAnnotations()["meta.helm.sh/release-name"] != ReleaseName {
			t.Errorf("%T %s is not the release's: annotations %v", o, client.ObjectKeyFromObject(o), o.GetAnnotations())
		}
	}

	// The guide's TrainJob, on the installed runtime, to completion.
	job := guideTrainJob(t)
	ns := "helm-guide"
	if err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	job.Namespace = ns
	cp.Nodes.SetPlan(ns, harness.Plan{Hold: true})
	if err := cp.Client.Create(ctx, job, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		t.Fatalf("TrainJob %s: %v", job.Name, err)
	}
	js := &jobsetv1alpha2.JobSet{}
	scenario.WaitFor(t, ctx, 60*time.Second, "the JobSet of "+job.Name, func() (bool, error) {
		err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name}, js)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	pods := scenario.WaitPods(t, ctx, cp.Client, ns, job.Name, scenario.ExpectedNodePods(js), corev1.PodRunning)
	rules := runtimes.RulesFor(in.Facts, wiring.Of(gotPod, constants.Node).NodeEnv)
	if err := podcheck.Check(pods, gotPod, rules); err != nil {
		t.Errorf("the TrainJob's pods lack the installed runtime's wiring: %v", err)
	}
	for _, p := range pods {
		if p.Labels[podcheck.ReplicatedJobLabel] == constants.Node && p.Annotations[runtimes.AnnotationInterfaces] != m.AnnotationJSON() {
			t.Errorf("pod %s is on networks %s, want %s", p.Name, p.Annotations[runtimes.AnnotationInterfaces], m.AnnotationJSON())
		}
	}
	cp.Nodes.Release(ns)
	scenario.WaitFor(t, ctx, 60*time.Second, "TrainJob "+job.Name+" Complete", func() (bool, error) {
		tj := &trainer.TrainJob{}
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(job), tj); err != nil {
			return false, err
		}
		if meta.IsStatusConditionTrue(tj.Status.Conditions, trainer.TrainJobFailed) {
			return false, fmt.Errorf("TrainJob failed: %+v", tj.Status.Conditions)
		}
		return meta.IsStatusConditionTrue(tj.Status.Conditions, trainer.TrainJobComplete), nil
	}, func() string { return scenario.DescribeNamespace(ctx, cp.Client, ns) })

	// helm uninstall while the completed TrainJob still exists: everything
	// the chart installed goes, the runtime included. (Trainer v2.3.0, this
	// control plane's, keeps no resource-in-use finalizer on runtimes: its
	// TrainJobs hold a snapshot. v2.2.0 keeps a runtime its TrainJobs
	// reference until they are deleted: pkg/controller/
	// clustertrainingruntime_controller.go.)
	if err := helm.Uninstall(ReleaseName, releaseNS); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	for _, o := range installed {
		scenario.WaitFor(t, ctx, 2*time.Minute, fmt.Sprintf("%T %s gone after helm uninstall", o, client.ObjectKeyFromObject(o)), func() (bool, error) {
			err := cp.Client.Get(ctx, client.ObjectKeyFromObject(o), o)
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	}
	// The TrainJob is the user's: uninstall leaves it.
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(job), &trainer.TrainJob{}); err != nil {
		t.Errorf("the user's TrainJob after helm uninstall: %v", err)
	}
	rels, err := helm.Releases(releaseNS)
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) > 0 {
		t.Errorf("helm uninstall left %d releases recorded in %s", len(rels), releaseNS)
	}
	var secrets corev1.SecretList
	if err := cp.Client.List(ctx, &secrets, client.InNamespace(releaseNS), client.MatchingLabels{"owner": "helm"}); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) > 0 {
		t.Errorf("helm uninstall left the release's Secrets: %d", len(secrets.Items))
	}
}

// TestGIBInstallAndUninstall: Helm's install action puts the gIB chart
// into the same control plane, beside nothing of TCPXO's: each stored
// runtime carries the wiring render runtime --fabric gib --machine-type T
// builds for the same mapping (eth1 included) and has no image, every
// object is the release's; helm uninstall then leaves nothing the chart
// installed and no release record. No TrainJob runs: this harness's
// simulated nodes are A3 Mega nodes, which the gIB runtimes' node
// affinity does not select.
func TestGIBInstallAndUninstall(t *testing.T) {
	cp := controlPlane(t)
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	helm := Cluster{Kubeconfig: kubeconfig}
	ch, err := Load(gibChart(t))
	if err != nil {
		t.Fatal(err)
	}
	const release, releaseNS = "gib", "gib-system"
	m := rdmaMapping(t, rdmaNets+",eth1=gvnic-1")
	rel, err := helm.Install(ch, release, releaseNS, values(t, m.ValuesYAML()))
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Logf("helm install: release %s revision %d, %s", rel.Name, rel.Version, rel.Info.Status)

	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	var installed []client.Object
	for _, mt := range fabric.GIB.MachineTypeNames() {
		want, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: m, MachineType: mt})
		if err != nil {
			t.Fatal(err)
		}
		stored := &trainer.ClusterTrainingRuntime{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: want.Name}, stored); err != nil {
			t.Fatalf("the installed runtime %s: %v", want.Name, err)
		}
		wantPod, err := wiring.RuntimePodTemplate(want, constants.Node)
		if err != nil {
			t.Fatal(err)
		}
		gotPod, err := wiring.RuntimePodTemplate(stored, constants.Node)
		if err != nil {
			t.Fatal(err)
		}
		if d := wiring.Diff(wiring.Of(wantPod, constants.Node), wiring.Of(gotPod, constants.Node)); len(d) > 0 {
			t.Errorf("%s: the installed runtime's wiring differs from render runtime --fabric gib's: %v", want.Name, d)
		}
		if got := gotPod.Annotations[runtimes.AnnotationInterfaces]; got != m.AnnotationJSON() {
			t.Errorf("%s: the installed runtime's pods are on networks %s, want %s", want.Name, got, m.AnnotationJSON())
		}
		if d := cmp.Diff(wantPod.Spec.Affinity, gotPod.Spec.Affinity); d != "" {
			t.Errorf("%s: the installed runtime's node affinity differs from render's (-render +installed):\n%s", want.Name, d)
		}
		if img := gotPod.Spec.Containers[0].Image; img != "" {
			t.Errorf("%s: the installed runtime's node container has image %q, want none", want.Name, img)
		}
		installed = append(installed, &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: want.Name}})
	}
	for _, ds := range runtimes.RDMAComponents(in) {
		installed = append(installed, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: ds.Name, Namespace: ds.Namespace}})
	}
	for _, o := range installed {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatalf("%T %s after helm install: %v", o, client.ObjectKeyFromObject(o), err)
		}
		if o.GetAnnotations()["meta.helm.sh/release-name"] != release {
			t.Errorf("%T %s is not the release's: annotations %v", o, client.ObjectKeyFromObject(o), o.GetAnnotations())
		}
	}

	if err := helm.Uninstall(release, releaseNS); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	for _, o := range installed {
		scenario.WaitFor(t, ctx, 2*time.Minute, fmt.Sprintf("%T %s gone after helm uninstall", o, client.ObjectKeyFromObject(o)), func() (bool, error) {
			err := cp.Client.Get(ctx, client.ObjectKeyFromObject(o), o)
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	}
	rels, err := helm.Releases(releaseNS)
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) > 0 {
		t.Errorf("helm uninstall left %d releases recorded in %s", len(rels), releaseNS)
	}
}
