//go:build trainer_v2_3_0

// The control plane of trainer v2.3.0 (trainer-v2.3.0.mod): Kubernetes
// 1.36, JobSet v0.12, controller-runtime v0.24. Built with -tags
// trainer_v2_3_0 and -modfile=trainer-v2.3.0.mod together (make
// e2e-v2.3.0); trainer_v2_2_0.go is its twin for go.mod.

package harness

import (
	"context"

	configapi "github.com/kubeflow/trainer/v2/pkg/apis/config/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/config"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	jobcontroller "k8s.io/kubernetes/pkg/controller/job"
	ctrl "sigs.k8s.io/controller-runtime"
)

// BuiltForTrainer is the trainer version this build of the harness drives;
// Start refuses a binary that links another one.
const BuiltForTrainer = "v2.3.0"

// modFile is the e2e module's modfile that links BuiltForTrainer, relative
// to e2e/ ("" is go.mod): the go command the harness runs must read the
// same one, or it finds another version's manifests.
const modFile = "trainer-v2.3.0.mod"

// newJobController passes no Workload and PodGroup informers
// (scheduling.k8s.io/v1alpha2): kubernetes 1.36's job controller needs them
// only with the alpha WorkloadWithJob feature gate, off by default
// (pkg/controller/job/job_controller.go, NewController), and this API server
// does not serve that alpha group.
func newJobController(ctx context.Context, factory informers.SharedInformerFactory, kube kubernetes.Interface) (*jobcontroller.Controller, error) {
	return jobcontroller.NewController(ctx, kube, factory.Core().V1().Pods(), factory.Batch().V1().Jobs(), nil, nil)
}

// loadTrainerConfig is the trainer's default configuration, as its
// cmd/trainer-controller-manager loads it without a config file (v2.3.0
// dropped the enable-http2 argument; TLS settings moved into the
// configuration).
func loadTrainerConfig(scheme *apiruntime.Scheme) (configapi.Configuration, error) {
	_, cfg, err := config.Load(scheme, "")
	return cfg, err
}

// jobSetRecorder is the event recorder JobSet v0.12's reconcilers take
// (its main.go: mgr.GetEventRecorder), a k8s.io/client-go/tools/events
// (events.k8s.io) one.
func jobSetRecorder(mgr ctrl.Manager, name string) events.EventRecorder {
	return mgr.GetEventRecorder(name)
}
