package validate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/interrupt"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/validators/performance/agreement"
	"github.com/tcpxogen/tcpxogen/validators/performance/lifecycle"
	"github.com/tcpxogen/tcpxogen/validators/performance/podcheck"
	"github.com/tcpxogen/tcpxogen/validators/performance/report"
)

const (
	// pollInterval paces reading the TrainJob's status; a benchmark runs
	// for minutes, so a few seconds of latency cost nothing.
	pollInterval = 10 * time.Second
	// readyInterval paces waiting for an installed trainer to be ready.
	readyInterval = 2 * time.Second
	// cleanupTimeout bounds deleting the run's own objects. Like the
	// trainer teardown, the cleanup ignores the run's cancellation (an
	// interrupt must not also interrupt it) but is bounded.
	cleanupTimeout = 2 * time.Minute
	// logTimeout bounds reading the launcher's log, which happens even when
	// the run's deadline has passed, to judge what the run did manage.
	logTimeout = 2 * time.Minute
)

// execute carries the plan out: lifecycle.Plan.Run installs the trainer when
// the policy says so and tears it down afterwards, around the benchmark.
// The whole run is bounded by --timeout.
func (v *validation) execute(ctx context.Context, cl *Clients, s streams) error {
	if cl.Applier == nil {
		return errors.New("no client to create the benchmark's objects with; this is a bug in tcpxogen")
	}
	ctx, cancel := context.WithTimeout(ctx, v.opts.Timeout)
	defer cancel()
	plan := v.trainerPlan
	plan.Events = func(e lifecycle.Event) {
		v.left.track(e)
		progress(s.Err, e.Step, e.Object, e.Err)
	}
	defer interrupt.Leftovers(ctx, v.left.report)()
	plan.WaitReady = func(ctx context.Context) error { return lifecycle.WaitComplete(ctx, cl.cluster(), readyInterval) }
	return plan.Run(ctx, cl.Applier, func(ctx context.Context) error { return v.benchmark(ctx, cl, s) })
}

