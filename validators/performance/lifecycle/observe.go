package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Object is one object Observe looked for and found.
type Object struct {
	Kind      string // "CustomResourceDefinition", "Deployment"
	Namespace string // empty for cluster-scoped objects
	Name      string
	// Ready: a CRD is Established and not being deleted; a Deployment has an
	// available replica and is not being deleted.
	Ready bool
	// Reason says why the object is not ready; empty when Ready.
	Reason string
}

func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Cluster is the narrow read-only view of a cluster Observe needs. KubeCluster
// implements it over client-go; tests use fake clientsets behind it.
type Cluster interface {
	// CRD returns the named CustomResourceDefinition, or nil when there is
	// none.
	CRD(ctx context.Context, name string) (*Object, error)
	// DeploymentsByLabel lists the Deployments in namespace ("" for all
	// namespaces) that match a label selector.
	DeploymentsByLabel(ctx context.Context, namespace, selector string) ([]Object, error)
}

// part is one thing a working Kubeflow Trainer needs: a CRD by name, or a
// controller Deployment found by any of its known label selectors.
type part struct {
	what string
	crd  string
	// selectors are alternatives: the same controller is labelled differently
	// by the kustomize manifests and by the Helm chart, and may run in any
	// namespace.
	selectors []string
}

// trainerParts are the parts of a Kubeflow Trainer v2.2.0 installation,
// taken from its release manifests (github.com/kubeflow/trainer/v2@v2.2.0):
//
//   - manifests/base/crds: the three trainer.kubeflow.org CRDs;
//   - manifests/base/manager/manager.yaml: Deployment
//     kubeflow-trainer-controller-manager labelled app.kubernetes.io/name=trainer,
//     app.kubernetes.io/component=manager, app.kubernetes.io/part-of=kubeflow
//     (the Helm chart, charts/kubeflow-trainer, labels it
//     app.kubernetes.io/name=kubeflow-trainer and the same component);
//   - manifests/third-party/jobset: JobSet v0.11's release manifests, whose
//     Deployment jobset-controller-manager carries
//     control-plane=controller-manager and app.kubernetes.io/part-of=jobset
//     (the JobSet Helm chart labels it app.kubernetes.io/name=jobset,
//     app.kubernetes.io/component=controller), and the JobSet CRD. The
//     trainer runs every TrainJob as a JobSet, so a trainer without a
//     working JobSet controller is not a working trainer.
//
// The selectors are deliberately two labels each: a name alone could match an
// unrelated app, and the two label sets of one controller never overlap.
var trainerParts = []part{
	{what: "the TrainJob CRD", crd: "trainjobs.trainer.kubeflow.org"},
	{what: "the TrainingRuntime CRD", crd: "trainingruntimes.trainer.kubeflow.org"},
	{what: "the ClusterTrainingRuntime CRD", crd: "clustertrainingruntimes.trainer.kubeflow.org"},
	{what: "the Kubeflow Trainer controller", selectors: []string{
		"app.kubernetes.io/name=trainer,app.kubernetes.io/component=manager",
		"app.kubernetes.io/name=kubeflow-trainer,app.kubernetes.io/component=manager",
	}},
	{what: "the JobSet CRD", crd: "jobsets.jobset.x-k8s.io"},
	{what: "the JobSet controller", selectors: []string{
		"app.kubernetes.io/part-of=jobset,control-plane=controller-manager",
		"app.kubernetes.io/name=jobset,app.kubernetes.io/component=controller",
	}},
}

// Observe reports the trainer's state on the cluster: Complete when every
// part is present and ready, Missing when none is present at all, Partial
// otherwise. The findings say, part by part, what was found, what is not ready
// and what is missing, for the explanation a user reads. An error means the
// cluster could not be read; no state is returned then, because a guess could
// lead to installing over a trainer that is there.
func Observe(ctx context.Context, c Cluster) (TrainerState, []string, error) {
	var findings []string
	present, ready := 0, 0
	for _, p := range trainerParts {
		found, err := p.observe(ctx, c)
		if err != nil {
			return "", nil, err
		}
		switch {
		case len(found) == 0:
			findings = append(findings, "missing: "+p.what+p.lookedFor())
		case len(found) > 1:
			present++
			// Two controllers of one kind both reconcile (and both serve
			// webhooks for) the same objects; the result is not a trainer
			// the benchmark can trust.
			findings = append(findings, fmt.Sprintf("not ready: %s runs %d times (%s); two controllers fight over the same objects, remove all but one",
				p.what, len(found), joinObjects(found)))
		case !found[0].Ready:
			present++
			findings = append(findings, fmt.Sprintf("not ready: %s, %s: %s", p.what, found[0], found[0].Reason))
		default:
			present++
			ready++
			findings = append(findings, fmt.Sprintf("present: %s, %s", p.what, found[0]))
		}
	}
	switch {
	case ready == len(trainerParts):
		return Complete, findings, nil
	case present == 0:
		return Missing, findings, nil
	}
	return Partial, findings, nil
}

func (p part) observe(ctx context.Context, c Cluster) ([]Object, error) {
	if p.crd != "" {
		o, err := c.CRD(ctx, p.crd)
		if err != nil {
			return nil, fmt.Errorf("looking for %s: %w", p.what, err)
		}
		if o == nil {
			return nil, nil
		}
		return []Object{*o}, nil
	}
	var found []Object
	for _, sel := range p.selectors {
		ds, err := c.DeploymentsByLabel(ctx, "", sel)
		if err != nil {
			return nil, fmt.Errorf("looking for %s (Deployments labelled %s): %w", p.what, sel, err)
		}
		for _, d := range ds {
			// One Deployment may carry both label sets (a user relabelling
			// it); it is still one controller.
			if !slices.ContainsFunc(found, func(f Object) bool { return f.Namespace == d.Namespace && f.Name == d.Name }) {
				found = append(found, d)
			}
		}
	}
	return found, nil
}

func (p part) lookedFor() string {
	if p.crd != "" {
		return " (no CustomResourceDefinition " + p.crd + ")"
	}
	return " (no Deployment labelled " + strings.Join(p.selectors, " or ") + " in any namespace)"
}

func joinObjects(os []Object) string {
	s := make([]string, len(os))
	for i, o := range os {
		s[i] = o.String()
	}
	return strings.Join(s, ", ")
}

// WaitComplete polls Observe every interval until the trainer is Complete,
// for use between installing it and running the benchmark (Plan.WaitReady):
// created CRDs take a moment to be served and the controllers to become
// available, and the trainer's admission webhooks reject TrainJobs until its
// controller is up. It gives up when ctx ends, with the last findings, and
// at once on a read error.
func WaitComplete(ctx context.Context, c Cluster, interval time.Duration) error {
	var last []string
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		state, findings, err := Observe(ctx, c)
		if err != nil {
			return false, err
		}
		last = findings
		return state == Complete, nil
	})
	if err == nil {
		return nil
	}
	var notReady []string
	for _, f := range last {
		if !strings.HasPrefix(f, "present: ") {
			notReady = append(notReady, f)
		}
	}
	if len(notReady) == 0 {
		return fmt.Errorf("waiting for Kubeflow Trainer to become ready: %w", err)
	}
	return fmt.Errorf("waiting for Kubeflow Trainer to become ready: %w; still %s", err, strings.Join(notReady, "; "))
}
