package validate

import (
	"context"
	"strings"
	"testing"

	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// workerPod is a worker as the cluster reports it after a benchmark run.
func workerPod(t *testing.T, name string, tpl *corev1.PodTemplateSpec) *corev1.Pod {
	t.Helper()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: tpl.Annotations,
			Labels: map[string]string{jobsetv1alpha2.JobSetNameKey: "job", jobsetv1alpha2.ReplicatedJobNameKey: constants.Node}},
		Spec: *tpl.Spec.DeepCopy(),
		Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{
			{Name: names.DaemonContainer, Started: ptr.To(true)},
		}},
	}
}

func TestWorkersWired(t *testing.T) {
	shippedRT, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	bench, err := benchmark.Derive(shippedRT, withNamespace(benchmark.ParamsFor(shipped.Facts()), "default"))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := wiring.RuntimePodTemplate(bench, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	good := workerPod(t, "w-0", tpl)
	kube := fake.NewClientset(good, workerPod(t, "w-1", tpl))
	if err := workersWired(context.Background(), kube, fabric.TCPXO, shipped.Facts(), "default", "job", bench, nil); err != nil {
		t.Fatalf("wired workers failed: %v", err)
	}
	bad := workerPod(t, "w-2", tpl)
	bad.Annotations = nil
	kube = fake.NewClientset(good, bad)
	err = workersWired(context.Background(), kube, fabric.TCPXO, shipped.Facts(), "default", "job", bench, nil)
	if err == nil || !strings.Contains(err.Error(), "pod w-2: annotation lost") {
		t.Fatalf("an unwired worker must fail the run naming it, got %v", err)
	}
	if err := workersWired(context.Background(), fake.NewClientset(), fabric.TCPXO, shipped.Facts(), "default", "job", bench, nil); err == nil {
		t.Fatal("a run without worker pods passed")
	}
}

func withNamespace(p benchmark.Params, ns string) benchmark.Params {
	p.Namespace = ns
	return p
}
