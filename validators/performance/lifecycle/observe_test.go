package lifecycle

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var trainerCRDs = []string{
	"trainjobs.trainer.kubeflow.org",
	"trainingruntimes.trainer.kubeflow.org",
	"clustertrainingruntimes.trainer.kubeflow.org",
	"jobsets.jobset.x-k8s.io",
}

func crd(name string, established bool) *apiextensionsv1.CustomResourceDefinition {
	status := apiextensionsv1.ConditionFalse
	if established {
		status = apiextensionsv1.ConditionTrue
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.Established, Status: status},
		}},
	}
}

func deployment(ns, name string, labels map[string]string, available int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Status:     appsv1.DeploymentStatus{AvailableReplicas: available},
	}
}

// The label sets of the trainer v2.2.0 kustomize manifests and of the Helm
// charts, as the manifests write them (see trainerParts).
var (
	trainerKustomize = map[string]string{"app.kubernetes.io/name": "trainer", "app.kubernetes.io/component": "manager", "app.kubernetes.io/part-of": "kubeflow"}
	trainerHelm      = map[string]string{"app.kubernetes.io/name": "kubeflow-trainer", "app.kubernetes.io/instance": "kubeflow-trainer", "app.kubernetes.io/component": "manager", "app.kubernetes.io/part-of": "kubeflow"}
	jobsetKustomize  = map[string]string{"control-plane": "controller-manager", "app.kubernetes.io/name": "jobset", "app.kubernetes.io/component": "manager", "app.kubernetes.io/part-of": "jobset"}
	jobsetHelm       = map[string]string{"app.kubernetes.io/name": "jobset", "app.kubernetes.io/instance": "jobset", "app.kubernetes.io/component": "controller"}
	// An unrelated kubebuilder controller: same control-plane label as
	// JobSet's, must not count as the JobSet controller.
	otherController = map[string]string{"control-plane": "controller-manager", "app.kubernetes.io/part-of": "kueue"}
)

func allCRDs() []runtime.Object {
	var out []runtime.Object
	for _, n := range trainerCRDs {
		out = append(out, crd(n, true))
	}
	return out
}

func cluster(crds []runtime.Object, deployments ...runtime.Object) KubeCluster {
	return KubeCluster{CRDs: apiextensionsfake.NewClientset(crds...), Kube: kubefake.NewClientset(deployments...)}
}

func TestObserve(t *testing.T) {
	terminating := crd("trainjobs.trainer.kubeflow.org", true)
	terminating.DeletionTimestamp = &metav1.Time{}
	terminating.Finalizers = []string{"customresourcecleanup.apiextensions.k8s.io"}
	withTerminating := append([]runtime.Object{terminating}, allCRDs()[1:]...)

	for _, tc := range []struct {
		name     string
		cluster  KubeCluster
		state    TrainerState
		findings []string // fragments that must appear among the findings
	}{
		{
			name:     "nothing installed",
			cluster:  cluster(nil, deployment("kueue-system", "kueue-controller-manager", otherController, 1)),
			state:    Missing,
			findings: []string{"missing: the TrainJob CRD (no CustomResourceDefinition trainjobs.trainer.kubeflow.org)", "missing: the JobSet controller (no Deployment labelled"},
		},
		{
			name: "trainer manifests, kustomize labels",
			cluster: cluster(allCRDs(),
				deployment("kubeflow-system", "kubeflow-trainer-controller-manager", trainerKustomize, 1),
				deployment("kubeflow-system", "jobset-controller-manager", jobsetKustomize, 1)),
			state:    Complete,
			findings: []string{"present: the Kubeflow Trainer controller, Deployment kubeflow-system/kubeflow-trainer-controller-manager", "present: the JobSet controller, Deployment kubeflow-system/jobset-controller-manager"},
		},
		{
			name: "Helm charts",
			cluster: cluster(allCRDs(),
				deployment("trainer", "kubeflow-trainer-controller-manager", trainerHelm, 2),
				deployment("trainer", "jobset-controller", jobsetHelm, 1)),
			state: Complete,
		},
		{
			name:     "CRDs only",
			cluster:  cluster(allCRDs()),
			state:    Partial,
			findings: []string{"present: the TrainJob CRD", "missing: the Kubeflow Trainer controller"},
		},
		{
			name:     "JobSet installed on its own",
			cluster:  cluster([]runtime.Object{crd("jobsets.jobset.x-k8s.io", true)}, deployment("jobset-system", "jobset-controller-manager", jobsetKustomize, 1)),
			state:    Partial,
			findings: []string{"missing: the TrainJob CRD", "present: the JobSet controller"},
		},
		{
			name: "controller without an available replica",
			cluster: cluster(allCRDs(),
				deployment("kubeflow-system", "kubeflow-trainer-controller-manager", trainerKustomize, 0),
				deployment("kubeflow-system", "jobset-controller-manager", jobsetKustomize, 1)),
			state:    Partial,
			findings: []string{"not ready: the Kubeflow Trainer controller, Deployment kubeflow-system/kubeflow-trainer-controller-manager: 0 of 1 replicas available"},
		},
		{
			name: "CRD being deleted",
			cluster: cluster(withTerminating,
				deployment("kubeflow-system", "kubeflow-trainer-controller-manager", trainerKustomize, 1),
				deployment("kubeflow-system", "jobset-controller-manager", jobsetKustomize, 1)),
			state:    Partial,
			findings: []string{"not ready: the TrainJob CRD, CustomResourceDefinition trainjobs.trainer.kubeflow.org: it is being deleted"},
		},
		{
			name: "CRD not established",
			cluster: cluster(append([]runtime.Object{crd("trainjobs.trainer.kubeflow.org", false)}, allCRDs()[1:]...),
				deployment("kubeflow-system", "kubeflow-trainer-controller-manager", trainerKustomize, 1),
				deployment("kubeflow-system", "jobset-controller-manager", jobsetKustomize, 1)),
			state:    Partial,
			findings: []string{"it is not Established"},
		},
		{
			name: "two JobSet controllers",
			cluster: cluster(allCRDs(),
				deployment("kubeflow-system", "kubeflow-trainer-controller-manager", trainerKustomize, 1),
				deployment("kubeflow-system", "jobset-controller-manager", jobsetKustomize, 1),
				deployment("jobset-system", "jobset-controller", jobsetHelm, 1)),
			state:    Partial,
			findings: []string{"the JobSet controller runs 2 times (Deployment kubeflow-system/jobset-controller-manager, Deployment jobset-system/jobset-controller)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, findings, err := Observe(context.Background(), tc.cluster)
			if err != nil {
				t.Fatal(err)
			}
			if state != tc.state {
				t.Errorf("state %s, want %s; findings:\n%s", state, tc.state, strings.Join(findings, "\n"))
			}
			if len(findings) != len(trainerParts) {
				t.Errorf("%d findings, want one per part (%d)", len(findings), len(trainerParts))
			}
			all := strings.Join(findings, "\n")
			for _, f := range tc.findings {
				if !strings.Contains(all, f) {
					t.Errorf("findings lack %q:\n%s", f, all)
				}
			}
		})
	}
}

