package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
	"github.com/tcpxogen/tcpxogen/validators/performance/report"
)

func ncclLog(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(repoTestdata, "nccl-logs", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

var liveContext = report.Context{RuntimeSource: "shipped", TrainerAction: "use-declared", PluginVersion: "v1.0.15", NCCLVersion: "2.28.7", TrainerVersion: "v2.2.0", Recipe: "gke-h100.yaml", Start: 1_700_000_000_000, Stop: 1_700_000_600_000}

// The log-to-report step of a live run, on the recorded healthy run: the
// verdict, and a CTRF report carrying the provenance only a live run knows.
func TestJudgeHealthyLog(t *testing.T) {
	floor, _ := busbw.ParseFloor(">= 300")
	o, err := judge(ncclLog(t, "healthy.log"), tcpxoJudging(t, floor), liveContext)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Verdict.Pass || busbw.FormatGBps(o.Verdict.Measured) != "343.3" || busbw.FormatSize(o.Verdict.Size) != "16G" {
		t.Fatalf("verdict %+v", o.Verdict)
	}
	dir := t.TempDir()
	paths, err := o.write(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, report.File), filepath.Join(dir, report.ChartFile), filepath.Join(dir, LogFile)}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("wrote %v, want %v", paths, want)
	}

	var ctrf struct {
		Results struct {
			Tests []struct {
				Name   string         `json:"name"`
				Status string         `json:"status"`
				Extra  map[string]any `json:"extra"`
			} `json:"tests"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(readFile(t, want[0])), &ctrf); err != nil {
		t.Fatal(err)
	}
	head := ctrf.Results.Tests[0]
	if head.Name != "nccl-all-reduce-bw" || head.Status != "passed" {
		t.Errorf("headline %s %s", head.Name, head.Status)
	}
	for k, v := range map[string]any{"runtimeSource": "shipped", "trainerAction": "use-declared", "trainerVersion": "v2.2.0", "pluginVersionObserved": "1.0.15"} {
		if head.Extra[k] != v {
			t.Errorf("report extra %s = %v, want %v", k, head.Extra[k], v)
		}
	}
	if !strings.HasPrefix(readFile(t, want[1]), "<svg") {
		t.Error("the chart is not SVG")
	}
	if readFile(t, want[2]) != readFile(t, filepath.Join(repoTestdata, "nccl-logs", "healthy.log")) {
		t.Error("the saved launcher log is not the log that was judged")
	}
}

func TestJudgeFailingLogs(t *testing.T) {
	floor, _ := busbw.ParseFloor("300")
	o, err := judge(ncclLog(t, "tcp-fallback.log"), tcpxoJudging(t, floor), liveContext)
	if err != nil {
		t.Fatal(err)
	}
	if o.Verdict.Pass || !strings.Contains(strings.Join(o.Verdict.Problems, "\n"), "NCCL used Socket") {
		t.Errorf("TCP fallback judged %+v", o.Verdict)
	}

	// A launcher that never ran the benchmark: no verdict, but its log is
	// kept to show why.
	o, err = judge(strings.NewReader("ssh: connect to host nccl-bench-node-1 port 22: Connection refused\n"), tcpxoJudging(t, floor), liveContext)
	if !errors.Is(err, busbw.ErrNoOutput) || o == nil {
		t.Fatalf("judge = %v, %v", o, err)
	}
	dir := t.TempDir()
	paths, err := o.write(dir)
	if err != nil || len(paths) != 1 || filepath.Base(paths[0]) != LogFile {
		t.Errorf("write = %v, %v; want the log alone", paths, err)
	}

	// A launcher that ran another benchmark: no verdict against the
	// all_reduce floor, and the error names what ran.
	o, err = judge(ncclLog(t, filepath.Join("published", "triton-distributed-137-all-gather.log")), tcpxoJudging(t, floor), liveContext)
	if !errors.Is(err, busbw.ErrOtherCollective) || !strings.Contains(fmt.Sprint(err), "all_gather_perf") || o == nil || o.ctrf != nil {
		t.Fatalf("judge = %v, %v", o, err)
	}
}

func trainJobWith(conds ...metav1.Condition) runtime.Object {
	tj := &trainer.TrainJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bench"},
		Status:     trainer.TrainJobStatus{Conditions: conds},
	}
	u, _ := toUnstructured(tj)
	return u
}

func TestWaitTrainJob(t *testing.T) {
	complete := metav1.Condition{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "JobSetCompleted"}
	failed := metav1.Condition{Type: trainer.TrainJobFailed, Status: metav1.ConditionTrue, Reason: "JobSetFailed", Message: "launcher: BackoffLimitExceeded"}
	for _, tc := range []struct {
		name      string
		objs      []runtime.Object
		interrupt bool
		want      string // "" for success
	}{
		{"complete", []runtime.Object{trainJobWith(complete)}, false, ""},
		{"failed", []runtime.Object{trainJobWith(failed)}, false, "TrainJob default/bench failed: JobSetFailed: launcher: BackoffLimitExceeded"},
		{"still running", []runtime.Object{trainJobWith(metav1.Condition{Type: trainer.TrainJobSuspended, Status: metav1.ConditionFalse, Reason: "Resumed"})}, false, "did not finish within --timeout 50ms (last status: Suspended=False (Resumed))"},
		{"interrupted", []runtime.Object{trainJobWith()}, true, "waiting for TrainJob default/bench: interrupted (last status: no status yet)"},
		{"deleted", nil, false, "TrainJob default/bench was deleted while the benchmark ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(t, nil, nil, tc.objs)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if tc.interrupt {
				var stop context.CancelFunc
				ctx, stop = context.WithCancel(ctx)
				time.AfterFunc(10*time.Millisecond, stop)
			}
			err := waitTrainJob(ctx, f.dyn, "default", "bench", 50*time.Millisecond, 5*time.Millisecond)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("waitTrainJob = %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("waitTrainJob = %v, want %q", err, tc.want)
			}
		})
	}
}

func launcherPod(name, jobSet string, created time.Time) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: name, CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{jobsetv1alpha2.JobSetNameKey: jobSet, jobsetv1alpha2.ReplicatedJobNameKey: constants.Launcher},
	}}
}

func TestLauncherLog(t *testing.T) {
	now := time.Now()
	f := newFakeCluster(t, []runtime.Object{
		launcherPod("bench-launcher-0-0-old", "bench", now.Add(-time.Minute)),
		launcherPod("bench-launcher-0-0-new", "bench", now),
		launcherPod("other-launcher-0-0", "other", now.Add(time.Minute)),
	}, nil, nil)
	pod, err := findLauncher(context.Background(), f.kube, "default", "bench")
	if err != nil || pod.Name != "bench-launcher-0-0-new" {
		t.Errorf("findLauncher = %v, %v; want the newest launcher of the TrainJob", pod, err)
	}
	r, err := launcherLog(context.Background(), f.kube, "default", "bench", "node")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b, _ := io.ReadAll(r); len(b) == 0 {
		t.Error("empty log stream")
	}

	_, err = launcherLog(context.Background(), f.kube, "default", "missing", "node")
	if err == nil || !strings.Contains(err.Error(), "has no launcher pod") || !strings.Contains(err.Error(), "kubectl -n default describe trainjob missing") {
		t.Errorf("no launcher pod: %v", err)
	}
}

// The TrainJob runs the derived runtime and nothing else.
func TestTrainJobReferencesTheBenchmark(t *testing.T) {
	bench := &trainer.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "nccl-tests-tcpxo-abc123"}}
	tj := trainJobFor(bench, "abc123")
	if tj.Namespace != "ml" || tj.Name != bench.Name || tj.Labels[RunLabel] != "abc123" {
		t.Errorf("TrainJob metadata %+v", tj.ObjectMeta)
	}
	ref := tj.Spec.RuntimeRef
	if ref.Name != bench.Name || *ref.Kind != trainer.TrainingRuntimeKind || *ref.APIGroup != trainer.GroupVersion.Group {
		t.Errorf("runtimeRef %+v", ref)
	}
	if tj.Spec.Trainer != nil || tj.Spec.RuntimePatches != nil || tj.Spec.Initializer != nil {
		t.Error("the TrainJob overrides the runtime it measures")
	}
}

// tcpxoJudging judges a TCPXO all_reduce log against floor with the plugin
// version of the test logs.
func tcpxoJudging(t testing.TB, floor busbw.Floor) judging {
	t.Helper()
	fab, err := busbw.LookupFabric(busbw.DefaultFabric)
	if err != nil {
		t.Fatal(err)
	}
	return judging{floor: floor, collective: busbw.AllReduce, fabric: fab, pluginVersion: "v1.0.15"}
}
