package realize

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
)

// The pod's placement and the node container's position are judged:
// what the runtime selects on, lost or changed, loses the fabric; what
// only narrows it keeps it; another container before node loses it.
func TestJudgePlacement(t *testing.T) {
	instanceType := func(v string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: fabric.InstanceTypeLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}
	}
	term := func(rs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: rs}
	}
	pool := corev1.NodeSelectorRequirement{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	gib := wiring.Wiring{HasNode: true, Containers: []string{"node"}, NodeAffinity: []corev1.NodeSelectorTerm{term(instanceType("a3-ultragpu-8g"))}}
	tcpxo := wiring.Wiring{HasNode: true, Containers: []string{"node"}, NodeSelector: map[string]string{fabric.AcceleratorLabel: "nvidia-h100-mega-80gb"}}
	for _, tc := range []struct {
		name     string
		from     wiring.Wiring
		edit     func(*wiring.Wiring)
		fatal    bool
		path     string
		contains string
	}{
		{"affinity to another machine", gib, func(w *wiring.Wiring) {
			w.NodeAffinity = []corev1.NodeSelectorTerm{term(instanceType("a3-megagpu-8g"))}
		},
			true, "nodeAffinity term 0 " + fabric.InstanceTypeLabel, "another fabric"},
		{"affinity dropped", gib, func(w *wiring.Wiring) { w.NodeAffinity = nil }, true, "nodeAffinity term 0", "run over TCP"},
		{"requirement added to the term", gib, func(w *wiring.Wiring) {
			w.NodeAffinity = []corev1.NodeSelectorTerm{term(instanceType("a3-ultragpu-8g"), pool)}
		},
			false, "nodeAffinity term 0 pool", "narrows"},
		{"term added beside the runtime's", gib, func(w *wiring.Wiring) {
			w.NodeAffinity = []corev1.NodeSelectorTerm{term(instanceType("a3-ultragpu-8g")), term(pool)}
		}, true, "nodeAffinity term 1", "widens"},
		{"selector added", gib, func(w *wiring.Wiring) { w.NodeSelector = map[string]string{"pool": "a"} }, false, "nodeSelector pool", "node pool"},
		{"selector dropped", tcpxo, func(w *wiring.Wiring) { w.NodeSelector = nil }, true, "nodeSelector " + fabric.AcceleratorLabel, "nvidia-h100-mega-80gb"},
		{"selector emptied", tcpxo, func(w *wiring.Wiring) { w.NodeSelector = map[string]string{fabric.AcceleratorLabel: ""} }, true, "nodeSelector " + fabric.AcceleratorLabel, "another fabric"},
		{"affinity where the runtime has none", tcpxo, func(w *wiring.Wiring) { w.NodeAffinity = []corev1.NodeSelectorTerm{term(pool)} }, false, "nodeAffinity term 0", "narrows"},
		{"sidecar first", gib, func(w *wiring.Wiring) { w.Containers, w.NodeIndex = []string{"sidecar", "node"}, 1 }, true, "container node position", "RDMA device files only to its first"},
		{"sidecar first on TCPXO", tcpxo, func(w *wiring.Wiring) { w.Containers, w.NodeIndex = []string{"sidecar", "node"}, 1 }, true, "container node position", "container sidecar comes before node"},
		{"runtime's node not first", wiring.Wiring{HasNode: true, Containers: []string{"a", "node"}, NodeIndex: 1}, func(w *wiring.Wiring) {
			w.Containers, w.NodeIndex = []string{"a", "b", "node"}, 2
		}, false, "container node position", "not its first container either"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to := tc.from
			to.NodeSelector, to.NodeAffinity = maps.Clone(tc.from.NodeSelector), append([]corev1.NodeSelectorTerm(nil), tc.from.NodeAffinity...)
			tc.edit(&to)
			var hit *Judged
			for _, j := range Judge(tc.from, to, nil) {
				if j.Path == tc.path {
					hit = &j
				} else if j.LosesFabric() {
					t.Errorf("unexpected fatal finding %s: %s", j.Change, j.Reason)
				}
			}
			if hit == nil {
				t.Fatalf("no finding on %q", tc.path)
			}
			if hit.LosesFabric() != tc.fatal || !strings.Contains(hit.Reason, tc.contains) {
				t.Errorf("%s: fatal %v (%s), want fatal %v naming %q", hit.Change, hit.LosesFabric(), hit.Reason, tc.fatal, tc.contains)
			}
			if tc.fatal && !strings.Contains(hit.Fix, "spec") {
				t.Errorf("fix names no field: %q", hit.Fix)
			}
		})
	}
}

// A realized container without an image is refused by the API server: the
// node container's finding names spec.trainer.image and what the image
// must be built for; one a runtime patch added names the patch.
func TestJudgeImages(t *testing.T) {
	pod := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node"}, {Name: "sidecar"}, {Name: "other", Image: "x"}}}}
	got := JudgeImages(pod, "set spec.trainer.image to an image built for CUDA >= 13.0")
	if len(got) != 2 {
		t.Fatalf("JudgeImages = %+v, want two findings", got)
	}
	if !got[0].LosesFabric() || got[0].Path != "container node image" || !strings.Contains(got[0].Reason, "spec.trainer.image") || !strings.Contains(got[0].Fix, "CUDA >= 13.0") {
		t.Errorf("node: %+v", got[0])
	}
	if !got[1].LosesFabric() || got[1].Path != "container sidecar image" || !strings.Contains(got[1].Fix, "runtimePatches") {
		t.Errorf("sidecar: %+v", got[1])
	}
	if got := JudgeImages(&corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "x"}}}}, ""); len(got) != 0 {
		t.Errorf("an image set: %+v", got)
	}
}