// A cluster that cannot be read gives no state: a guessed "missing" would
// install over a trainer that is there.
func TestObserveReadErrors(t *testing.T) {
	forbidden := func(resource string) k8stesting.ReactionFunc {
		return func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC: access denied"))
		}
	}
	c := cluster(allCRDs())
	c.Kube.(*kubefake.Clientset).PrependReactor("list", "deployments", forbidden("deployments"))
	state, findings, err := Observe(context.Background(), c)
	if err == nil || state != "" || findings != nil {
		t.Fatalf("Observe = %q, %v, %v; want only an error", state, findings, err)
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "needs list on deployments cluster-wide") || !strings.Contains(err.Error(), "Kubeflow Trainer controller") {
		t.Errorf("error does not say what was looked for and which permission is needed: %v", err)
	}

	c = cluster(nil)
	c.CRDs.(*apiextensionsfake.Clientset).PrependReactor("get", "customresourcedefinitions", forbidden("customresourcedefinitions"))
	if _, _, err := Observe(context.Background(), c); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "needs get on customresourcedefinitions") {
		t.Errorf("CRD read error: %v", err)
	}
}

// flipping is a Cluster whose controllers become available after a number of
// reads of them, as after an install.
type flipping struct {
	KubeCluster
	reads, readyAfter int
}

func (f *flipping) DeploymentsByLabel(ctx context.Context, ns, sel string) ([]Object, error) {
	f.reads++
	ds, err := f.KubeCluster.DeploymentsByLabel(ctx, ns, sel)
	for i := range ds {
		if f.reads > f.readyAfter {
			ds[i].Ready, ds[i].Reason = true, ""
		}
	}
	return ds, err
}

func TestWaitComplete(t *testing.T) {
	installed := cluster(allCRDs(),
		deployment("kubeflow-system", "kubeflow-trainer-controller-manager", trainerKustomize, 0),
		deployment("kubeflow-system", "jobset-controller-manager", jobsetKustomize, 0))

	f := &flipping{KubeCluster: installed, readyAfter: 8}
	if err := WaitComplete(context.Background(), f, time.Millisecond); err != nil {
		t.Fatalf("WaitComplete = %v", err)
	}
	if f.reads <= 8 {
		t.Errorf("returned after %d reads, before the controllers were ready", f.reads)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := WaitComplete(ctx, installed, 5*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still not ready: the Kubeflow Trainer controller") || strings.Contains(err.Error(), "present: ") {
		t.Errorf("WaitComplete on a cluster that never gets ready = %v", err)
	}
}
