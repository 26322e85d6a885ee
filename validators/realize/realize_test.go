package realize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	trainerruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"

	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// TestMatrix runs the compatibility matrix on the linked trainer and checks
// every case against the behaviour recorded for that version.
func TestMatrix(t *testing.T) {
	if _, ok := BehaviorOf(TrainerVersion()); !ok {
		t.Fatalf("no behaviour recorded for linked trainer %s", TrainerVersion())
	}
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			row := RowOf(context.Background(), c)
			for _, u := range row.Unexpected {
				t.Error(u)
			}
			if t.Failed() || testing.Verbose() {
				raw, _ := json.MarshalIndent(row, "", "  ")
				t.Logf("row: %s", raw)
			}
		})
	}
}

// TestMatrixDeterministic realizes every case twice: outputs built from Go
// maps and the MPI plugin's random SSH keys must not leak into results.
func TestMatrixDeterministic(t *testing.T) {
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			a, errA := RunCase(context.Background(), c)
			b, errB := RunCase(context.Background(), c)
			if errors.Is(errA, ErrUnsupported) && errors.Is(errB, ErrUnsupported) {
				return
			}
			if errA != nil || errB != nil {
				t.Fatalf("realize: %v / %v", errA, errB)
			}
			ja, jb := mustJSON(t, a.Result), mustJSON(t, b.Result)
			if ja != jb {
				t.Errorf("two realizations differ:\n%s\n%s", ja, jb)
			}
		})
	}
}

