//go:build !trainer_v2_3_0

// The control plane of the trainer go.mod pins: Kubernetes 1.35, JobSet
// v0.11, controller-runtime v0.23. Its twin, trainer_v2_3_0.go, is built
// with -tags trainer_v2_3_0 and -modfile=trainer-v2.3.0.mod together (make
// e2e-v2.3.0): every trainer version shares one module path, so the modfile
// picks the version and the tag picks the code for the APIs that differ.
// Only those calls live here; everything else in the harness is shared.

package harness

import (
	"context"

	configapi "github.com/kubeflow/trainer/v2/pkg/apis/config/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/config"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	jobcontroller "k8s.io/kubernetes/pkg/controller/job"
	ctrl "sigs.k8s.io/controller-runtime"
)

// BuiltForTrainer is the trainer version this build of the harness drives;
// Start refuses a binary that links another one.
const BuiltForTrainer = "v2.2.0"

// modFile is the e2e module's modfile that links BuiltForTrainer, relative
// to e2e/ ("" is go.mod): the go command the harness runs must read the
// same one, or it finds another version's manifests.
const modFile = ""

func newJobController(ctx context.Context, factory informers.SharedInformerFactory, kube kubernetes.Interface) (*jobcontroller.Controller, error) {
	return jobcontroller.NewController(ctx, factory.Core().V1().Pods(), factory.Batch().V1().Jobs(), kube)
}

// loadTrainerConfig is the trainer's default configuration, as its
// cmd/trainer-controller-manager loads it without a config file (HTTP/2
// off, the flag's default).
func loadTrainerConfig(scheme *apiruntime.Scheme) (configapi.Configuration, error) {
	_, cfg, err := config.Load(scheme, "", false)
	return cfg, err
}

// jobSetRecorder is the event recorder JobSet v0.11's reconcilers take
// (its main.go: mgr.GetEventRecorderFor), controller-runtime's core/v1 one.
func jobSetRecorder(mgr ctrl.Manager, name string) record.EventRecorder {
	return mgr.GetEventRecorderFor(name)
}