// benchmark is the body Plan.Run runs once the trainer is usable: it creates
// the benchmark's objects, waits for the TrainJob, judges the launcher's log
// and writes the results. Whatever it created is deleted before it returns.
func (v *validation) benchmark(ctx context.Context, cl *Clients, s streams) (err error) {
	var created []*unstructured.Unstructured
	defer func() {
		// Reverse order: the TrainJob (whose deletion takes its JobSet and
		// pods), then the runtime it references, then the shipped runtime
		// this run applied.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for i := len(created) - 1; i >= 0; i-- {
			o := created[i]
			derr := cl.Applier.Delete(cctx, o)
			if derr == nil {
				v.left.remove(o)
			}
			progress(s.Err, stepOf(derr, "deleted", "delete-failed"), describe(o), derr)
			if derr != nil {
				err = errors.Join(err, fmt.Errorf("deleting %s: %w; delete it by hand (it carries the label %s=%s)", describe(o), derr, RunLabel, v.runID))
			}
		}
	}()
	create := func(obj any) (*unstructured.Unstructured, error) {
		u, err := toUnstructured(obj)
		if err != nil {
			return nil, err
		}
		if err := cl.Applier.Apply(ctx, u); err != nil {
			if errors.Is(err, lifecycle.ErrUnconfirmed) {
				// It may exist: the deferred cleanup and the leftovers
				// report cover it (Delete checks it carries this run's
				// label first).
				created = append(created, u)
				v.left.add(u)
			}
			return nil, fmt.Errorf("creating %s: %w", describe(u), err)
		}
		created = append(created, u)
		v.left.add(u)
		progress(s.Err, "created", describe(u), nil)
		return u, nil
	}

	source, bench := v.deployed, v.bench
	if v.applyShipped {
		rt := v.rendered.DeepCopy()
		rt.Labels[RunLabel] = v.runID
		rt.Labels[lifecycle.InstallIDLabel] = v.trainerPlan.InstallID
		if _, err := create(rt); err != nil {
			return err
		}
		if source, err = v.readBackShipped(ctx, cl); err != nil {
			return err
		}
		if bench, err = benchmark.Derive(source, v.params); err != nil {
			return fmt.Errorf("deriving the benchmark from the applied %s: %w", v.runtimeName(), err)
		}
		if diffs := benchmark.WiringEqual(source, bench); len(diffs) > 0 {
			return fmt.Errorf("the derived benchmark's wiring differs from %s, which is a bug in tcpxogen's derivation; please report it:\n  %s", v.runtimeName(), strings.Join(diffs, "\n  "))
		}
		bench.Labels[RunLabel] = v.runID
	}
	// Recorded only now: for the install row the agreement was verified
	// just above, on the object the server stored.
	prov, err := lifecycle.Record(v.trainerPlan.Decision, lifecycle.Origin{Runtime: lifecycle.DerivedFromDeployed, AgreementVerified: true})
	if err != nil {
		return err
	}
	if _, err := create(bench); err != nil {
		return err
	}
	// The trainer's TrainJob webhook looks the runtime up in its informer
	// cache, which can lag the TrainingRuntime just created: it then
	// rejects the TrainJob saying the runtime "must be created before the
	// TrainJob is created". That rejection is retried for a while; any
	// other is final. Found by the e2e suite (e2e/), intermittently.
	if err := retryRuntimeNotCached(ctx, runtimeCacheRetry, runtimeCacheWait, func() error {
		_, err := create(v.trainJob)
		return err
	}, func(err error) { progress(s.Err, "retrying", describe(mustUnstructured(v.trainJob)), err) }); err != nil {
		return err
	}

	start := time.Now()
	workers := watchWorkers(ctx, cl.Kube, v.trainJob.Namespace, v.trainJob.Name, workerPollInterval)
	waitErr := waitTrainJob(ctx, cl.Dynamic, v.trainJob.Namespace, v.trainJob.Name, v.opts.Timeout, pollInterval)
	running := workers.stop()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), logTimeout)
	defer cancel()
	log, err := launcherLog(lctx, cl.Kube, v.trainJob.Namespace, v.trainJob.Name, launcherContainer(bench))
	if err != nil {
		return errors.Join(waitErr, err)
	}
	defer log.Close()
	rc := report.Context{
		RuntimeSource:  string(prov.RuntimeSource),
		TrainerAction:  string(prov.TrainerAction),
		PluginVersion:  v.facts.PluginVersion,
		NCCLVersion:    v.facts.NCCLVersion,
		TrainerVersion: v.in.BOM.Trainer.Version,
		Recipe:         v.opts.Recipe,
		Start:          start.UnixMilli(),
		Stop:           time.Now().UnixMilli(),
	}
	j, err := v.judging()
	if err != nil {
		return errors.Join(waitErr, err)
	}
	o, judgeErr := judge(log, j, rc)
	if o == nil {
		return errors.Join(waitErr, judgeErr)
	}
	// Signed before anything is written, so the bundle is written with
	// the report, chart and log or not at all; a run refused evidence
	// still saves its results.
	var signErr error
	if v.key != nil && judgeErr == nil {
		pods, err := benchmarkPods(lctx, cl.Kube, v.trainJob.Namespace, v.trainJob.Name, running)
		if err == nil {
			err = o.sign(v.key, rc, source, pods, v.opts.AllowMutableTags)
		}
		signErr = err
	}
	paths, writeErr := o.write(v.opts.Out)
	if signErr != nil && writeErr == nil {
		signErr = fmt.Errorf("%w; the unsigned results are saved in %s", signErr, strings.Join(paths, ", "))
	}
	if judgeErr != nil && writeErr == nil {
		judgeErr = fmt.Errorf("%w; the log is saved in %s", judgeErr, strings.Join(paths, ", "))
	}
	if judgeErr != nil || writeErr != nil {
		return errors.Join(waitErr, judgeErr, writeErr)
	}
	o.summary(s.Out, paths)
	if err := workersWired(lctx, cl.Kube, v.fab, v.facts, v.trainJob.Namespace, v.trainJob.Name, bench, running); err != nil {
		return errors.Join(waitErr, err, signErr)
	}
	if !o.Verdict.Pass {
		return errors.Join(waitErr, signErr, fmt.Errorf("the benchmark failed %d check(s) (runtimeSource %s): %s", len(o.Verdict.Problems), prov.RuntimeSource, strings.Join(o.Verdict.Problems, "; ")))
	}
	return errors.Join(waitErr, signErr)
}

// readBackShipped reads the shipped runtime this run applied and checks that
// the server stored what was rendered: the agreement check of the install
// row, made on the object the benchmark is then derived from.
func (v *validation) readBackShipped(ctx context.Context, cl *Clients) (*trainer.ClusterTrainingRuntime, error) {
	stored, err := deployedRuntime(ctx, cl, v.runtimeName())
	if err != nil {
		return nil, err
	}
	if stored == nil {
		return nil, fmt.Errorf("ClusterTrainingRuntime %s was created but cannot be read back", v.runtimeName())
	}
	sv, err := clusterValidator(ctx, cl)
	if err != nil {
		return nil, err
	}
	diffs, err := agreement.Compare(sv, stored, v.rendered)
	if err != nil {
		return nil, fmt.Errorf("comparing the applied %s with the render: %w", v.runtimeName(), err)
	}
	if len(diffs) > 0 {
		return nil, fmt.Errorf("the API server stored %s differently from the render, so the result could not be called evidence about what ships (a trainer or admission webhook changed it?):\n  %s", v.runtimeName(), strings.Join(diffs, "\n  "))
	}
	return stored, nil
}

