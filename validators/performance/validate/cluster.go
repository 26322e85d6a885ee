package validate

import (
	"context"
	"errors"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/tcpxogen/tcpxogen/internal/access"
	kubeconfigpkg "github.com/tcpxogen/tcpxogen/internal/kubeconfig"
	"github.com/tcpxogen/tcpxogen/validators/performance/lifecycle"
)

// Resources of the trainer kinds validate reads and writes. The dynamic
// client is used rather than a typed trainer clientset so that a cluster
// without the trainer CRDs answers "not found" instead of failing discovery.
var (
	clusterTrainingRuntimes = trainer.GroupVersion.WithResource("clustertrainingruntimes")
	trainJobs               = trainer.GroupVersion.WithResource("trainjobs")

	// For messages about missing permissions.
	nodesResource      = corev1.SchemeGroupVersion.WithResource("nodes")
	namespacesResource = corev1.SchemeGroupVersion.WithResource("namespaces")
	podsResource       = corev1.SchemeGroupVersion.WithResource("pods")
	crdsResource       = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
)

// Clients is everything validate talks to a cluster through. Tests compose
// it from an in-process API server (custom resources) and client-go's fake
// clientset (core and apps objects), which is why it is not built from one
// rest.Config here.
type Clients struct {
	// Kube reads Nodes, Namespaces, Deployments and pod logs.
	Kube kubernetes.Interface
	// CRDs reads CustomResourceDefinitions, for the trainer's state.
	CRDs apiextensionsclient.Interface
	// Dynamic reads and watches trainer custom resources.
	Dynamic dynamic.Interface
	// Applier creates and deletes objects in a live run; a dry run never
	// uses it.
	Applier lifecycle.Applier
	// Host names the API server in the plan.
	Host string
	// Guard holds every request to validate's declared permissions and
	// explains what the API server refused (package access); nil for
	// clients that bypass HTTP, as the tests' fakes do.
	Guard *access.Guard
}

// cluster is the view lifecycle.Observe needs.
func (c *Clients) cluster() lifecycle.Cluster {
	return lifecycle.KubeCluster{CRDs: c.CRDs, Kube: c.Kube}
}

// Connect loads the client configuration the way kubectl does: the
// --kubeconfig file if given, else $KUBECONFIG or ~/.kube/config, else the
// pod's service account when running inside a cluster. Configuration
// problems are bad input (exit 2): only the user can fix them.
func Connect(kubeconfig, kubeContext string) (*Clients, error) {
	cfg, err := kubeconfigpkg.Load(kubeconfig, kubeContext, "tcpxogen-validate", "validate")
	if _, bad := errors.AsType[*kubeconfigpkg.InputError](err); bad {
		return nil, &InputError{err}
	}
	if err != nil {
		return nil, err
	}
	// Every client below goes through the guard; Run binds it to
	// --namespace before the first request that needs a permission.
	base, err := access.Validate.Bind("")
	if err != nil {
		return nil, err
	}
	guard := access.NewGuard(base)
	guard.Wrap(cfg)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the Kubernetes client for %s: %w", cfg.Host, err)
	}
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the apiextensions client for %s: %w", cfg.Host, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client for %s: %w", cfg.Host, err)
	}
	applier, err := lifecycle.NewDynamicApplier(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Kube: kube, CRDs: crds, Dynamic: dyn, Applier: applier, Host: cfg.Host, Guard: guard}, nil
}

// reachable makes one cheap request, so that an unreachable or
// unauthenticated API server is reported as that, up front, rather than as a
// failure to read the first CRD.
func reachable(c *Clients) error {
	if _, err := c.Kube.Discovery().ServerVersion(); err != nil {
		return fmt.Errorf("cannot reach the API server at %s: %w; check the kubeconfig context (kubectl --context ... version) and your credentials", c.Host, err)
	}
	return nil
}

// deployedRuntime returns the deployed shipped runtime, or nil when there is
// none. A cluster without the ClusterTrainingRuntime CRD answers not found
// as well, which is the same finding: nothing is deployed.
func deployedRuntime(ctx context.Context, c *Clients, name string) (*trainer.ClusterTrainingRuntime, error) {
	u, err := c.Dynamic.Resource(clusterTrainingRuntimes).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("reading ClusterTrainingRuntime %s: %w; the validator needs get on clustertrainingruntimes.trainer.kubeflow.org", name, err)
	case err != nil:
		return nil, fmt.Errorf("reading ClusterTrainingRuntime %s: %w", name, err)
	}
	rt := &trainer.ClusterTrainingRuntime{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rt); err != nil {
		return nil, fmt.Errorf("the deployed ClusterTrainingRuntime %s does not decode as the trainer %s type: %w", name, trainer.GroupVersion, err)
	}
	return rt, nil
}

// readError adds the permission a forbidden read needs.
func readError(what string, gvr schema.GroupVersionResource, verb string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("reading %s: %w; the validator needs %s on %s", what, err, verb, gvr.GroupResource())
	}
	return fmt.Errorf("reading %s: %w", what, err)
}
