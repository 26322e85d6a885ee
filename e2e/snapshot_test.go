package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/cluster"
	"github.com/tcpxogen/tcpxogen/validators/realize"
)

// shippedTrainJob is a TrainJob of the shipped runtime as the guide writes
// one (spec.trainer present).
func shippedTrainJob(ns, name string) *trainer.TrainJob {
	return &trainer.TrainJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       trainer.TrainJobSpec{RuntimeRef: trainer.RuntimeRef{Name: names.Runtime}, Trainer: &trainer.Trainer{}},
	}
}

// submitShippedTrainJobs gives check cluster a TrainJob of each shipped
// runtime to read, in namespace ns: one of the shipped
// ClusterTrainingRuntime and one of the benchmark TrainingRuntime (applied
// there as render benchmark prints it), both suspended, so no pod runs.
func submitShippedTrainJobs(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	namespace(t, ctx, ns)
	rt, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	bench, err := benchmark.GoldenRuntime(rt, shipped.Facts())
	if err != nil {
		t.Fatal(err)
	}
	bench.Namespace = ns
	if err := cp.Client.Create(ctx, bench, strict); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("applying the benchmark runtime in %s: %v", ns, err)
	}
	bj := benchmark.TrainJob(bench)
	sj := shippedTrainJob(ns, "train")
	for _, j := range []*trainer.TrainJob{sj, bj} {
		j.Spec.Suspend = ptr.To(true)
		if err := createTrainJob(ctx, j); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating TrainJob %s/%s: %v", j.Namespace, j.Name, err)
		}
	}
}

// setNodeEnv changes one env value of the deployed shipped runtime's node
// container, as a user applying a changed runtime does, and returns a
// function that puts the runtime back as it was.
func setNodeEnv(t *testing.T, ctx context.Context, name, value string) (restore func()) {
	t.Helper()
	orig := &trainer.ClusterTrainingRuntime{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: names.Runtime}, orig); err != nil {
		t.Fatal(err)
	}
	update := func(spec func(*trainer.ClusterTrainingRuntime) bool) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			rt := &trainer.ClusterTrainingRuntime{}
			if err := cp.Client.Get(ctx, client.ObjectKey{Name: names.Runtime}, rt); err != nil {
				return err
			}
			if !spec(rt) {
				t.Fatalf("the deployed runtime's node container sets no %s", name)
			}
			return cp.Client.Update(ctx, rt, strict)
		})
	}
	err := update(func(rt *trainer.ClusterTrainingRuntime) bool {
		for i := range rt.Spec.Template.Spec.ReplicatedJobs {
			pod := &rt.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template
			for j := range pod.Spec.Containers {
				c := &pod.Spec.Containers[j]
				for k := range c.Env {
					if c.Name == constants.Node && c.Env[k].Name == name {
						c.Env[k].Value = value
						return true
					}
				}
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("changing the deployed runtime's %s: %v", name, err)
	}
	return func() {
		if err := update(func(rt *trainer.ClusterTrainingRuntime) bool { rt.Spec = orig.Spec; return true }); err != nil {
			t.Errorf("restoring the deployed runtime: %v", err)
		}
	}
}

// TestCheckClusterListsStaleTrainJobs: a TrainJob of the shipped runtime is
// created and running, then the deployed runtime changes (NCCL_DEBUG, an
// env value of the node container's wiring), then a second TrainJob is
// created. On a trainer that snapshots the runtime (v2.3.0), check cluster
// names the first as keeping the old wiring, with the change, and the
// second as carrying the deployed wiring; on v2.2.0, which keeps no
// snapshot, both are listed as having none. Either way it stays a warning.
func TestCheckClusterListsStaleTrainJobs(t *testing.T) {
	ctx := context.Background()
	installShippedRuntime(t, ctx)
	behavior, ok := realize.BehaviorOf(realize.TrainerVersion())
	if !ok {
		t.Fatalf("no behaviour recorded for the linked trainer %s", realize.TrainerVersion())
	}
	// The namespace sorts before the other scenarios' (check cluster lists
	// TrainJobs without a snapshot by namespace/name, the first ten named).
	ns := namespace(t, ctx, "a-stale-wiring")
	provision(t, ctx, exampleNetworks(), func(string) []harness.HostNIC { return harness.A3MegaNICs(exampleNetworks()) })
	cp.Nodes.SetPlan(ns, harness.Plan{Outcome: func(*corev1.Pod) harness.Outcome { return harness.KeepRunning }})

	snapshotted := func(job string) {
		t.Helper()
		if !behavior.RuntimeSnapshot {
			return
		}
		waitFor(t, ctx, 60*time.Second, "the runtime snapshot of TrainJob "+job, func() (bool, error) {
			err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: job + cluster.SnapshotSuffix}, &corev1.ConfigMap{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
	}
	if err := createTrainJob(ctx, shippedTrainJob(ns, "before")); err != nil {
		t.Fatal(err)
	}
	snapshotted("before")
	restore := setNodeEnv(t, ctx, "NCCL_DEBUG", "INFO")
	t.Cleanup(restore)
	if err := createTrainJob(ctx, shippedTrainJob(ns, "after")); err != nil {
		t.Fatal(err)
	}
	snapshotted("after")
	t.Cleanup(func() {
		for _, j := range []string{"before", "after"} {
			_ = cp.Client.Delete(ctx, shippedTrainJob(ns, j), client.PropagationPolicy(metav1.DeletePropagationBackground))
		}
	})

	code, out, errs := runCLI(t, "check", "cluster", "-v")
	if code != 0 || !strings.Contains(out, "check cluster: PASS") {
		t.Fatalf("check cluster on a healthy pool with a stale TrainJob: exit %d, want 0 (a stale TrainJob is a warning)\n%s%s", code, out, errs)
	}
	var want []string
	if behavior.RuntimeSnapshot {
		want = []string{
			"warn trainjob-wiring: TrainJob " + ns + "/before keeps the wiring ClusterTrainingRuntime " + names.Runtime + " had",
			"ConfigMap " + ns + "/before-runtime-snapshot",
			"env NCCL_DEBUG (WARN -> INFO)",
			"ok   trainjob-wiring: TrainJob " + ns + "/after: its runtime snapshot carries the deployed",
		}
		if strings.Contains(out, "TrainJob "+ns+"/after keeps") {
			t.Errorf("the TrainJob created after the change is listed as stale:\n%s", out)
		}
	} else {
		want = []string{"warn trainjob-wiring: ", "have no runtime snapshot", ns + "/after, " + ns + "/before", "trainer v2.2.0 keeps none"}
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("check cluster on trainer %s does not say %q:\n%s", realize.TrainerVersion(), w, out)
		}
	}
	t.Logf("check cluster on trainer %s (exit %d):\n%s", realize.TrainerVersion(), code, grepLines(out, "trainjob-wiring"))
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
