package validate

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tcpxogen/tcpxogen/validators/performance/lifecycle"
)

func object(apiVersion, kind, ns, name string, labels map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetNamespace(ns)
	o.SetName(name)
	o.SetLabels(labels)
	return o
}

// The record a second signal prints: what is still there, newest first,
// and one kubectl command per label the run stamped, which selects exactly
// those objects; deleted objects are gone from it.
func TestLedgerReport(t *testing.T) {
	var l ledger
	inst := map[string]string{lifecycle.InstallIDLabel: "abc123"}
	run := map[string]string{RunLabel: "f00d"}
	crd := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "trainjobs.trainer.kubeflow.org", inst)
	dep := object("apps/v1", "Deployment", "kubeflow-system", "ctl", inst)
	l.track(lifecycle.Event{Step: "created", Obj: crd})
	l.track(lifecycle.Event{Step: "created", Obj: dep})
	tr := object("trainer.kubeflow.org/v1alpha1", "TrainingRuntime", "bench", "nccl-tests-tcpxo-f00d", run)
	tj := object("trainer.kubeflow.org/v1alpha1", "TrainJob", "bench", "nccl-tests-tcpxo-f00d", run)
	l.add(tr)
	l.add(tj)
	l.add(object("v1", "ConfigMap", "bench", "gone", run))
	l.remove(object("v1", "ConfigMap", "bench", "gone", nil))

	var b bytes.Buffer
	l.report(&b)
	got := b.String()
	for _, want := range []string{
		"left on the cluster, not cleaned up: TrainJob bench/nccl-tests-tcpxo-f00d, TrainingRuntime bench/nccl-tests-tcpxo-f00d, Deployment kubeflow-system/ctl, CustomResourceDefinition trainjobs.trainer.kubeflow.org\n",
		"  kubectl delete trainjob.trainer.kubeflow.org,trainingruntime.trainer.kubeflow.org -n bench -l tcpxogen.dev/validation-run=f00d\n",
		"  kubectl delete deployment.apps,customresourcedefinition.apiextensions.k8s.io -n kubeflow-system -l tcpxogen.dev/install-id=abc123\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "gone") {
		t.Errorf("a deleted object is reported:\n%s", got)
	}

	for _, o := range []*unstructured.Unstructured{tj, tr} {
		l.remove(o)
	}
	l.track(lifecycle.Event{Step: "deleted", Obj: dep})
	l.track(lifecycle.Event{Step: "deleted", Obj: crd})
	b.Reset()
	l.report(&b)
	if !strings.Contains(b.String(), "nothing of this run is left") {
		t.Errorf("after the cleanup: %s", b.String())
	}
}
