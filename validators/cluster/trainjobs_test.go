package cluster

import (
	"context"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

func shippedRuntime(t *testing.T) *trainer.ClusterTrainingRuntime {
	t.Helper()
	rt, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// withNodeEnv returns a copy of rt whose node container sets name=value.
func withNodeEnv(t *testing.T, rt *trainer.ClusterTrainingRuntime, name, value string) *trainer.ClusterTrainingRuntime {
	t.Helper()
	out := rt.DeepCopy()
	for i := range out.Spec.Template.Spec.ReplicatedJobs {
		pod := &out.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template
		for j := range pod.Spec.Containers {
			c := &pod.Spec.Containers[j]
			if c.Name != runtimes.NodeContainer {
				continue
			}
			for k := range c.Env {
				if c.Env[k].Name == name {
					c.Env[k].Value = value
					return out
				}
			}
		}
	}
	t.Fatalf("the node container sets no %s", name)
	return nil
}

// snapshotOf is the ConfigMap trainer v2.3.0 writes for job (createRuntimeSnapshot):
// the runtime as YAML, without apiVersion and kind as the trainer's client
// returns it, controlled by the TrainJob.
func snapshotOf(t *testing.T, namespace, job string, uid types.UID, rt client.Object) *corev1.ConfigMap {
	t.Helper()
	rt = rt.DeepCopyObject().(client.Object)
	rt.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	data, err := yaml.Marshal(rt)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: job + SnapshotSuffix, Namespace: namespace, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind, Name: job, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}},
		Data: map[string]string{SnapshotKey: string(data)},
	}
}

var (
	ctrRef   = ShippedRuntime{trainer.ClusterTrainingRuntimeKind, names.Runtime}
	benchRef = ShippedRuntime{trainer.TrainingRuntimeKind, names.Benchmark}
)

// A TrainJob created before the runtime changed keeps its snapshot's wiring:
// it is named, with the first differences, as a warning; one whose snapshot
// is the deployed runtime is ok.
func TestCheckTrainJobsStaleSnapshot(t *testing.T) {
	old := shippedRuntime(t)
	deployed := withNodeEnv(t, old, "NCCL_DEBUG", "INFO")
	fs := CheckTrainJobs(TrainJobs{Jobs: []TrainJob{
		{Namespace: "team-a", Name: "before", UID: "u1", Runtime: ctrRef, Deployed: deployed, Snapshot: snapshotOf(t, "team-a", "before", "u1", old)},
		{Namespace: "team-a", Name: "after", UID: "u2", Runtime: ctrRef, Deployed: deployed, Snapshot: snapshotOf(t, "team-a", "after", "u2", deployed)},
	}})
	has(t, fs, Warn, "trainjob-wiring", "TrainJob team-a/before keeps the wiring ClusterTrainingRuntime torch-distributed-tcpxo had",
		"ConfigMap team-a/before-runtime-snapshot", "env NCCL_DEBUG (WARN -> INFO)", "resubmit it")
	has(t, fs, OK, "trainjob-wiring", "TrainJob team-a/after", "carries the deployed")
	if Failed(fs) {
		t.Errorf("a TrainJob on older wiring fails the cluster check: %v", failures(fs))
	}
	for _, f := range fs {
		if strings.Contains(f.Message, "team-a/after") && f.Level != OK {
			t.Errorf("the TrainJob created after the change is reported: %s", f)
		}
	}
}

// Only the first differences are named, with how many more there are.
func TestCheckTrainJobsNamesTheFirstChanges(t *testing.T) {
	old := shippedRuntime(t)
	deployed := old
	for _, e := range []string{"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_PROTO", "NCCL_CROSS_NIC", "NCCL_MIN_NCHANNELS"} {
		deployed = withNodeEnv(t, deployed, e, "changed")
	}
	fs := CheckTrainJobs(TrainJobs{Jobs: []TrainJob{
		{Namespace: "ns", Name: "j", UID: "u", Runtime: ctrRef, Deployed: deployed, Snapshot: snapshotOf(t, "ns", "j", "u", old)},
	}})
	has(t, fs, Warn, "TrainJob ns/j", "and 2 more")
}

// A TrainJob without a snapshot is reported neutrally (check cluster cannot
// tell the trainer's version): v2.2.0 keeps none, v2.3.0 writes one.
func TestCheckTrainJobsWithoutSnapshot(t *testing.T) {
	rt := shippedRuntime(t)
	var jobs []TrainJob
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		jobs = append(jobs, TrainJob{Namespace: "ns", Name: n, UID: types.UID(n), Runtime: ctrRef, Deployed: rt})
	}
	fs := CheckTrainJobs(TrainJobs{Jobs: jobs})
	has(t, fs, Warn, "12 TrainJob(s)", "no runtime snapshot", "ns/a, ns/b", "ns/j and 2 more",
		"trainer v2.2.0 keeps none (its running pods keep the wiring they started with)", "v2.3.0 and later write one", "cannot tell which trainer")
	if len(fs) != 1 {
		t.Errorf("%d findings for TrainJobs without snapshots, want the one listing them: %v", len(fs), fs)
	}
}

