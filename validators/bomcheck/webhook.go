package bomcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/tcpxogen/tcpxogen/runtimes"
)

// checkWebhookValidation refuses a shipped runtime, a ClusterTrainingRuntime
// or TrainingRuntime in a golden or a guide example, that carries
// trainer.kubeflow.org/webhook-validation: disabled: from trainer v2.3.0 on,
// the API server then never sends it to the trainer's validating webhook
// (runtimes.WebhookValidationLabel says where that is read).
//
// Only the builders (runtimes/torch.go, runtimes/benchmark/derive.go) or a
// hand edit of a golden can put the label there, and both show in the
// goldens this reads. A reviewed override cannot: bom/overrides.yaml
// entries have only a name, an action, a value and the installers they are
// for, decoded strictly (bom.ParseOverrides refuses any other key), and
// they change only the node container's env (Overrides.Apply), never an
// object's metadata.
func checkWebhookValidation(_ context.Context, t *Tree) Result {
	files := []string{runtimes.GoldenRuntime}
	if err, failed := t.ManifestErrs[runtimes.GoldenRuntime]; failed {
		return *need(files, err)
	}
	var bad, badFiles []string
	n := 0
	for _, m := range t.Manifests {
		for _, o := range m.Objects {
			if k := o.GetKind(); k != trainer.ClusterTrainingRuntimeKind && k != trainer.TrainingRuntimeKind {
				continue
			}
			n++
			if !runtimes.BypassesWebhook(o.GetLabels()) {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s %s in %s", o.GetKind(), qualifiedName(o.GetNamespace(), o.GetName()), m.Path))
			if !slices.Contains(badFiles, m.Path) {
				badFiles = append(badFiles, m.Path)
			}
		}
	}
	if len(bad) > 0 {
		return fail(badFiles,
			"drop the label where the runtime is built (runtimes/torch.go, runtimes/benchmark/derive.go) and "+regenerate+"; a runtime tcpxogen ships is always validated by the webhook",
			"%s carr%s %s: %s: %s",
			strings.Join(bad, ", "), map[bool]string{true: "ies", false: "y"}[len(bad) == 1],
			runtimes.WebhookValidationLabel, runtimes.WebhookValidationDisabled, runtimes.WebhookBypass)
	}
	return pass("none of the %d shipped runtimes carries %s: %s", n, runtimes.WebhookValidationLabel, runtimes.WebhookValidationDisabled)
}

func qualifiedName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
