package runtimes

// WebhookValidationLabel, set to WebhookValidationDisabled on a
// ClusterTrainingRuntime or TrainingRuntime, makes the API server skip
// Kubeflow Trainer's validating webhook for it, from trainer v2.3.0 on
// (kubeflow/trainer PR #3683). The label is not read by the trainer's Go
// code but by the API server, through the objectSelector of both runtime
// webhooks in the ValidatingWebhookConfiguration the trainer installs
// (github.com/kubeflow/trainer/v2@v2.3.0):
//
//   - manifests/base/webhook/patch_validating.yaml:27-42 (kustomize: the
//     objectSelector `trainer.kubeflow.org/webhook-validation NotIn
//     [disabled]` added to webhooks 0 and 1, the ClusterTrainingRuntime and
//     TrainingRuntime validators);
//   - charts/kubeflow-trainer/templates/webhook/validating_webhook_configuration.yaml:36-41
//     and 64-69 (Helm: the same selector on both);
//   - docs/operator-guides/runtime.md:131-150 ("Skipping Webhook
//     Validation": meant only for the community's built-in runtimes,
//     validated ahead of time; the Helm chart's runtimes.commonLabels and
//     manifests/overlays/runtimes/kustomization.yaml:20-24 put it on those).
//
// Trainer v2.2.0's webhook configuration has no such selector: there the
// label does nothing.
const (
	WebhookValidationLabel    = "trainer.kubeflow.org/webhook-validation"
	WebhookValidationDisabled = "disabled"
)

// WebhookBypass says what the label bypasses, for messages: the runtime
// webhooks' whole validation (pkg/webhooks/trainingruntime_webhook.go:66,
// validateReplicatedJobs: a replicated job labelled as the trainer or an
// initializer runs one replica and has its required container, `node` for
// the trainer, the container the torch plugin injects the rendezvous env and
// resources into).
const WebhookBypass = "from Kubeflow Trainer v2.3.0 on, the label makes the API server skip the trainer's validating webhook for the runtime " +
	"(kubeflow/trainer PR #3683, the webhook configuration's objectSelector), so nothing checks on create or update that its trainer " +
	"replicated job runs one replica and has the node container the torch plugin injects the rendezvous env and GPUs into; " +
	"Kubeflow reserves the label for its own built-in runtimes, validated ahead of time"

// BypassesWebhook tells whether labels opt a runtime out of the trainer's
// validating webhook.
func BypassesWebhook(labels map[string]string) bool {
	return labels[WebhookValidationLabel] == WebhookValidationDisabled
}
