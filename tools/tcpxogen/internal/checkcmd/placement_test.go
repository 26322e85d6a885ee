package checkcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// placementJob is a TrainJob of RUNTIME with IMAGE and the node pod's
// runtime patch SPEC (the pod spec's fields, indented under it).
const placementJob = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: placed
  namespace: team-a
spec:
  runtimeRef:
    name: RUNTIME
  trainer:
IMAGE    command: ["torchrun", "train.py"]
  runtimePatches:
  - manager: team-a.example.com/placement
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: node
            template:
              spec:
                template:
                  spec:
SPEC`

const placementImage = "    image: registry.example.com/team-a/llama-train:v1-cuda13.0\n"

// check trainjob judges where a TrainJob's pods land and what comes first
// in them, on both fabrics: a runtime patch that moves a gIB TrainJob to
// another machine type, drops TCPXO's accelerator selector or puts a
// container before node fails; one that adds a pool label passes; a gIB
// TrainJob without an image fails, naming spec.trainer.image.
func TestCheckTrainJobPlacement(t *testing.T) {
	const (
		ultra = "torch-distributed-rdma-a3-ultragpu-8g"
		tcpxo = "torch-distributed-tcpxo"
	)
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		runtime, image, spec string
		code                 int
		want                 []string
	}{
		"gIB moved to A3 Mega": {ultra, placementImage, `                    affinity:
                      nodeAffinity:
                        requiredDuringSchedulingIgnoredDuringExecution:
                          nodeSelectorTerms:
                          - matchExpressions:
                            - {key: node.kubernetes.io/instance-type, operator: In, values: [a3-megagpu-8g]}
`, cli.ExitFailure, []string{
			"FAIL  node affinity changed: nodeAffinity term 0 node.kubernetes.io/instance-type (In a3-ultragpu-8g -> In a3-megagpu-8g)",
			"FAIL  node affinity lost: nodeAffinity term 0 cloud.google.com/gke-accelerator",
			"another fabric", "fix: keep the runtime's nodeSelector entries", "would lose the GPUDirect-RDMA (NCCL/gIB) fabric"}},
		"gIB pool label added": {ultra, placementImage, "                    nodeSelector: {cloud.google.com/gke-nodepool: team-a}\n",
			cli.ExitOK, []string{"ok    node selector added: nodeSelector cloud.google.com/gke-nodepool (<none> -> team-a): narrows", "0 lose the fabric"}},
		"gIB sidecar first": {ultra, placementImage, "                    containers: [{name: sidecar}, {name: node}]\n", cli.ExitFailure, []string{
			"FAIL  node container moved: container node position (node -> sidecar,node): container sidecar comes before node: GKE gives a pod's RDMA device files only to its first non-init container",
			"FAIL  image missing: container sidecar image"}},
		"gIB without image": {ultra, "", "                    nodeSelector: {cloud.google.com/gke-nodepool: team-a}\n", cli.ExitFailure, []string{
			"FAIL  image missing: container node image: the realized node container has no image (neither spec.trainer.image nor the runtime sets one): the API server refuses the pod",
			"fix: set spec.trainer.image to an image built for CUDA >= 13.0", "the runtime " + ultra + " ships none",
			"has 1 container(s) without an image"}},
		"TCPXO accelerator selector dropped": {tcpxo, "", "                    nodeSelector: {$patch: replace, cloud.google.com/gke-nodepool: team-a}\n", cli.ExitFailure, []string{
			"FAIL  node selector lost: nodeSelector cloud.google.com/gke-accelerator (nvidia-h100-mega-80gb -> <none>)",
			"would lose the GPUDirect-TCPXO fabric"}},
		"TCPXO accelerator selector changed": {tcpxo, "", "                    nodeSelector: {cloud.google.com/gke-accelerator: nvidia-h200-141gb}\n", cli.ExitFailure, []string{
			"FAIL  node selector changed: nodeSelector cloud.google.com/gke-accelerator (nvidia-h100-mega-80gb -> nvidia-h200-141gb)"}},
		"TCPXO sidecar first": {tcpxo, "", "                    containers: [{name: sidecar}, {name: node}]\n", cli.ExitFailure, []string{
			"FAIL  node container moved: container node position (node -> sidecar,node)"}},
		"TCPXO pool label added": {tcpxo, "", "                    nodeSelector: {cloud.google.com/gke-nodepool: team-a}\n", cli.ExitOK, []string{"0 lose the fabric"}},
	} {
		t.Run(name, func(t *testing.T) {
			doc := strings.NewReplacer("RUNTIME", tc.runtime, "IMAGE", tc.image, "SPEC", tc.spec).Replace(placementJob)
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := runCheck(t, "trainjob", "-v", path)
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
