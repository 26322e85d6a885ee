package bomcheck

import (
	"testing"

	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
)

const webhookCheck = "runtimes-keep-webhook-validation"

// A golden runtime labelled to skip the trainer's validating webhook fails
// by name: the runtime, the file, the label, what it bypasses and the fix.
func TestWebhookValidationDisabledFails(t *testing.T) {
	for _, c := range []struct{ rel, label, object string }{
		{runtimes.GoldenRuntime, "trainer.kubeflow.org/framework: torch\n", "ClusterTrainingRuntime torch-distributed-tcpxo"},
		{benchmark.GoldenPath, "trainer.kubeflow.org/framework: mpi\n", "TrainingRuntime tcpxo-validation/nccl-tests-tcpxo"},
	} {
		t.Run(c.rel, func(t *testing.T) {
			root := copyRepo(t)
			edit(t, root, c.rel, c.label, c.label+"    trainer.kubeflow.org/webhook-validation: disabled\n")
			assertFails(t, check(t, root), webhookCheck, c.object, c.rel,
				"trainer.kubeflow.org/webhook-validation: disabled", "validating webhook", "PR #3683", "node container",
				"drop the label", "go generate")
		})
	}
}

// Only the value the webhook configuration's selector excludes bypasses it.
func TestWebhookValidationOtherValuePasses(t *testing.T) {
	root := copyRepo(t)
	edit(t, root, runtimes.GoldenRuntime, "trainer.kubeflow.org/framework: torch\n",
		"trainer.kubeflow.org/framework: torch\n    trainer.kubeflow.org/webhook-validation: enabled\n")
	assertCheckPasses(t, check(t, root), webhookCheck, "none of the")
}
