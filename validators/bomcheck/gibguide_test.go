package bomcheck

import (
	"testing"
)

// gibGuide is the gIB workload guide, one of DocFiles.
const gibGuide = "docs/gib-workloads.md"

// bom-check holds the gIB guide as it holds the TCPXO one: a hand-edited
// generated section fails the reproducibility check naming the page, and
// an image an example pulls is held to the BOM's pins, named by the page's
// line.
func TestScenarioGIBGuide(t *testing.T) {
	root := copyRepo(t)
	orig := read(t, root, gibGuide)

	edit(t, root, gibGuide, "| `NCCL_IB_TC` | `52` | **no** (enforced)", "| `NCCL_IB_TC` | `52` | yes")
	assertFails(t, check(t, root), "generated-output-reproducible", gibGuide)
	write(t, root, gibGuide, orig)

	// A namespaced runtime example whose node image is not pinned.
	write(t, root, gibGuide, orig+"\n```yaml\n"+`apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: torch-rdma-team-a
  namespace: team-a
spec:
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: registry.example.com/team-a/llama-train:v1-cuda13.0
`+"```\n")
	rep := check(t, root)
	assertFails(t, rep, "images-pinned-from-bom", gibGuide+":", "registry.example.com/team-a/llama-train:v1-cuda13.0", "not pinned by digest")

	write(t, root, gibGuide, orig)
	assertPasses(t, check(t, root))
}