// A snapshot the trainer would refuse (getRuntimeSnapshot's checks) is named
// with why.
func TestCheckTrainJobsRefusedSnapshot(t *testing.T) {
	rt := shippedRuntime(t)
	other := snapshotOf(t, "ns", "j", "someone-else", rt)
	noKey := snapshotOf(t, "ns", "j", "u", rt)
	delete(noKey.Data, SnapshotKey)
	orphan := snapshotOf(t, "ns", "j", "u", rt)
	orphan.OwnerReferences = nil
	renamed := rt.DeepCopy()
	renamed.Name = "another-runtime"
	for name, c := range map[string]struct {
		cm   *corev1.ConfigMap
		want string
	}{
		"another owner":  {other, "is controlled by TrainJob j (uid someone-else), not by the TrainJob (uid u)"},
		"no owner":       {orphan, "has no controller"},
		"no data key":    {noKey, `has no "runtime" data key`},
		"another runtme": {snapshotOf(t, "ns", "j", "u", renamed), `holds runtime "another-runtime"`},
	} {
		t.Run(name, func(t *testing.T) {
			fs := CheckTrainJobs(TrainJobs{Jobs: []TrainJob{{Namespace: "ns", Name: "j", UID: "u", Runtime: ctrRef, Deployed: rt, Snapshot: c.cm}}})
			has(t, fs, Warn, "TrainJob ns/j", "ConfigMap ns/j-runtime-snapshot", c.want, "refuses such a snapshot", "resubmit")
		})
	}
}

// A TrainJob of a runtime that is no longer deployed cannot be compared.
func TestCheckTrainJobsRuntimeNotDeployed(t *testing.T) {
	rt := shippedRuntime(t)
	fs := CheckTrainJobs(TrainJobs{Jobs: []TrainJob{{Namespace: "ns", Name: "j", UID: "u", Runtime: ctrRef, Snapshot: snapshotOf(t, "ns", "j", "u", rt)}}})
	has(t, fs, Warn, "TrainJob ns/j runs on ClusterTrainingRuntime torch-distributed-tcpxo, which is not deployed")
}

// No TrainJob of the shipped runtimes: one ok finding.
func TestCheckTrainJobsNone(t *testing.T) {
	fs := CheckTrainJobs(TrainJobs{Finished: 3})
	has(t, fs, OK, "no unfinished TrainJob runs on torch-distributed-tcpxo or nccl-tests-tcpxo (3 finished")
}

func benchmarkRuntime(t *testing.T, namespace string) *trainer.TrainingRuntime {
	t.Helper()
	bench, err := benchmark.GoldenRuntime(shippedRuntime(t), shipped.Facts())
	if err != nil {
		t.Fatal(err)
	}
	bench.Namespace = namespace
	return bench
}

// A deployed shipped runtime labelled to skip the trainer's validating
// webhook is a warning naming it, the label, what it bypasses and the fix:
// the ClusterTrainingRuntime in Check (validate runs it too), the benchmark
// TrainingRuntime of a TrainJob in CheckTrainJobs.
func TestWebhookValidationDisabledWarns(t *testing.T) {
	want := expect(t)
	st := withNetworks(t, healthyState(t, want, func() []hostNIC { return a3Mega(vpcs(8)) }, "n0"), vpcs(8))
	rt := shippedRuntime(t)
	rt.Labels[runtimes.WebhookValidationLabel] = runtimes.WebhookValidationDisabled
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rt)
	if err != nil {
		t.Fatal(err)
	}
	st.Runtime = &unstructured.Unstructured{Object: u}
	st.Runtime.SetKind(trainer.ClusterTrainingRuntimeKind)
	fs := Check(st, want)
	has(t, fs, Warn, "webhook-validation", "the deployed ClusterTrainingRuntime torch-distributed-tcpxo carries trainer.kubeflow.org/webhook-validation: disabled",
		"skip the trainer's validating webhook", "PR #3683", "node container",
		"kubectl label clustertrainingruntime torch-distributed-tcpxo trainer.kubeflow.org/webhook-validation-", "tcpxogen render runtime")
	if Failed(fs) {
		t.Errorf("the label fails the check, want a warning: %v", failures(fs))
	}
	delete(st.Runtime.Object["metadata"].(map[string]any)["labels"].(map[string]any), runtimes.WebhookValidationLabel)
	for _, f := range Check(st, want) {
		if f.Check == "webhook-validation" {
			t.Errorf("an unlabelled runtime is reported: %s", f)
		}
	}

	bench := benchmarkRuntime(t, "bench")
	bench.Labels[runtimes.WebhookValidationLabel] = runtimes.WebhookValidationDisabled
	fs = CheckTrainJobs(TrainJobs{Jobs: []TrainJob{
		{Namespace: "bench", Name: "j1", UID: "u1", Runtime: benchRef, Deployed: bench},
		{Namespace: "bench", Name: "j2", UID: "u2", Runtime: benchRef, Deployed: bench},
	}})
	has(t, fs, Warn, "webhook-validation", "the deployed TrainingRuntime bench/nccl-tests-tcpxo carries trainer.kubeflow.org/webhook-validation: disabled",
		"kubectl label trainingruntime -n bench nccl-tests-tcpxo trainer.kubeflow.org/webhook-validation-", "tcpxogen render benchmark")
	n := 0
	for _, f := range fs {
		if f.Check == "webhook-validation" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d webhook findings for one benchmark runtime: %v", n, fs)
	}
}