// waitTrainJob waits until the TrainJob is Complete (nil) or Failed (an
// error with the trainer's reason). Reading errors are retried until ctx
// ends, since an API server hiccup during a long benchmark is no reason to
// abandon it; a TrainJob that disappears is not.
func waitTrainJob(ctx context.Context, dyn dynamic.Interface, ns, name string, timeout, interval time.Duration) error {
	status, lastErr := "no status yet", error(nil)
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(trainJobs).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("TrainJob %s/%s was deleted while the benchmark ran", ns, name)
		}
		if err != nil {
			lastErr = err
			return false, nil
		}
		var tj trainer.TrainJob
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &tj); err != nil {
			return false, fmt.Errorf("TrainJob %s/%s does not decode: %w", ns, name, err)
		}
		var conds []string
		for _, c := range tj.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason))
			if c.Status != metav1.ConditionTrue {
				continue
			}
			switch c.Type {
			case trainer.TrainJobComplete:
				return true, nil
			case trainer.TrainJobFailed:
				return false, fmt.Errorf("TrainJob %s/%s failed: %s: %s; its launcher's log is judged below (kubectl -n %s describe trainjob %s for the rest)", ns, name, c.Reason, c.Message, ns, name)
			}
		}
		if len(conds) > 0 {
			status = strings.Join(conds, ", ")
		}
		return false, nil
	})
	if err == nil || ctx.Err() == nil {
		return err
	}
	if lastErr != nil {
		status += fmt.Sprintf("; the last read failed: %v", lastErr)
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("waiting for TrainJob %s/%s: interrupted (last status: %s): %w", ns, name, status, context.Cause(ctx))
	}
	return fmt.Errorf("TrainJob %s/%s did not finish within --timeout %s (last status: %s); raise --timeout if the nodes were still starting: %w", ns, name, timeout, status, context.Cause(ctx))
}

// launcherContainer is the name of the derived launcher's container, the
// one whose log holds the mpirun output.
func launcherContainer(bench *trainer.TrainingRuntime) string {
	for _, rj := range bench.Spec.Template.Spec.ReplicatedJobs {
		if rj.Name == constants.Launcher && len(rj.Template.Spec.Template.Spec.Containers) > 0 {
			return rj.Template.Spec.Template.Spec.Containers[0].Name
		}
	}
	return ""
}

// workersWired asserts the benchmark's worker pods really ran with the
// wiring of fabric f (judged by f's rule set and the guest config rules of
// its pinned facts pins) and, for TCPXO, a started daemon: a number from
// unwired pods fails the run even when it passes the floor.
func workersWired(ctx context.Context, kube kubernetes.Interface, f fabric.Fabric, pins facts.Facts, ns, trainJob string, bench *trainer.TrainingRuntime, running []corev1.Pod) error {
	pods := running
	if len(pods) == 0 {
		// Never seen running (the run failed early): judge what is there.
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: workerSelector(trainJob)})
		if err != nil {
			return readError("the worker pods of TrainJob "+ns+"/"+trainJob, podsResource, "list", err)
		}
		pods = list.Items
	}
	tpl, err := wiring.RuntimePodTemplate(bench, constants.Node)
	if err != nil {
		return err
	}
	return podcheck.CheckFabric(f, pods, tpl, runtimes.RulesFor(pins, wiring.Of(tpl, constants.Node).NodeEnv))
}

func workerSelector(trainJob string) string {
	return labels.Set{jobsetv1alpha2.JobSetNameKey: trainJob, jobsetv1alpha2.ReplicatedJobNameKey: constants.Node}.String()
}

// runtimeNotCached is the trainer v2.2.0 webhook's message when its cache
// does not hold the TrainJob's runtime (pkg/runtime/core).
const runtimeNotCached = "must be created before the TrainJob is created"

// How often and how long a TrainJob rejected with runtimeNotCached is
// retried: an informer catches up in milliseconds to seconds.
const (
	runtimeCacheRetry = 500 * time.Millisecond
	runtimeCacheWait  = 30 * time.Second
)

