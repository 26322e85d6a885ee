package e2e

import (
	"os"
	"path/filepath"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/markdown"
	"github.com/tcpxogen/tcpxogen/validators/performance/podcheck"
	"github.com/tcpxogen/tcpxogen/validators/realize"
)

// nodeLaunch is what a running node container of a guide TrainJob gets: the
// torchrun process count the trainer injects and the GPUs it is given.
type nodeLaunch struct {
	// NProc is PET_NPROC_PER_NODE.
	NProc string
	// GPUs is the container's nvidia.com/gpu limit; "" when it has none.
	GPUs string
}

// guideLaunch is, per trainer version, what the guide's resourcesPerNode
// TrainJobs launch with, as that version's source says:
//
//   - PET_NPROC_PER_NODE, on both versions, from the torch plugin
//     (pkg/runtime/framework/plugins/torch/torch.go, EnforceMLPolicy):
//     numProcPerNode when the TrainJob sets it, else "auto"; "auto" becomes
//     the CPU count (the request, else the limit, at least 1) when the
//     TrainJob's *raw* resourcesPerNode names no GPU, whatever GPUs the
//     container ends up with (kubeflow/trainer PR #3974, open).
//   - The GPUs, from the build (pkg/runtime/core/trainingruntime.go):
//     v2.2.0 replaces the node container's resources with resourcesPerNode,
//     so an override without a GPU leaves none; v2.3.0 merges them key by
//     key (MergeResourceRequirements), so the runtime's 8 GPUs stay and the
//     CPU-sized count runs on them.
//
// The v2.3.0 column is what makes cpu-memory-only a pitfall there with the
// fabric intact: 200 processes on 8 GPUs.
var guideLaunch = map[string]map[string]nodeLaunch{
	"v2.2.0": {
		"cpu-memory-only":        {NProc: "200", GPUs: ""},
		"cpu-memory-and-gpus":    {NProc: "auto", GPUs: "8"},
		"cpu-sized-launch":       {NProc: "16", GPUs: ""},
		"cpu-sized-launch-fixed": {NProc: "8", GPUs: "8"},
	},
	"v2.3.0": {
		"cpu-memory-only":        {NProc: "200", GPUs: "8"},
		"cpu-memory-and-gpus":    {NProc: "auto", GPUs: "8"},
		"cpu-sized-launch":       {NProc: "16", GPUs: "8"},
		"cpu-sized-launch-fixed": {NProc: "8", GPUs: "8"},
	},
}

// checkGuideLaunch compares the running node pods of a guide TrainJob with
// guideLaunch for the linked trainer. TrainJobs the table does not name are
// left to the wiring and launch checks.
func checkGuideLaunch(t *testing.T, name string, pods []corev1.Pod) {
	t.Helper()
	rows, ok := guideLaunch[realize.TrainerVersion()]
	if !ok {
		t.Fatalf("guideLaunch has no column for the linked trainer %s: read its torch plugin and build, and add one", realize.TrainerVersion())
	}
	want, ok := rows[name]
	if !ok {
		return
	}
	seen := 0
	for _, p := range pods {
		if p.Labels[podcheck.ReplicatedJobLabel] != constants.Node {
			continue
		}
		for _, c := range p.Spec.Containers {
			if c.Name != constants.Node {
				continue
			}
			seen++
			got := nodeLaunch{}
			for _, e := range c.Env {
				if e.Name == constants.TorchEnvNumProcPerNode {
					got.NProc = e.Value
				}
			}
			if q, ok := c.Resources.Limits[corev1.ResourceName("nvidia.com/gpu")]; ok {
				got.GPUs = q.String()
			}
			if got != want {
				t.Errorf("pod %s on trainer %s: node container launches %+v, the trainer's source says %+v", p.Name, realize.TrainerVersion(), got, want)
			}
		}
	}
	if seen == 0 {
		t.Errorf("no running node container of %s to check the launch of", name)
	}
}

// TestGuideLaunchRows keeps guideLaunch honest: every TrainJob it names is
// one of the guide's, and every version's column names the same ones.
func TestGuideLaunchRows(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "tcpxo-workloads.md"))
	if err != nil {
		t.Fatal(err)
	}
	inGuide := map[string]bool{}
	for _, b := range markdown.YAMLBlocks(data) {
		for _, doc := range documents(b.Content) {
			if u, err := decode(doc); err == nil && u.GetKind() == trainer.TrainJobKind {
				inGuide[u.GetName()] = true
			}
		}
	}
	if _, ok := guideLaunch[realize.TrainerVersion()]; !ok {
		t.Errorf("no column for the linked trainer %s", realize.TrainerVersion())
	}
	for v, rows := range guideLaunch {
		for name := range rows {
			if !inGuide[name] {
				t.Errorf("guideLaunch[%s] names %s, which is not a TrainJob of the guide", v, name)
			}
			for w, other := range guideLaunch {
				if _, ok := other[name]; !ok {
					t.Errorf("guideLaunch[%s] names %s, guideLaunch[%s] does not", v, name, w)
				}
			}
		}
	}
}
