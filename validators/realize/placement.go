package realize

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeflow/trainer/v2/pkg/constants"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
)

// Placement and container order are wiring: the runtime's nodeSelector
// and required node affinity keep its pods on the machines whose NICs the
// rest of the wiring names, and GKE gives a pod's RDMA device files only to
// its first non-init container. Neither loss is an error anywhere: the
// pods schedule elsewhere, or start without the devices, and NCCL runs
// over TCP.

// placementPatchPath is where a TrainJob changes a pod's placement: its
// runtime patches (podTemplateOverrides on the trainer versions that have
// them).
const placementPatchPath = "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.spec"

// placementFix is what a TrainJob may do with the runtime's placement.
const placementFix = "keep the runtime's nodeSelector entries and required node affinity terms: a runtime patch (" + placementPatchPath +
	") may add a nodeSelector entry to pick a node pool, never change or drop one; and a patched affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution replaces the runtime's terms whole, so leave it out (use nodeSelector)"

// placementLoss is why a runtime's placement element lost or changed loses
// the fabric.
const placementLoss = "the pods may land on a machine of another fabric, or one without the fabric's NICs, and run over TCP"

// isPlacement reports whether c is a change to the pod's nodeSelector or
// required node affinity.
func isPlacement(c wiring.Change) bool {
	switch c.What {
	case wiring.NodeSelectorLost, wiring.NodeSelectorChanged, wiring.NodeSelectorAdded,
		wiring.NodeAffinityLost, wiring.NodeAffinityChanged, wiring.NodeAffinityAdded:
		return true
	}
	return false
}

// judgePlacement judges a change to the placement: what the runtime
// selects on, lost or changed, loses the fabric; what only narrows it (an
// added selector entry, a requirement added to a term the runtime has, a
// term where the runtime has none) keeps it. An added term where the
// runtime has terms widens it: terms are alternatives, and the pods may
// then land on any node the added one matches.
func judgePlacement(c wiring.Change, from wiring.Wiring) Judged {
	j := Judged{Change: c}
	wholeTerm := strings.Count(c.Path, " ") == 2 // "nodeAffinity term N"
	switch {
	case c.What == wiring.NodeSelectorAdded:
		j.Severity, j.Reason = fabric.Note, "narrows the runtime's placement (a TrainJob may pick a node pool)"
	case c.What == wiring.NodeAffinityAdded && !wholeTerm:
		j.Severity, j.Reason = fabric.Note, "a requirement added to a term of the runtime's required node affinity narrows the runtime's placement"
	case c.What == wiring.NodeAffinityAdded && len(from.NodeAffinity) == 0:
		j.Severity, j.Reason = fabric.Note, "required node affinity where the runtime has none narrows the runtime's placement (its nodeSelector still applies)"
	case c.What == wiring.NodeAffinityAdded:
		j.Severity = fabric.Fatal
		j.Reason = fmt.Sprintf("a term added to the runtime's required node affinity widens its placement (terms are alternatives: a node matching this one is enough): %s", placementLoss)
		j.Fix = placementFix
	case c.What == wiring.NodeSelectorLost || c.What == wiring.NodeSelectorChanged:
		j.Severity = fabric.Fatal
		j.Reason = fmt.Sprintf("the runtime's nodeSelector entry %s=%s keeps its pods on the fabric's machines; without it %s", strings.TrimPrefix(c.Path, "nodeSelector "), c.From, placementLoss)
		j.Fix = placementFix
	default:
		j.Severity = fabric.Fatal
		j.Reason = fmt.Sprintf("the runtime's required node affinity (%s: %s) keeps its pods on the fabric's machines; without it %s", c.Path, c.From, placementLoss)
		j.Fix = placementFix
	}
	return j
}

// judgeOrder judges the node container's move: a runtime whose node is
// first loses the fabric when another container comes before it.
func judgeOrder(c wiring.Change, from, to wiring.Wiring) Judged {
	j := Judged{Change: c}
	switch {
	case !from.NodeFirst():
		j.Severity, j.Reason = fabric.Note, "the runtime's own node container is not its first container either"
	case to.NodeFirst():
		j.Severity, j.Reason = fabric.Note, "node is still the pod's first container"
	default:
		first := ""
		if len(to.Containers) > 0 {
			first = to.Containers[0]
		}
		j.Severity = fabric.Fatal
		j.Reason = fmt.Sprintf("container %s comes before node: GKE gives a pod's RDMA device files only to its first non-init container, so node would train without them and NCCL would not use the fabric's NICs (the runtime puts node first)", first)
		j.Fix = "keep node the pod's first container: a runtime patch's containers list names node first (" + placementPatchPath + ".containers), and any other container goes after it"
	}
	return j
}

// ImageMissing is the What of a finding that a container of the realized
// pod has no image.
const ImageMissing = "image missing"

// JudgeImages finds the containers of the realized pod that have no image:
// the API server refuses such a pod, so nothing would run. The node
// container's fix is spec.trainer.image (nodeFix, when given, says more:
// what the image must be built for); any other container got there through
// a runtime patch, which cannot give it one.
func JudgeImages(pod *corev1.PodTemplateSpec, nodeFix string) []Judged {
	if pod == nil {
		return nil
	}
	var out []Judged
	check := func(kind string, c *corev1.Container) {
		if c.Image != "" {
			return
		}
		j := Judged{Change: wiring.Change{What: ImageMissing, Path: kind + " " + c.Name + " image"}, Severity: fabric.Fatal}
		j.Reason = "the realized " + kind + " " + c.Name + " has no image: the API server refuses the pod, and nothing runs"
		if kind == "container" && c.Name == constants.Node {
			j.Reason = "the realized node container has no image (neither spec.trainer.image nor the runtime sets one): the API server refuses the pod, and nothing runs"
			j.Fix = "set spec.trainer.image"
			if nodeFix != "" {
				j.Fix = nodeFix
			}
		} else {
			j.Fix = "remove the " + c.Name + " entry from " + placementPatchPath + "." + kind + "s: a runtime patch cannot give a container an image"
		}
		out = append(out, j)
	}
	for i := range pod.Spec.InitContainers {
		check("initContainer", &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check("container", &pod.Spec.Containers[i])
	}
	return out
}