// mustShipped is the shipped torch-distributed-tcpxo, as the builders make
// it; mustMPI is the benchmark derived from it, as committed.
func mustShipped(t testing.TB) *trainer.ClusterTrainingRuntime {
	t.Helper()
	rt, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func mustMPI(t testing.TB) *trainer.TrainingRuntime {
	t.Helper()
	rt, err := ShippedBenchmark()
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestRealizeBareJobSetShape(t *testing.T) {
	rt := mustShipped(t)
	res, err := Realize(context.Background(), rt, BareTrainJob(rt))
	if err != nil {
		t.Fatal(err)
	}
	js := res.JobSet
	if js.Name != BareTrainJobName || js.Namespace != DefaultNamespace {
		t.Errorf("JobSet %s/%s, want %s/%s", js.Namespace, js.Name, DefaultNamespace, BareTrainJobName)
	}
	if len(js.OwnerReferences) != 1 || js.OwnerReferences[0].UID != PlaceholderUID || !ptr.Deref(js.OwnerReferences[0].Controller, false) {
		t.Errorf("owner references = %+v, want the TrainJob as controller with the placeholder UID", js.OwnerReferences)
	}
	// suspend is a CRD default the controller copies into the JobSet.
	if js.Spec.Suspend == nil || *js.Spec.Suspend {
		t.Errorf("JobSet suspend = %v, want false from the TrainJob's CRD default", js.Spec.Suspend)
	}
	pod, err := wiring.JobSetPodTemplate(js, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	rtPod, err := wiring.RuntimePodTemplate(rt, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pod.Annotations[runtimes.AnnotationInterfaces], rtPod.Annotations[runtimes.AnnotationInterfaces]; got == "" || got != want {
		t.Errorf("interfaces annotation = %q, want the runtime's %q", got, want)
	}
	if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Name != "tcpxo-daemon" ||
		ptr.Deref(pod.Spec.InitContainers[0].RestartPolicy, "") != corev1.ContainerRestartPolicyAlways {
		t.Errorf("tcpxo-daemon native sidecar not intact: %+v", pod.Spec.InitContainers)
	}
	if res.TrainerVersion != TrainerVersion() {
		t.Errorf("Result.TrainerVersion = %q, TrainerVersion() = %q", res.TrainerVersion, TrainerVersion())
	}
}

func TestRealizeDoesNotModifyInputs(t *testing.T) {
	rt := mustMPI(t)
	job := BareTrainJob(rt)
	job.Spec.Trainer = &trainer.Trainer{NumNodes: ptr.To[int32](3)}
	rt0, job0 := rt.DeepCopy(), job.DeepCopy()
	if _, err := Realize(context.Background(), rt, job); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rt, rt0) {
		t.Error("Realize modified the runtime")
	}
	if !reflect.DeepEqual(job, job0) {
		t.Error("Realize modified the TrainJob")
	}
}

func TestRealizeRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	ctr := mustShipped(t)
	tr := mustMPI(t)
	for _, tc := range []struct {
		name    string
		runtime client.Object
		job     func() *trainer.TrainJob
		want    string
	}{
		{"nil runtime", nil, func() *trainer.TrainJob { return BareTrainJob(ctr) }, "runtime is nil"},
		{"typed nil runtime", (*trainer.ClusterTrainingRuntime)(nil), func() *trainer.TrainJob { return BareTrainJob(ctr) }, "runtime is nil"},
		{"wrong runtime type", &corev1.ConfigMap{}, func() *trainer.TrainJob { return BareTrainJob(ctr) }, "must be a *ClusterTrainingRuntime or *TrainingRuntime"},
		{"unnamed runtime", &trainer.ClusterTrainingRuntime{}, func() *trainer.TrainJob { return BareTrainJob(ctr) }, "runtime has no name"},
		{"nil job", ctr, func() *trainer.TrainJob { return nil }, "TrainJob is nil"},
		{"unnamed job", ctr, func() *trainer.TrainJob { j := BareTrainJob(ctr); j.Name = ""; return j }, "TrainJob has no name"},
		{"ref names another runtime", ctr, func() *trainer.TrainJob { j := BareTrainJob(ctr); j.Spec.RuntimeRef.Name = "other"; return j }, `refers to ClusterTrainingRuntime.trainer.kubeflow.org "other"`},
		{"ref kind defaults to cluster", tr, func() *trainer.TrainJob { j := BareTrainJob(tr); j.Spec.RuntimeRef.Kind = nil; return j }, "but the runtime given is TrainingRuntime"},
		{"ref group wrong", ctr, func() *trainer.TrainJob {
			j := BareTrainJob(ctr)
			j.Spec.RuntimeRef.APIGroup = ptr.To("example.com")
			return j
		}, "ClusterTrainingRuntime.example.com"},
		{"namespaced runtime elsewhere", tr, func() *trainer.TrainJob { j := BareTrainJob(tr); j.Namespace = "other"; return j }, "cannot serve TrainJob other/"},
		{"cluster runtime with namespace", func() client.Object { r := mustShipped(t); r.Namespace = "x"; return r }(), func() *trainer.TrainJob { return BareTrainJob(ctr) }, "cluster-scoped but has namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Realize(ctx, tc.runtime, tc.job())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestRealizeAdmission shows the webhook path runs: torchrun's reserved env
// is refused by the torch plugin's validation, as the API server would.
func TestRealizeAdmission(t *testing.T) {
	rt := mustShipped(t)
	job := BareTrainJob(rt)
	job.Spec.Trainer = &trainer.Trainer{Env: []corev1.EnvVar{{Name: constants.TorchEnvNumProcPerNode, Value: "4"}}}
	_, err := Realize(context.Background(), rt, job)
	var adm *AdmissionError
	if !errors.As(err, &adm) {
		t.Fatalf("err = %v, want *AdmissionError", err)
	}
	if adm.Kind != trainer.TrainJobKind || len(adm.Errs) == 0 || adm.Errs[0].Field != "spec.trainer.env" {
		t.Errorf("admission error = %v, want one for the TrainJob on spec.trainer.env", adm)
	}
}

// TestRealizeRuntimeAdmission: the runtime webhook runs on the defaulted
// runtime. The trainer step's replicated job must have one replica, and
// the CRD default (1) is what makes an unset value pass.
func TestRealizeRuntimeAdmission(t *testing.T) {
	rt := mustShipped(t)
	rt.Spec.Template.Spec.ReplicatedJobs[0].Replicas = 0 // unset: defaulted to 1
	if _, err := Realize(context.Background(), rt, BareTrainJob(rt)); err != nil {
		t.Fatalf("unset replicas should default to 1 and pass: %v", err)
	}
	rt.Spec.Template.Spec.ReplicatedJobs[0].Replicas = 2
	_, err := Realize(context.Background(), rt, BareTrainJob(rt))
	var adm *AdmissionError
	if !errors.As(err, &adm) || adm.Kind != trainer.ClusterTrainingRuntimeKind ||
		len(adm.Errs) != 1 || adm.Errs[0].Field != "spec.template.spec.replicatedJobs[0].replicas" {
		t.Fatalf("err = %v, want the runtime webhook's replicas error", err)
	}
}

// TestRealizeWarnings: the deprecation label on a runtime surfaces as an
// admission warning.
func TestRealizeWarnings(t *testing.T) {
	rt := mustShipped(t)
	rt.Labels[constants.LabelSupport] = constants.SupportDeprecated
	res, err := Realize(context.Background(), rt, BareTrainJob(rt))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "deprecated") {
		t.Errorf("warnings = %q, want one deprecation warning", res.Warnings)
	}
}

// TestRealizeConcurrent: the trainer framework keeps package state; Realize
// must serialise it (run with -race to make this test bite harder).
func TestRealizeConcurrent(t *testing.T) {
	// The same input objects are shared by every goroutine: Realize must
	// only read them (the race detector checks that too).
	rts := map[string]client.Object{"tcpxo": mustShipped(t), "mpi": mustMPI(t)}
	jobs := map[string]*trainer.TrainJob{}
	want := map[string]string{}
	for name, rt := range rts {
		jobs[name] = BareTrainJob(rt)
		res, err := Realize(context.Background(), rt, jobs[name])
		if err != nil {
			t.Fatal(err)
		}
		want[name] = mustJSON(t, res)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 8 {
		for name, rt := range rts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := Realize(context.Background(), rt, jobs[name])
				if err != nil {
					errs <- err.Error()
					return
				}
				raw, err := json.Marshal(res)
				if err != nil || string(raw) != want[name] {
					errs <- fmt.Sprintf("%s differs in goroutine %d (%v)", name, i, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestTrainerVersion(t *testing.T) {
	v := TrainerVersion()
	if !strings.HasPrefix(v, "v2.") {
		t.Fatalf("TrainerVersion() = %q, want a v2 release", v)
	}
}

// TestMPILauncherAsTrainerStep records why the derived benchmark labels its node
// job, not its launcher, as the trainer step. Upstream MPI runtimes label
// the launcher, but they also run the launcher as a node; without that,
// mlPolicy.numNodes sizes the launcher job, the node job keeps its own
// parallelism (1), and the hostfile lists one node host.
func TestMPILauncherAsTrainerStep(t *testing.T) {
	rt := mustMPI(t)
	for i := range rt.Spec.Template.Spec.ReplicatedJobs {
		j := &rt.Spec.Template.Spec.ReplicatedJobs[i]
		switch j.Name {
		case constants.Launcher:
			j.Template.Labels = map[string]string{constants.LabelTrainJobAncestor: constants.AncestorTrainer}
		case constants.Node:
			j.Template.Labels = nil
		}
	}
	res, err := Realize(context.Background(), rt, BareTrainJob(rt))
	if err != nil {
		t.Fatal(err)
	}
	par := map[string]int32{}
	for _, rj := range res.JobSet.Spec.ReplicatedJobs {
		par[rj.Name] = ptr.Deref(rj.Template.Spec.Parallelism, -1)
	}
	if par[constants.Launcher] != 2 || par[constants.Node] != 1 {
		t.Errorf("parallelism = %v, want launcher 2 and node 1", par)
	}
	var hostfile string
	for _, u := range res.Others {
		if u.GetKind() == "ConfigMap" && u.GetName() == BareTrainJobName+constants.MPIHostfileConfigMapSuffix {
			hostfile, _, _ = unstructured.NestedString(u.Object, "data", constants.MPIHostfileName)
		}
	}
	// One host in the hostfile for a two-node benchmark: the second node's
	// ranks would never start.
	if lines := strings.Split(strings.TrimSpace(hostfile), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], BareTrainJobName+"-node-0-0.") {
		t.Errorf("hostfile = %q, want the one node host the mislabelled runtime gets", hostfile)
	}
}

// TestRealizePanicBecomesError feeds the framework an MPI runtime that
// skipped CRD defaulting (Realize never does this; the API server never
// would): the MPI plugin dereferences the missing numProcPerNode, and the
// panic must come back as an error, not take the caller down.
func TestRealizePanicBecomesError(t *testing.T) {
	rt := mustMPI(t)
	rt.Spec.MLPolicy.MPI.NumProcPerNode = nil
	job := BareTrainJob(rt)
	job.UID = PlaceholderUID
	job.Spec.RuntimeRef.APIGroup = ptr.To(trainer.SchemeGroupVersion.Group)
	realizeMu.Lock()
	defer realizeMu.Unlock()
	_, err := realizeLocked(context.Background(), rt, job)
	if err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("err = %v, want a recovered panic", err)
	}
}

// TestWriteRecorderRefusesUnmodelledWrites: a build that deletes objects or
// writes status would make the realized picture incomplete; it must fail.
func TestWriteRecorderRefusesUnmodelledWrites(t *testing.T) {
	ct, err := clientScheme()
	if err != nil {
		t.Fatal(err)
	}
	rec := &writeRecorder{scheme: ct.scheme}
	c := fake.NewClientBuilder().WithScheme(ct.scheme).WithInterceptorFuncs(rec.funcs()).Build()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "v"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, cm); err == nil || !strings.Contains(err.Error(), "does not model") {
		t.Errorf("Delete err = %v, want refusal", err)
	}
	if err := c.Status().Update(ctx, cm); err == nil || !strings.Contains(err.Error(), "does not model") {
		t.Errorf("status Update err = %v, want refusal", err)
	}
	objs, err := rec.objects(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetKind() != "ConfigMap" || objs[0].GetName() != "cm" || objs[0].GetResourceVersion() != "" {
		t.Errorf("recorded objects = %v, want the ConfigMap without server fields", objs)
	}
}

// BenchmarkRealize measures one realization of the shipped runtime, the
// unit cost of a matrix case once the process is warm.
func BenchmarkRealize(b *testing.B) {
	rt := mustShipped(b)
	job := BareTrainJob(rt)
	job.Spec.Trainer = &trainer.Trainer{NumNodes: ptr.To[int32](4)}
	for b.Loop() {
		if _, err := Realize(context.Background(), rt, job); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRebuildOnSameClient builds twice against one client, as the
// controller does on every reconcile after the first. Realize uses a fresh
// client per call because of what this shows on v2.3.0: the runtime
// snapshot written by the first build lacks apiVersion and kind, and the
// second build rejects it (kubeflow/trainer#3921). The fake client, like
// the real one, returns typed objects without TypeMeta.
func TestRebuildOnSameClient(t *testing.T) {
	b, ok := BehaviorOf(TrainerVersion())
	if !ok {
		t.Fatalf("no behaviour recorded for trainer %s", TrainerVersion())
	}
	rt := mustShipped(t)
	job := BareTrainJob(rt)
	job.UID = PlaceholderUID
	d, err := linkedDefaulter()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.apply(trainer.TrainJobKind, job); err != nil {
		t.Fatal(err)
	}
	if err := d.apply(trainer.ClusterTrainingRuntimeKind, rt); err != nil {
		t.Fatal(err)
	}
	ct, err := clientScheme()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(ct.scheme).WithRESTMapper(ct.mapper).WithObjects(rt, job).Build()
	realizeMu.Lock()
	defer realizeMu.Unlock()
	rts, err := runtimecore.New(ctx, c, noopIndexer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rts[trainerruntime.RuntimeRefToRuntimeRegistryKey(job.Spec.RuntimeRef)]
	if _, err := r.NewObjects(ctx, job); err != nil {
		t.Fatalf("first build: %v", err)
	}
	_, err = r.NewObjects(ctx, job)
	switch {
	case b.SnapshotBreaksRebuild && (err == nil || !strings.Contains(err.Error(), "invalid runtime snapshot")):
		t.Errorf("second build on trainer %s: err = %v, want the snapshot GVK failure recorded for it", TrainerVersion(), err)
	case !b.SnapshotBreaksRebuild && err != nil:
		t.Errorf("second build on trainer %s: %v", TrainerVersion(), err)
	}
}
