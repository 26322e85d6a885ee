package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager is the field manager the validator's writes are recorded
// under, so `kubectl get --show-managed-fields` tells its objects apart.
const FieldManager = "tcpxogen-validator"

// KubeCluster is the Cluster of a real API server.
type KubeCluster struct {
	CRDs apiextensionsclient.Interface
	Kube kubernetes.Interface
}

// CRD implements Cluster. A CRD is ready when it is Established (its API is
// served) and not being deleted: a terminating CRD is still there, so it
// must not read as missing (the policy would install over it), yet the
// trainer cannot use it.
func (k KubeCluster) CRD(ctx context.Context, name string) (*Object, error) {
	crd, err := k.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, readError("get", "customresourcedefinitions", "CustomResourceDefinition "+name, err)
	}
	o := &Object{Kind: "CustomResourceDefinition", Name: crd.Name}
	switch established := crdCondition(crd, apiextensionsv1.Established); {
	case crd.DeletionTimestamp != nil:
		o.Reason = "it is being deleted"
	case established == nil || established.Status != apiextensionsv1.ConditionTrue:
		o.Reason = "it is not Established, so its API is not served yet"
		if established != nil && established.Message != "" {
			o.Reason += " (" + established.Message + ")"
		}
	default:
		o.Ready = true
	}
	return o, nil
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == t {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

// DeploymentsByLabel implements Cluster. A Deployment is ready when at least
// one replica is available and it is not being deleted: a controller with no
// available replica reconciles nothing, so a benchmark through it would hang
// rather than fail.
func (k KubeCluster) DeploymentsByLabel(ctx context.Context, namespace, selector string) ([]Object, error) {
	list, err := k.Kube.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, readError("list", "deployments", "Deployments labelled "+selector, err)
	}
	out := make([]Object, 0, len(list.Items))
	for _, d := range list.Items {
		o := Object{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		switch {
		case d.DeletionTimestamp != nil:
			o.Reason = "it is being deleted"
		case want == 0:
			o.Reason = "it is scaled to zero replicas"
		case d.Status.AvailableReplicas < 1:
			o.Reason = fmt.Sprintf("0 of %d replicas available; check its pods (kubectl -n %s describe deployment %s)", want, d.Namespace, d.Name)
		default:
			o.Ready = true
		}
		out = append(out, o)
	}
	return out, nil
}

// readError wraps a failed read, adding the permission it needs when the
// API server refused it.
func readError(verb, resource, what string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("reading %s: %w; the validator needs %s on %s cluster-wide to tell whether Kubeflow Trainer is installed", what, err, verb, resource)
	}
	return fmt.Errorf("reading %s: %w", what, err)
}

// DynamicApplier is the Applier of a real API server. It creates objects
// (never server-side apply, which would silently take over an object that
// already exists) and deletes them with foreground propagation, guarded by
// the UID it created them with.
type DynamicApplier struct {
	Client dynamic.Interface
	// Mapper resolves kinds to resources. If it is a
	// meta.ResettableRESTMapper it is reset when a kind is unknown: the
	// install creates CRDs whose kinds the mapper has not seen.
	Mapper meta.RESTMapper
	// DiscoveryTimeout is how long an unknown kind is retried (resetting
	// the mapper each time) before it is an error: a CRD this install just
	// created is served, and listed in discovery, only once it is
	// Established, which takes a moment. Zero tries once after one reset.
	DiscoveryTimeout time.Duration
	// ConfirmTimeout bounds the read-back of a create whose answer was
	// lost; zero means DefaultConfirmTimeout.
	ConfirmTimeout time.Duration
}

// discoveryRetryInterval paces the retries of an unknown kind; each retry
// re-reads the API server's discovery documents.
const discoveryRetryInterval = 500 * time.Millisecond

// NewDynamicApplier builds a DynamicApplier whose mapper reads the API
// server's discovery information, cached and reset on a miss.
func NewDynamicApplier(cfg *rest.Config) (*DynamicApplier, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))
	return &DynamicApplier{Client: client, Mapper: mapper, DiscoveryTimeout: 30 * time.Second}, nil
}

// Apply implements Applier.
func (a *DynamicApplier) Apply(ctx context.Context, obj *unstructured.Unstructured) error {
	ri, err := a.resource(ctx, obj)
	if err != nil {
		return err
	}
	created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%s: %w", describe(obj), ErrAlreadyExists)
	}
	if err != nil && !definitive(err) {
		return a.confirm(ctx, ri, obj, err)
	}
	if err != nil {
		return err
	}
	obj.SetUID(created.GetUID())
	return nil
}

// definitive tells a create the server refused (a 4xx Status: it stored
// nothing) from one whose outcome is unknown: the reply was lost (a
// client-side timeout, a broken connection) or the server failed or timed
// out after it may have stored the object. Only the latter needs confirming.
func definitive(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code >= 400 && code < 500 && !apierrors.IsTimeout(err)
}

