package validate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeApplier plays the API server and the trainer for a live run: it stores
// what is created in the fake clients and, when the TrainJob is created,
// marks it Complete and adds its launcher pod, as the trainer and JobSet
// would. It records every create and delete.
type fakeApplier struct {
	f     *fakeCluster
	steps []string
}

var resources = map[string]schema.GroupVersionResource{
	trainer.TrainingRuntimeKind:        trainingRuntimes,
	trainer.TrainJobKind:               trainJobs,
	trainer.ClusterTrainingRuntimeKind: clusterTrainingRuntimes,
}

func (a *fakeApplier) Apply(ctx context.Context, obj *unstructured.Unstructured) error {
	a.steps = append(a.steps, "create "+describe(obj))
	if obj.GetKind() == trainer.TrainJobKind {
		obj = obj.DeepCopy()
		if err := unstructured.SetNestedSlice(obj.Object, []any{map[string]any{
			"type": trainer.TrainJobComplete, "status": "True", "reason": "JobSetCompleted", "lastTransitionTime": "2025-03-01T12:00:00Z",
		}}, "status", "conditions"); err != nil {
			return err
		}
		pod := launcherPod(obj.GetName()+"-launcher-0-0-x", obj.GetName(), time.Now())
		pod.Namespace = obj.GetNamespace()
		if _, err := a.f.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	_, err := a.f.dyn.Resource(resources[obj.GetKind()]).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

func (a *fakeApplier) Delete(ctx context.Context, obj *unstructured.Unstructured) error {
	a.steps = append(a.steps, "delete "+describe(obj))
	return a.f.dyn.Resource(resources[obj.GetKind()]).Namespace(obj.GetNamespace()).Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
}

// A live run on a declared, complete trainer: it creates the derived runtime
// and the TrainJob, reads the launcher's log, keeps it, and deletes what it
// created in reverse order even though the log (client-go's fake one) is not
// a benchmark run.
func TestLiveRunCreatesThenDeletesInReverse(t *testing.T) {
	f := completeCluster(t, nil)
	a := &fakeApplier{f: f}
	connect := func(string, string) (*Clients, error) {
		c, _ := f.connect("", "")
		c.Applier = a
		return c, nil
	}
	out := t.TempDir()
	code, stdout, stderr := validate(t, connect, "--recipe", recipePath(declared), "--benchmark-image", pinnedImage, "--out", out, "--timeout", "1m")
	if code != exitFailure {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	contains(t, "stderr", stderr,
		"validate: created TrainingRuntime default/nccl-tests-tcpxo-",
		"validate: deleted TrainJob default/nccl-tests-tcpxo-",
		"the launcher log holds no readable all_reduce_perf run",
		"the log is saved in "+filepath.Join(out, LogFile),
	)
	if strings.Contains(stdout, "dry run") {
		t.Error("a live run says it is a dry run")
	}

	var kinds []string
	for _, s := range a.steps {
		verb, obj, _ := strings.Cut(s, " ")
		kind, _, _ := strings.Cut(obj, " ")
		kinds = append(kinds, verb+" "+kind)
	}
	want := "create TrainingRuntime, create TrainJob, delete TrainJob, delete TrainingRuntime"
	if got := strings.Join(kinds, ", "); got != want {
		t.Errorf("steps %s\nwant  %s", got, want)
	}
	if left, err := f.dyn.Resource(trainJobs).Namespace("default").List(context.Background(), metav1.ListOptions{}); err != nil || len(left.Items) != 0 {
		t.Errorf("TrainJobs left behind: %v %v", left, err)
	}
	if data, err := os.ReadFile(filepath.Join(out, LogFile)); err != nil || len(data) == 0 {
		t.Errorf("the launcher log was not kept: %v", err)
	}
}
