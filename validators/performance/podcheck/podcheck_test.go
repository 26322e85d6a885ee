package podcheck

import (
	"strings"
	"testing"

	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

func template(t *testing.T) *corev1.PodTemplateSpec {
	t.Helper()
	rt, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	return rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.DeepCopy()
}

// pod is a worker as the cluster would report it: the template's spec plus
// a started daemon.
func pod(t *testing.T, name string) corev1.Pod {
	tpl := template(t)
	labels := map[string]string{ReplicatedJobLabel: constants.Node}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: tpl.Annotations},
		Spec:       tpl.Spec,
		Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{
			{Name: names.DaemonContainer, Started: ptr.To(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}},
	}
}

func TestWiredPodsPass(t *testing.T) {
	launcher := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "l", Labels: map[string]string{ReplicatedJobLabel: "launcher"}}}
	if err := Check([]corev1.Pod{pod(t, "w-0"), pod(t, "w-1"), launcher}, template(t), shipped.Facts().DefaultGuestRules); err != nil {
		t.Fatal(err)
	}
}

// TestServerDefaultedPodsPass: a pod read from an API server carries the
// defaults it sets on every pod (hostPath type ""), which the runtime's
// template, a custom resource, does not; that is not a lost wiring.
func TestServerDefaultedPodsPass(t *testing.T) {
	p := pod(t, "w-0")
	hostPaths := 0
	for i := range p.Spec.Volumes {
		if hp := p.Spec.Volumes[i].HostPath; hp != nil && hp.Type == nil {
			hp.Type = new(corev1.HostPathUnset)
			hostPaths++
		}
	}
	if hostPaths == 0 {
		t.Fatal("the shipped runtime has no untyped hostPath volume: the test proves nothing")
	}
	if err := Check([]corev1.Pod{p}, template(t), shipped.Facts().DefaultGuestRules); err != nil {
		t.Fatal(err)
	}
}

func TestPodsWithoutWiringFail(t *testing.T) {
	stripped := pod(t, "w-1")
	stripped.Annotations = map[string]string{}
	notStarted := pod(t, "w-2")
	notStarted.Status.InitContainerStatuses[0].Started = ptr.To(false)
	crashed := pod(t, "w-3")
	crashed.Status.InitContainerStatuses[0] = corev1.ContainerStatus{Name: names.DaemonContainer,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}
	noGPU := pod(t, "w-4")
	noGPU.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	err := Check([]corev1.Pod{pod(t, "w-0"), stripped, notStarted, crashed, noGPU}, template(t), shipped.Facts().DefaultGuestRules)
	if err == nil {
		t.Fatal("pods without the wiring passed")
	}
	for _, want := range []string{"4 of the benchmark's worker pods", "pod w-1: annotation lost: annotation networking.gke.io/interfaces",
		"pod w-2: tcpxo-daemon never passed its startup probe", "pod w-3: tcpxo-daemon terminated (Error, exit 1)", "pod w-4: resource lost: limits nvidia.com/gpu"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "pod w-0") {
		t.Error("a wired pod was reported")
	}
}

func TestNoWorkersFails(t *testing.T) {
	if err := Check(nil, template(t), shipped.Facts().DefaultGuestRules); err == nil || !strings.Contains(err.Error(), "no worker pods") {
		t.Fatalf("got %v", err)
	}
}