// DefaultConfirmTimeout bounds, when DynamicApplier.ConfirmTimeout is zero,
// how long Apply reads back a create whose reply was lost. It runs on a
// context without the caller's cancellation: the reply is typically lost
// because that context expired, and the object may exist all the same.
const DefaultConfirmTimeout = 15 * time.Second

// confirm settles a create whose outcome is unknown by reading the object
// back: there and carrying every label Apply sent (the caller stamps a
// run-unique one), it is this run's, so its UID is recorded and the create
// counts as done; there without them, it is someone else's (ErrAlreadyExists);
// absent, the create did not happen and cause is the answer. When even the
// read fails, the error wraps ErrUnconfirmed: the caller must treat the
// object as possibly created and delete it in its cleanup, which Delete does
// only after the same ownership check.
func (a *DynamicApplier) confirm(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, cause error) error {
	timeout := a.ConfirmTimeout
	if timeout <= 0 {
		timeout = DefaultConfirmTimeout
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var got *unstructured.Unstructured
	var gerr error
	_ = wait.PollUntilContextCancel(cctx, discoveryRetryInterval, true, func(ctx context.Context) (bool, error) {
		got, gerr = ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		return gerr == nil || apierrors.IsNotFound(gerr) || definitive(gerr), nil
	})
	switch {
	case gerr == nil && owns(obj, got):
		obj.SetUID(got.GetUID())
		return nil
	case gerr == nil:
		return fmt.Errorf("%s: its create got no answer (%v) and the object there does not carry this run's labels: %w", describe(obj), cause, ErrAlreadyExists)
	case apierrors.IsNotFound(gerr):
		return cause
	}
	return fmt.Errorf("%s: its create got no answer (%w) and reading it back failed (%v), so it may exist: %w", describe(obj), cause, gerr, ErrUnconfirmed)
}

// owns tells whether the stored object is the one sent: every label sent is
// on it with the same value. Callers stamp a run-unique label (the install
// ID, the validation run), so a same-named object of anyone else fails.
func owns(sent, stored *unstructured.Unstructured) bool {
	have := stored.GetLabels()
	for k, v := range sent.GetLabels() {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Delete implements Applier. The UID precondition makes sure the object
// deleted is the one Apply created, not one recreated under the same name by
// someone else in between.
func (a *DynamicApplier) Delete(ctx context.Context, obj *unstructured.Unstructured) error {
	ri, err := a.resource(ctx, obj)
	if err != nil {
		return err
	}
	uid := obj.GetUID()
	if uid == "" {
		// No UID was recorded (a create whose answer was lost): delete what
		// is there only if it carries the labels this run stamped, and then
		// that very object.
		stored, gerr := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(gerr):
			return nil
		case gerr != nil:
			return fmt.Errorf("%s: reading it back before deleting it: %w", describe(obj), gerr)
		case !owns(obj, stored):
			return fmt.Errorf("%s does not carry the labels this run stamped, so it is not the validator's and is left alone", describe(obj))
		}
		uid = stored.GetUID()
	}
	opts := metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationForeground)}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err = ri.Delete(ctx, obj.GetName(), opts)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err) && opts.Preconditions != nil:
		return fmt.Errorf("%s was replaced by another object of the same name since the validator created it, so it is left alone: %w", describe(obj), err)
	}
	return err
}

// resource resolves obj's kind to a resource client, namespaced as the
// mapping requires.
func (a *DynamicApplier) resource(ctx context.Context, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if r, ok := a.Mapper.(meta.ResettableRESTMapper); ok && meta.IsNoMatchError(err) {
		// Polled until served or DiscoveryTimeout; a timeout leaves the
		// last no-match error to report below.
		_ = wait.PollUntilContextTimeout(ctx, discoveryRetryInterval, a.DiscoveryTimeout, true, func(context.Context) (bool, error) {
			r.Reset()
			m, err = a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			return !meta.IsNoMatchError(err), nil
		})
		if meta.IsNoMatchError(err) && ctx.Err() != nil {
			return nil, fmt.Errorf("%s: waiting for the API server to serve %s: %w", describe(obj), gvk, context.Cause(ctx))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: the API server does not serve %s: %w", describe(obj), gvk, err)
	}
	return a.namespaced(m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, obj)
}

func (a *DynamicApplier) namespaced(gvr schema.GroupVersionResource, namespaced bool, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	if !namespaced {
		return a.Client.Resource(gvr), nil
	}
	if obj.GetNamespace() == "" {
		return nil, errors.New(describe(obj) + " is namespaced but names no namespace: set metadata.namespace in the manifest (the validator never guesses one)")
	}
	return a.Client.Resource(gvr).Namespace(obj.GetNamespace()), nil
}