func trainJob(t *testing.T, namespace, name string, uid types.UID, ref trainer.RuntimeRef, conds ...metav1.Condition) runtime.Object {
	t.Helper()
	j := &trainer.TrainJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid},
		Spec:       trainer.TrainJobSpec{RuntimeRef: ref},
		Status:     trainer.TrainJobStatus{Conditions: conds},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(j)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: u}
}

func toUnstructured(t *testing.T, o runtime.Object, kind string) *unstructured.Unstructured {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{Object: u}
	out.SetAPIVersion(trainer.GroupVersion.String())
	out.SetKind(kind)
	return out
}

// ReadTrainJobs reads the unfinished TrainJobs of the shipped runtimes in
// every namespace, with their snapshots and the runtimes they reference;
// the ones of other runtimes are not read, the finished ones only counted.
func TestReadTrainJobs(t *testing.T) {
	rt := shippedRuntime(t)
	bench := benchmarkRuntime(t, "bench")
	done := metav1.Condition{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue}
	suspended := metav1.Condition{Type: trainer.TrainJobSuspended, Status: metav1.ConditionTrue}
	objs := []runtime.Object{
		trainJob(t, "team-a", "running", "u1", trainer.RuntimeRef{Name: names.Runtime}),
		trainJob(t, "team-a", "suspended", "u2", trainer.RuntimeRef{Name: names.Runtime, APIGroup: ptr.To(trainer.GroupVersion.Group), Kind: ptr.To(trainer.ClusterTrainingRuntimeKind)}, suspended),
		trainJob(t, "team-a", "done", "u3", trainer.RuntimeRef{Name: names.Runtime}, done),
		trainJob(t, "team-b", "other", "u4", trainer.RuntimeRef{Name: "torch-distributed"}),
		trainJob(t, "team-b", "namespaced-copy", "u5", trainer.RuntimeRef{Name: names.Runtime, Kind: ptr.To(trainer.TrainingRuntimeKind)}),
		trainJob(t, "bench", "nccl", "u6", trainer.RuntimeRef{Name: names.Benchmark, Kind: ptr.To(trainer.TrainingRuntimeKind)}),
		trainJob(t, "nobench", "nccl", "u7", trainer.RuntimeRef{Name: names.Benchmark, Kind: ptr.To(trainer.TrainingRuntimeKind)}),
		toUnstructured(t, bench, trainer.TrainingRuntimeKind),
	}
	gvrs := map[schema.GroupVersionResource]string{
		trainerTrainJobs:  "TrainJobList",
		trainerNSRuntimes: "TrainingRuntimeList",
	}
	snap := snapshotOf(t, "team-a", "running", "u1", rt)
	c := &Clients{
		Kube:    kubefake.NewClientset(snap),
		Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs, objs...),
		Host:    "https://cluster.test",
	}
	tj, err := ReadTrainJobs(context.Background(), c, ShippedRuntimes, toUnstructured(t, rt, trainer.ClusterTrainingRuntimeKind))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range tj.Jobs {
		s := j.Namespace + "/" + j.Name + " " + j.Runtime.String()
		if j.Snapshot != nil {
			s += " snapshot"
		}
		if j.Deployed != nil {
			s += " deployed " + j.Deployed.GetNamespace() + "/" + j.Deployed.GetName()
		}
		got = append(got, s)
	}
	want := []string{
		"bench/nccl TrainingRuntime nccl-tests-tcpxo deployed bench/nccl-tests-tcpxo",
		"nobench/nccl TrainingRuntime nccl-tests-tcpxo",
		"team-a/running ClusterTrainingRuntime torch-distributed-tcpxo snapshot deployed /torch-distributed-tcpxo",
		"team-a/suspended ClusterTrainingRuntime torch-distributed-tcpxo deployed /torch-distributed-tcpxo",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if tj.Finished != 1 {
		t.Errorf("%d finished, want 1", tj.Finished)
	}
	for _, j := range tj.Jobs {
		if j.Name == "running" && j.UID != "u1" {
			t.Errorf("uid %q", j.UID)
		}
	}

	// Without the trainer's CRDs there are no TrainJobs, and nothing fails.
	noTrainer := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs)
	noTrainer.PrependReactor("list", "trainjobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(trainerTrainJobs.GroupResource(), "")
	})
	c.Dynamic = noTrainer
	if tj, err := ReadTrainJobs(context.Background(), c, ShippedRuntimes, nil); err != nil || len(tj.Jobs) != 0 {
		t.Errorf("no trainer: %v, %v", tj, err)
	}
}
