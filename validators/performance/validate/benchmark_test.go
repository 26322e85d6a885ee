package validate

import (
	"context"
	"errors"
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
		// Through the tracker, not the client: the pod is the trainer's
		// doing, not a request of validate's (TestEveryRequestIsDeclared).
		if err := a.f.kube.Tracker().Add(pod); err != nil {
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

// The TrainJob create is retried only while the trainer's webhook says the
// runtime must be created first; any other error is final at once, and a
// rejection that outlasts the retries is reported in the webhook's words.
func TestRetryRuntimeNotCached(t *testing.T) {
	notCached := errors.New(`creating TrainJob default/j: admission webhook denied the request: TrainingRuntime nccl-tests-tcpxo-x must be created before the TrainJob is created`)
	other := errors.New("creating TrainJob default/j: forbidden")
	for _, tc := range []struct {
		name    string
		create  func(call int) error
		within  time.Duration
		calls   int // -1: any number
		wantErr []string
		wraps   error
	}{
		{"created at once", func(int) error { return nil }, time.Second, 1, nil, nil},
		{"created once the cache catches up", func(call int) error {
			if call < 3 {
				return notCached
			}
			return nil
		}, time.Second, 3, nil, nil},
		{"another rejection is final", func(int) error { return other }, time.Second, 1, []string{"forbidden"}, other},
		{"the cache never catches up", func(int) error { return notCached }, 30 * time.Millisecond, -1,
			[]string{"TrainJob default/j", "must be created before the TrainJob is created", "retried for", "context deadline exceeded"}, notCached},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, retries := 0, 0
			err := retryRuntimeNotCached(context.Background(), 5*time.Millisecond, tc.within, func() error {
				calls++
				return tc.create(calls)
			}, func(err error) {
				retries++
				if !errors.Is(err, notCached) {
					t.Errorf("retrying reported %v, want the webhook's rejection", err)
				}
			})
			if tc.calls >= 0 && calls != tc.calls {
				t.Errorf("%d creates, want %d", calls, tc.calls)
			}
			if err == nil && retries != calls-1 {
				t.Errorf("%d retries reported, want %d", retries, calls-1)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one mentioning %q", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !errors.Is(err, tc.wraps) {
				t.Errorf("error %v does not wrap %v", err, tc.wraps)
			}
			if tc.wraps == other && retries != 0 {
				t.Errorf("%d retries of a final rejection", retries)
			}
			if tc.wraps == notCached && retries != calls {
				t.Errorf("%d retries reported for %d rejected creates", retries, calls)
			}
		})
	}
}