// retryRuntimeNotCached calls create until it succeeds or fails otherwise
// than with runtimeNotCached, every `every` for at most within (calling
// retrying with each such rejection). When the time runs out, or ctx ends,
// while the webhook still rejects, the error is that rejection (the
// TrainJob and the webhook's words), not the poll's bare deadline.
func retryRuntimeNotCached(ctx context.Context, every, within time.Duration, create func() error, retrying func(error)) error {
	var rejected error
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, every, within, true, func(context.Context) (bool, error) {
		err := create()
		if err != nil && strings.Contains(err.Error(), runtimeNotCached) {
			rejected = err
			retrying(err)
			return false, nil
		}
		return true, err
	})
	if err != nil && rejected != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return fmt.Errorf("%w; retried for %s, the trainer's cache still lacked the runtime (%w)", rejected, time.Since(start).Round(100*time.Millisecond), err)
	}
	return err
}

// mustUnstructured is toUnstructured for describing an object in a
// progress line; a conversion error describes nothing.
func mustUnstructured(obj any) *unstructured.Unstructured {
	u, err := toUnstructured(obj)
	if err != nil {
		return &unstructured.Unstructured{}
	}
	return u
}

// workerPollInterval paces watchWorkers.
const workerPollInterval = 2 * time.Second

// workerWatch keeps the worker pods as last seen all Running. The wiring is
// checked on them, not after the TrainJob ends: once the launcher
// finishes, JobSet deletes the workers' still-running Jobs (and their pods
// go), and a finished pod's sidecar reports started=false. Found by the
// e2e suite (e2e/, TestValidatePasses).
type workerWatch struct {
	mu     sync.Mutex
	pods   []corev1.Pod
	cancel context.CancelFunc
	done   chan struct{}
}

func watchWorkers(ctx context.Context, kube kubernetes.Interface, ns, trainJob string, every time.Duration) *workerWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &workerWatch{cancel: cancel, done: make(chan struct{})}
	sel := workerSelector(trainJob)
	go func() {
		defer close(w.done)
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil || len(list.Items) == 0 {
				return // a read error now is retried at the next tick; the final check reports its own
			}
			for _, p := range list.Items {
				if p.Status.Phase != corev1.PodRunning {
					return
				}
			}
			w.mu.Lock()
			w.pods = list.Items
			w.mu.Unlock()
		}, every)
	}()
	return w
}

// stop ends the watch and returns the last all-Running worker pods, or nil.
func (w *workerWatch) stop() []corev1.Pod {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pods
}

// launcherLog opens the log of the TrainJob's launcher pod.
func launcherLog(ctx context.Context, kube kubernetes.Interface, ns, trainJob, container string) (io.ReadCloser, error) {
	pod, err := findLauncher(ctx, kube, ns, trainJob)
	if err != nil {
		return nil, err
	}
	r, err := kube.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container}).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the log of launcher pod %s/%s: %w; the validator needs get on pods/log", ns, pod.Name, err)
	}
	return r, nil
}

// findLauncher finds the TrainJob's launcher pod. The trainer names the
// JobSet after the TrainJob, and JobSet labels each pod with both names. With
// backoffLimit 0 there is one launcher pod; should there be more, the newest
// is the run's last word.
func findLauncher(ctx context.Context, kube kubernetes.Interface, ns, trainJob string) (*corev1.Pod, error) {
	sel := labels.Set{jobsetv1alpha2.JobSetNameKey: trainJob, jobsetv1alpha2.ReplicatedJobNameKey: constants.Launcher}.String()
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, readError("the launcher pod of TrainJob "+ns+"/"+trainJob, podsResource, "list", err)
	}
	if len(pods.Items) == 0 {
		return nil, fmt.Errorf("TrainJob %s/%s has no launcher pod (no pod labelled %s), so there is no log to judge; the benchmark never started: kubectl -n %s describe trainjob %s", ns, trainJob, sel, ns, trainJob)
	}
	newest := &pods.Items[0]
	for i := range pods.Items {
		if newest.CreationTimestamp.Before(&pods.Items[i].CreationTimestamp) {
			newest = &pods.Items[i]
		}
	}
	return newest, nil
}

func toUnstructured(obj any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func describe(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return o.GetKind() + " " + ns + "/" + o.GetName()
	}
	return o.GetKind() + " " + o.GetName()
}

func stepOf(err error, ok, failed string) string {
	if err != nil {
		return failed
	}
	return ok
}

// progress reports one step of a live run on stderr, as it happens.
func progress(w io.Writer, step, object string, err error) {
	if err != nil {
		fmt.Fprintf(w, "validate: %s %s: %v\n", step, object, err)
		return
	}
	fmt.Fprintf(w, "validate: %s %s\n", step, object)
}
