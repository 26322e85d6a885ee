package wiring

import (
	"reflect"
	"testing"

	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
)

func requiredAffinity(terms ...[]corev1.NodeSelectorRequirement) *corev1.Affinity {
	var ts []corev1.NodeSelectorTerm
	for _, t := range terms {
		ts = append(ts, corev1.NodeSelectorTerm{MatchExpressions: t})
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: ts}}}
}

func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// The placement is compared entry by entry and term by term, and the node
// container's position among the pod's containers is part of the wiring.
func TestDiffPlacementAndOrder(t *testing.T) {
	runtime := testPod(t)
	runtime.Spec.NodeSelector = map[string]string{"cloud.google.com/gke-accelerator": "nvidia-h200-141gb"}
	runtime.Spec.Affinity = requiredAffinity([]corev1.NodeSelectorRequirement{in("node.kubernetes.io/instance-type", "a3-ultragpu-8g")})

	realized := runtime.DeepCopy()
	realized.Spec.NodeSelector = map[string]string{"cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb", "pool": "a"}
	realized.Spec.Affinity = requiredAffinity(
		[]corev1.NodeSelectorRequirement{in("node.kubernetes.io/instance-type", "a3-megagpu-8g"), in("zone", "z1")},
		[]corev1.NodeSelectorRequirement{{Key: "spot", Operator: corev1.NodeSelectorOpExists}},
	)
	realized.Spec.Containers = append([]corev1.Container{{Name: "sidecar"}}, realized.Spec.Containers...)

	got := Diff(Of(runtime, constants.Node), Of(realized, constants.Node))
	want := []Change{
		{What: NodeSelectorChanged, Path: "nodeSelector cloud.google.com/gke-accelerator", From: "nvidia-h200-141gb", To: "nvidia-h100-mega-80gb"},
		{What: NodeSelectorAdded, Path: "nodeSelector pool", To: "a"},
		{What: NodeAffinityChanged, Path: "nodeAffinity term 0 node.kubernetes.io/instance-type", From: "In a3-ultragpu-8g", To: "In a3-megagpu-8g"},
		{What: NodeAffinityAdded, Path: "nodeAffinity term 0 zone", To: "In z1"},
		{What: NodeAffinityAdded, Path: "nodeAffinity term 1", To: "spot Exists"},
		{What: NodeContainerMoved, Path: "container node position", From: "node", To: "sidecar,node"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff =\n%v\nwant\n%v", got, want)
	}

	// Dropped: the selector entry and the whole term are lost.
	dropped := runtime.DeepCopy()
	dropped.Spec.NodeSelector, dropped.Spec.Affinity = nil, nil
	got = Diff(Of(runtime, constants.Node), Of(dropped, constants.Node))
	want = []Change{
		{What: NodeSelectorLost, Path: "nodeSelector cloud.google.com/gke-accelerator", From: "nvidia-h200-141gb"},
		{What: NodeAffinityLost, Path: "nodeAffinity term 0", From: "node.kubernetes.io/instance-type In a3-ultragpu-8g"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff of a dropped placement =\n%v\nwant\n%v", got, want)
	}

	// A container after node moves nothing.
	after := runtime.DeepCopy()
	after.Spec.Containers = append(after.Spec.Containers, corev1.Container{Name: "sidecar"})
	if d := Diff(Of(runtime, constants.Node), Of(after, constants.Node)); len(d) != 0 {
		t.Errorf("a container after node: Diff = %v, want none", d)
	}
}
