// Package scenario holds what the end-to-end scenarios of several test
// binaries share: reading the manifests of a YAML stream, polling the
// control plane for a condition, and waiting for a JobSet's pods with the
// cluster's state in the failure. The main suite's guide scenarios and the
// Helm chart's install scenario (e2e/helm) run their TrainJobs through it.
package scenario

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubeflow/trainer/v2/pkg/constants"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/validators/performance/podcheck"
)

// Documents splits multi-document YAML, dropping documents that hold only
// comments or nothing.
func Documents(data []byte) [][]byte {
	var out [][]byte
	for _, d := range strings.Split("\n"+string(data), "\n---") {
		if strings.TrimSpace(stripComments(d)) != "" {
			out = append(out, []byte(d))
		}
	}
	return out
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// Decode reads one document strictly (a duplicate or malformed field is an
// error) into an unstructured object.
func Decode(doc []byte) (*unstructured.Unstructured, error) {
	obj := map[string]any{}
	if err := yaml.UnmarshalStrict(doc, &obj); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// WaitFor polls cond every 100 ms until it holds, fails, or timeout.
// A describe function, if given, adds the cluster's state to the failure.
func WaitFor(t testing.TB, ctx context.Context, timeout time.Duration, what string, cond func() (bool, error), describe ...func() string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, err
	})
	if err != nil {
		state := ""
		for _, d := range describe {
			state += d()
		}
		t.Fatalf("waiting for %s: %v (last: %v)%s", what, err, last, state)
	}
}

// ExpectedNodePods is how many pods the JobSet's node replicated job runs.
func ExpectedNodePods(js *jobsetv1alpha2.JobSet) int {
	n := 0
	for _, rj := range js.Spec.ReplicatedJobs {
		if rj.Name != constants.Node {
			continue
		}
		par := int32(1)
		if rj.Template.Spec.Parallelism != nil {
			par = *rj.Template.Spec.Parallelism
		}
		n += int(rj.Replicas * par)
	}
	return n
}

// WaitPods waits until the JobSet's node replicated job has want pods in
// phase, and returns all the JobSet's pods.
func WaitPods(t testing.TB, ctx context.Context, c client.Client, ns, jobSet string, want int, phase corev1.PodPhase) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	WaitFor(t, ctx, 60*time.Second, fmt.Sprintf("%d %s node pods of %s", want, phase, jobSet), func() (bool, error) {
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: jobSet}); err != nil {
			return false, err
		}
		n := 0
		for _, p := range pods.Items {
			if p.Labels[podcheck.ReplicatedJobLabel] == constants.Node && p.Status.Phase == phase {
				n++
			}
		}
		return n >= want, nil
	}, func() string { return DescribeNamespace(ctx, c, ns) })
	return pods.Items
}

// DescribeNamespace summarises the Jobs, pods and warning events of ns for
// a failure message.
func DescribeNamespace(ctx context.Context, c client.Client, ns string) string {
	var b strings.Builder
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	for _, j := range jobs.Items {
		fmt.Fprintf(&b, "\n  Job %s: active %d, succeeded %d, failed %d, conditions %+v", j.Name, j.Status.Active, j.Status.Succeeded, j.Status.Failed, j.Status.Conditions)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "\n  Pod %s: node %q, phase %s", p.Name, p.Spec.NodeName, p.Status.Phase)
	}
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning {
			fmt.Fprintf(&b, "\n  Event %s %s: %s", e.InvolvedObject.Kind, e.Reason, e.Message)
		}
	}
	return b.String()
}
