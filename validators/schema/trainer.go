package schema

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/webhooks"

	"github.com/tcpxogen/tcpxogen/validators/linkedtrainer"
)

const (
	trainerGroup             = "trainer.kubeflow.org"
	trainJobWebhookUnchecked = "trainer TrainJob admission webhook: it validates a TrainJob against its referenced runtime through the trainer runtime framework; realization runs that check"
)

// NewTrainer returns a Validator for the Kubeflow Trainer CRDs of the trainer module linked into
// this binary (see TrainerCRDFiles).
func NewTrainer() (*Validator, error) {
	files, err := TrainerCRDFiles()
	if err != nil {
		return nil, err
	}
	return New(files...)
}

// TrainerCRDFiles returns the CRD manifests of the trainer version linked into this binary,
// embedded at build time (see package linkedtrainer): they always match the webhook code and Go
// types the validator runs, and no command needs a Go module cache to read them.
func TrainerCRDFiles() ([][]byte, error) { return linkedtrainer.CRDs() }

// admissionCheck runs one validating webhook's create check on an unstructured object.
type admissionCheck func(ctx context.Context, u map[string]any) (admission.Warnings, error)

// admissionChecks are the trainer webhooks that can run without a cluster. They apply to these
// kinds whichever constructor loaded the CRDs, since they are what the linked trainer enforces.
var admissionChecks = map[k8sschema.GroupVersionKind]admissionCheck{
	trainer.GroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind): typedCheck((&webhooks.ClusterTrainingRuntimeValidator{}).ValidateCreate),
	trainer.GroupVersion.WithKind(trainer.TrainingRuntimeKind):        typedCheck((&webhooks.TrainingRuntimeValidator{}).ValidateCreate),
}

func typedCheck[T any, PT interface {
	*T
	runtime.Object
}](validate func(context.Context, PT) (admission.Warnings, error)) admissionCheck {
	return func(ctx context.Context, u map[string]any) (admission.Warnings, error) {
		obj := PT(new(T))
		if err := toTyped(u, obj); err != nil {
			return nil, fmt.Errorf("the object does not decode as the trainer Go type the webhook and controller read: %w", err)
		}
		return validate(ctx, obj)
	}
}

// runAdmission runs the registered webhook for gvk, if any, and turns its warnings and errors
// into findings. Warnings count: a runtime shipped with a deprecation warning is not clean.
func runAdmission(gvk k8sschema.GroupVersionKind, u map[string]any) []Finding {
	check, ok := admissionChecks[gvk]
	if !ok {
		return nil
	}
	// The webhooks log through the context's logger; a discard logger keeps controller-runtime
	// from complaining that no logger was ever set.
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())
	warnings, err := check(ctx, u)
	var findings []Finding
	for _, w := range warnings {
		findings = append(findings, Finding{Kind: FindingWebhook, Detail: "warning: " + w})
	}
	return append(findings, webhookErrorFindings(err)...)
}

func webhookErrorFindings(err error) []Finding {
	if err == nil {
		return nil
	}
	var errs []error
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		errs = agg.Errors()
	} else {
		errs = []error{err}
	}
	findings := make([]Finding, 0, len(errs))
	for _, e := range errs {
		var fe *field.Error
		if errors.As(e, &fe) {
			findings = append(findings, fieldErrorFinding(FindingWebhook, fe))
			continue
		}
		findings = append(findings, Finding{Kind: FindingWebhook, Detail: e.Error()})
	}
	return findings
}
