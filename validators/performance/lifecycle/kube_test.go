package lifecycle

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

var (
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	nsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	depGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// mapper knows the three kinds of manifests(); known=false leaves the
// Deployment out until Reset, as a discovery cache would before a CRD's
// kind appeared.
type mapper struct {
	*meta.DefaultRESTMapper
	resets int
	// learnAfter is the reset at which the Deployment kind appears.
	learnAfter int
}

func newMapper(knowDeployments bool) *mapper {
	m := &mapper{DefaultRESTMapper: meta.NewDefaultRESTMapper(nil)}
	m.Add(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	if knowDeployments {
		m.addDeployments()
	}
	return m
}

func (m *mapper) addDeployments() {
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
}

func (m *mapper) Reset() {
	m.resets++
	if m.resets >= m.learnAfter {
		m.addDeployments()
	}
}

func newDynamic() *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		crdGVR: "CustomResourceDefinitionList",
		nsGVR:  "NamespaceList",
		depGVR: "DeploymentList",
	})
}

// The real Applier carries a plan out against a (fake) API server: objects
// are created where their scope says, and exactly those are deleted.
func TestDynamicApplierRunsAPlan(t *testing.T) {
	client := newDynamic()
	a := &DynamicApplier{Client: client, Mapper: newMapper(true)}
	p := installPlan(t)
	ctx := context.Background()
	err := p.Run(ctx, a, func(ctx context.Context) error {
		dep, err := client.Resource(depGVR).Namespace("kubeflow-system").Get(ctx, "kubeflow-trainer-controller-manager", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if dep.GetLabels()[InstallIDLabel] != p.InstallID {
			t.Errorf("created Deployment not labelled with the install ID: %v", dep.GetLabels())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, act := range client.Actions() {
		if act.GetVerb() == "create" || act.GetVerb() == "delete" {
			verbs = append(verbs, act.GetVerb()+" "+act.GetResource().Resource+" "+act.GetNamespace())
		}
		if d, ok := act.(k8stesting.DeleteActionImpl); ok {
			if pp := d.DeleteOptions.PropagationPolicy; pp == nil || *pp != metav1.DeletePropagationForeground {
				t.Errorf("delete of %s without foreground propagation", d.Name)
			}
		}
	}
	want := "create customresourcedefinitions ,create namespaces ,create deployments kubeflow-system,delete deployments kubeflow-system,delete namespaces ,delete customresourcedefinitions "
	if got := strings.Join(verbs, ","); got != want {
		t.Errorf("actions\n%s\nwant\n%s", got, want)
	}
	if list, _ := client.Resource(crdGVR).List(ctx, metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("%d CRDs left after teardown", len(list.Items))
	}
}

// A pre-existing object is reported as such (and so kept by Run), and never
// deleted.
func TestDynamicApplierKeepsExisting(t *testing.T) {
	existing := object("v1", "Namespace", "", "kubeflow-system")
	existing.SetLabels(map[string]string{"owner": "platform-team"})
	client := newDynamic()
	if _, err := client.Resource(nsGVR).Create(context.Background(), existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := &DynamicApplier{Client: client, Mapper: newMapper(true)}
	if err := installPlan(t).Run(context.Background(), a, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	ns, err := client.Resource(nsGVR).Get(context.Background(), "kubeflow-system", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pre-existing namespace was deleted: %v", err)
	}
	if ns.GetLabels()["owner"] != "platform-team" || ns.GetLabels()[InstallIDLabel] != "" {
		t.Errorf("the pre-existing namespace was modified: %v", ns.GetLabels())
	}
}

// A kind the mapper learns only after the install created its CRD is
// resolved by resetting the mapper once.
func TestDynamicApplierResetsMapperOnUnknownKind(t *testing.T) {
	m := newMapper(false)
	a := &DynamicApplier{Client: newDynamic(), Mapper: m}
	if err := a.Apply(context.Background(), object("apps/v1", "Deployment", "kubeflow-system", "x")); err != nil {
		t.Fatal(err)
	}
	if m.resets != 1 {
		t.Errorf("mapper reset %d times, want 1", m.resets)
	}

	// A kind that takes a while to be served is retried within
	// DiscoveryTimeout, and not beyond it.
	slow := newMapper(false)
	slow.learnAfter = 2
	a = &DynamicApplier{Client: newDynamic(), Mapper: slow}
	if err := a.Apply(context.Background(), object("apps/v1", "Deployment", "kubeflow-system", "x")); !meta.IsNoMatchError(err) {
		t.Errorf("without a DiscoveryTimeout: %v; want the kind reported unknown after one reset", err)
	}
	a.DiscoveryTimeout = 10 * time.Second
	if err := a.Apply(context.Background(), object("apps/v1", "Deployment", "kubeflow-system", "x")); err != nil || slow.resets != 2 {
		t.Errorf("with a DiscoveryTimeout: %v after %d resets", err, slow.resets)
	}

	a.DiscoveryTimeout = 0
	unknown := object("example.com/v1", "Widget", "", "w")
	err := a.Apply(context.Background(), unknown)
	if !meta.IsNoMatchError(err) || !strings.Contains(err.Error(), "Widget w: the API server does not serve") {
		t.Errorf("unknown kind: %v", err)
	}
}

func TestDynamicApplierNeedsNamespace(t *testing.T) {
	a := &DynamicApplier{Client: newDynamic(), Mapper: newMapper(true)}
	err := a.Apply(context.Background(), object("apps/v1", "Deployment", "", "x"))
	if err == nil || !strings.Contains(err.Error(), "set metadata.namespace") {
		t.Errorf("namespaced object without namespace: %v", err)
	}
}

func TestDynamicApplierDelete(t *testing.T) {
	a := &DynamicApplier{Client: newDynamic(), Mapper: newMapper(true)}
	if err := a.Delete(context.Background(), object("v1", "Namespace", "", "gone")); err != nil {
		t.Errorf("deleting an object that is already gone: %v", err)
	}
	obj := object("v1", "Namespace", "", "ns")
	if err := a.Apply(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	err := a.Apply(context.Background(), object("v1", "Namespace", "", "ns"))
	if !errors.Is(err, ErrAlreadyExists) {
		t.Errorf("second create: %v; want ErrAlreadyExists", err)
	}
}

func TestDynamicApplierDeleteGuardsUID(t *testing.T) {
	client := newDynamic()
	a := &DynamicApplier{Client: client, Mapper: newMapper(true)}
	obj := object("v1", "Namespace", "", "ns")
	obj.SetUID("uid-created-by-us")
	if err := a.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	for _, act := range client.Actions() {
		if d, ok := act.(k8stesting.DeleteActionImpl); ok {
			if pc := d.DeleteOptions.Preconditions; pc == nil || pc.UID == nil || *pc.UID != "uid-created-by-us" {
				t.Errorf("delete without the UID precondition: %+v", d.DeleteOptions)
			}
		}
	}
}

var _ Applier = (*DynamicApplier)(nil)
var _ Cluster = KubeCluster{}

// lostReply makes the fake server store the namespace a create names but
// answer with a transport error, as a client timeout or a dropped
// connection does after the server committed the create.
func lostReply(client *dynamicfake.FakeDynamicClient, store bool) {
	client.PrependReactor("create", "namespaces", func(act k8stesting.Action) (bool, runtime.Object, error) {
		if store {
			obj := act.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
			obj.SetUID("uid-assigned-by-the-server")
			if err := client.Tracker().Create(nsGVR, obj, ""); err != nil {
				return true, nil, err
			}
		}
		return true, nil, errors.New("http2: client connection lost")
	})
}

func stamped(name, run string) *unstructured.Unstructured {
	o := object("v1", "Namespace", "", name)
	o.SetLabels(map[string]string{InstallIDLabel: run})
	return o
}

func TestDynamicApplierConfirmsALostCreate(t *testing.T) {
	t.Run("stored: counted as created, with the server's UID", func(t *testing.T) {
		client := newDynamic()
		lostReply(client, true)
		a := &DynamicApplier{Client: client, Mapper: newMapper(true), ConfirmTimeout: time.Second}
		obj := stamped("ns", "run-1")
		if err := a.Apply(context.Background(), obj); err != nil {
			t.Fatalf("Apply = %v; want the lost create confirmed", err)
		}
		if obj.GetUID() != "uid-assigned-by-the-server" {
			t.Errorf("UID %q: Delete would not guard the object it confirmed", obj.GetUID())
		}
	})
	t.Run("not stored: the transport error", func(t *testing.T) {
		client := newDynamic()
		lostReply(client, false)
		a := &DynamicApplier{Client: client, Mapper: newMapper(true), ConfirmTimeout: time.Second}
		err := a.Apply(context.Background(), stamped("ns", "run-1"))
		if err == nil || errors.Is(err, ErrUnconfirmed) || !strings.Contains(err.Error(), "connection lost") {
			t.Errorf("Apply = %v; want the create's own error (nothing was stored)", err)
		}
	})
	t.Run("someone else's object there: kept, not adopted", func(t *testing.T) {
		client := newDynamic()
		if err := client.Tracker().Create(nsGVR, stamped("ns", "another-run"), ""); err != nil {
			t.Fatal(err)
		}
		lostReply(client, false)
		a := &DynamicApplier{Client: client, Mapper: newMapper(true), ConfirmTimeout: time.Second}
		if err := a.Apply(context.Background(), stamped("ns", "run-1")); !errors.Is(err, ErrAlreadyExists) {
			t.Errorf("Apply = %v; want ErrAlreadyExists", err)
		}
	})
	t.Run("read-back fails too: unconfirmed", func(t *testing.T) {
		client := newDynamic()
		lostReply(client, true)
		client.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("dial tcp: i/o timeout")
		})
		a := &DynamicApplier{Client: client, Mapper: newMapper(true), ConfirmTimeout: time.Second}
		err := a.Apply(context.Background(), stamped("ns", "run-1"))
		if !errors.Is(err, ErrUnconfirmed) || !strings.Contains(err.Error(), "Namespace ns") {
			t.Errorf("Apply = %v; want ErrUnconfirmed naming the object", err)
		}
	})
	t.Run("a refusal is final: no read-back", func(t *testing.T) {
		client := newDynamic()
		client.PrependReactor("create", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "ns", errors.New("denied"))
		})
		a := &DynamicApplier{Client: client, Mapper: newMapper(true), ConfirmTimeout: time.Second}
		if err := a.Apply(context.Background(), stamped("ns", "run-1")); !apierrors.IsForbidden(err) {
			t.Errorf("Apply = %v; want the Forbidden itself", err)
		}
		for _, act := range client.Actions() {
			if act.GetVerb() == "get" {
				t.Errorf("a refused create was read back: %v", act)
			}
		}
	})
}

// Without a recorded UID (an unconfirmed create), Delete deletes only the
// object that carries the run's labels, by its UID.
func TestDynamicApplierDeletesAnUnconfirmedObjectOnlyIfItIsTheRuns(t *testing.T) {
	client := newDynamic()
	theirs := stamped("theirs", "another-run")
	theirs.SetUID("uid-theirs")
	ours := stamped("ours", "run-1")
	ours.SetUID("uid-ours")
	for _, o := range []*unstructured.Unstructured{theirs, ours} {
		if err := client.Tracker().Create(nsGVR, o, ""); err != nil {
			t.Fatal(err)
		}
	}
	a := &DynamicApplier{Client: client, Mapper: newMapper(true)}
	if err := a.Delete(context.Background(), stamped("theirs", "run-1")); err == nil || !strings.Contains(err.Error(), "left alone") {
		t.Errorf("Delete of another run's same-named object = %v; want it left alone", err)
	}
	if _, err := client.Tracker().Get(nsGVR, "", "theirs"); err != nil {
		t.Errorf("another run's object was deleted: %v", err)
	}
	if err := a.Delete(context.Background(), stamped("ours", "run-1")); err != nil {
		t.Fatalf("Delete of the run's own object: %v", err)
	}
	if _, err := client.Tracker().Get(nsGVR, "", "ours"); !apierrors.IsNotFound(err) {
		t.Errorf("the run's object is still there: %v", err)
	}
	for _, act := range client.Actions() {
		if d, ok := act.(k8stesting.DeleteActionImpl); ok {
			if pc := d.DeleteOptions.Preconditions; pc == nil || pc.UID == nil || *pc.UID != "uid-ours" {
				t.Errorf("deleted without the stored object's UID as precondition: %+v", d.DeleteOptions)
			}
		}
	}
}
