//go:build apiserver

// This test runs the real Applier and Cluster against a real
// apiextensions-apiserver (in-process, on an embedded etcd), with the real
// Kubeflow Trainer v2.2.0 CRDs and one of its ClusterTrainingRuntimes: the
// install creates CRDs and then a custom resource of a kind those CRDs just
// introduced, which fakes cannot show. The server serves no built-in kinds,
// so the controller Deployments come from client-go's fake clientset.
//
//	go test -tags apiserver ./validators/performance/lifecycle/
//
// Not with -trimpath: the server fixtures find their certificates through
// runtime.Caller.
package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apiextensions-apiserver/test/integration/fixtures"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/client-go/dynamic"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

func startAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	etcdConfig := testserver.NewTestConfig(t)
	testserver.RunEtcd(t, etcdConfig)
	// The fixtures read the etcd address from the environment only.
	t.Setenv("KUBE_INTEGRATION_ETCD_URL", etcdConfig.ListenClientUrls[0].String())
	tearDown, cfg, _, err := fixtures.StartDefaultServer(t)
	if err != nil {
		t.Fatalf("starting apiextensions-apiserver: %v", err)
	}
	t.Cleanup(tearDown) // registered after etcd's cleanup, so it runs first
	return cfg
}

// trainerObjects reads the pinned trainer's CRDs and its torch-distributed
// ClusterTrainingRuntime from the module cache, plus a minimal JobSet CRD.
func trainerObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command("go", "list", "-mod=readonly", "-m", "-f", "{{.Dir}}", "github.com/kubeflow/trainer/v2").Output()
	if err != nil {
		t.Fatalf("locating the trainer module: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	var objs []*unstructured.Unstructured
	for _, f := range []string{
		"manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml",
		"manifests/base/crds/trainer.kubeflow.org_trainingruntimes.yaml",
		"manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml",
	} {
		objs = append(objs, decodeAll(t, filepath.Join(dir, f))...)
	}
	objs = append(objs, decodeString(t, jobsetCRD)...)
	// A custom resource of a kind the CRDs above introduce: creating it
	// right after them needs the Applier to wait for discovery.
	objs = append(objs, decodeAll(t, filepath.Join(dir, "manifests/base/runtimes/torch_distributed.yaml"))...)
	return objs
}

const jobsetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: jobsets.jobset.x-k8s.io}
spec:
  group: jobset.x-k8s.io
  names: {kind: JobSet, listKind: JobSetList, plural: jobsets, singular: jobset}
  scope: Namespaced
  versions:
    - name: v1alpha2
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

func decodeAll(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeString(t, string(data))
}

func decodeString(t *testing.T, s string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(s)), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

var ctrGVR = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"}

// crdMapper resolves kinds from the server's CRDs. The test server is an
// apiextensions-apiserver alone, which serves no discovery root (/api and
// /apis answer 404), so the discovery-backed mapper of NewDynamicApplier
// cannot run against it; this one stands in, reporting a kind as unknown
// until its CRD is Established, as discovery does, so the Applier's retry
// of unknown kinds is exercised for real.
type crdMapper struct {
	meta.RESTMapper
	client apiextensionsclient.Interface
	resets int
}

func newCRDMapper(client apiextensionsclient.Interface) *crdMapper {
	static := meta.NewDefaultRESTMapper(nil)
	static.Add(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, meta.RESTScopeRoot)
	return &crdMapper{RESTMapper: static, client: client}
}

func (m *crdMapper) Reset() { m.resets++ }

func (m *crdMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if mapping, err := m.RESTMapper.RESTMapping(gk, versions...); err == nil {
		return mapping, nil
	}
	list, err := m.client.ApiextensionsV1().CustomResourceDefinitions().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, c := range list.Items {
		if c.Spec.Group != gk.Group || c.Spec.Names.Kind != gk.Kind || crdCondition(&c, apiextensionsv1.Established) == nil ||
			crdCondition(&c, apiextensionsv1.Established).Status != apiextensionsv1.ConditionTrue {
			continue
		}
		scope := meta.RESTScopeRoot
		if c.Spec.Scope == apiextensionsv1.NamespaceScoped {
			scope = meta.RESTScopeNamespace
		}
		return &meta.RESTMapping{
			Resource:         schema.GroupVersionResource{Group: gk.Group, Version: versions[0], Resource: c.Spec.Names.Plural},
			GroupVersionKind: gk.WithVersion(versions[0]),
			Scope:            scope,
		}, nil
	}
	return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
}

func newApplier(t *testing.T, cfg *rest.Config, crds apiextensionsclient.Interface) (*DynamicApplier, *crdMapper) {
	t.Helper()
	m := newCRDMapper(crds)
	return &DynamicApplier{Client: dynamic.NewForConfigOrDie(cfg), Mapper: m, DiscoveryTimeout: 30 * time.Second}, m
}

func TestInstallAndTearDownOnAPIServer(t *testing.T) {
	cfg := startAPIServer(t)
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	a, mapper := newApplier(t, cfg, crds)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Before: nothing of the trainer.
	state, findings, err := Observe(ctx, KubeCluster{CRDs: crds, Kube: kubefake.NewClientset()})
	if err != nil || state != Missing {
		t.Fatalf("Observe before install = %s, %v (%v)", state, err, findings)
	}
	d := Decide(false, state)
	p, err := NewPlan(d, func() ([]*unstructured.Unstructured, error) { return trainerObjects(t), nil })
	if err != nil {
		t.Fatal(err)
	}
	// The controllers the server cannot run are faked as ready, so that
	// WaitComplete waits on the real CRDs only.
	afterInstall := KubeCluster{CRDs: crds, Kube: kubefake.NewClientset(
		deployment("kubeflow-system", "kubeflow-trainer-controller-manager", trainerKustomize, 1),
		deployment("kubeflow-system", "jobset-controller-manager", jobsetKustomize, 1))}
	p.WaitReady = func(ctx context.Context) error { return WaitComplete(ctx, afterInstall, 100*time.Millisecond) }

	var uids []string
	err = p.Run(ctx, a, func(ctx context.Context) error {
		ctr, err := dyn.Resource(ctrGVR).Get(ctx, "torch-distributed", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ctr.GetLabels()[InstallIDLabel] != p.InstallID {
			t.Errorf("ClusterTrainingRuntime not labelled with the install ID: %v", ctr.GetLabels())
		}
		list, err := crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{LabelSelector: InstallIDLabel + "=" + p.InstallID})
		if err != nil {
			return err
		}
		for _, c := range list.Items {
			uids = append(uids, string(c.UID))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if len(uids) != 4 {
		t.Errorf("%d labelled CRDs during the benchmark, want 4", len(uids))
	}
	if mapper.resets == 0 {
		t.Error("the ClusterTrainingRuntime was created without waiting for its kind to be served; the test no longer covers the retry")
	}

	// After: every CRD it created is being deleted. They stay Terminating
	// on this server, whose CRD cleanup does not complete without the rest
	// of a control plane; on a cluster they go. (That the deletes ask for
	// foreground propagation is checked on the request, in kube_test.go:
	// this server runs no garbage collector and ignores it.)
	terminating(ctx, t, crds, nil)
	state, findings, err = Observe(ctx, KubeCluster{CRDs: crds, Kube: kubefake.NewClientset()})
	if err != nil || state != Partial || !strings.Contains(strings.Join(findings, "\n"), "it is being deleted") {
		t.Errorf("Observe after teardown = %s, %v (%v); want a partial trainer whose CRDs are being deleted", state, err, findings)
	}
}

// terminating asserts that every CRD on the server is being deleted, except
// those named in keep, which must not be.
func terminating(ctx context.Context, t *testing.T, crds apiextensionsclient.Interface, keep map[string]bool) {
	t.Helper()
	list, err := crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatal("no CRDs on the server")
	}
	for _, c := range list.Items {
		if deleting := c.DeletionTimestamp != nil; deleting == keep[c.Name] {
			t.Errorf("CRD %s: being deleted %v, want %v", c.Name, deleting, !keep[c.Name])
		}
	}
}

// A run interrupted mid-benchmark on a real server still removes everything
// it installed, and only that: a CRD that was there before survives.
func TestInterruptedRunOnAPIServer(t *testing.T) {
	cfg := startAPIServer(t)
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := newApplier(t, cfg, crds)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Someone else's JobSet CRD, already there: part of the install list,
	// so Apply meets it; it must be kept, not adopted.
	existing := decodeString(t, jobsetCRD)[0]
	if err := a.Apply(ctx, existing); err != nil {
		t.Fatal(err)
	}

	p, err := NewPlan(Decide(false, Missing), func() ([]*unstructured.Unstructured, error) { return trainerObjects(t), nil })
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	p.Events = func(e Event) {
		if e.Step == "kept" {
			kept = append(kept, e.Object)
		}
	}
	runCtx, interrupt := context.WithCancelCause(ctx)
	stop := errors.New("interrupted by the user")
	err = p.Run(runCtx, a, func(ctx context.Context) error {
		interrupt(stop)
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Run = %v", err)
	}
	if len(kept) != 1 || kept[0] != "CustomResourceDefinition jobsets.jobset.x-k8s.io" {
		t.Errorf("kept %v", kept)
	}
	terminating(ctx, t, crds, map[string]bool{"jobsets.jobset.x-k8s.io": true})
	got, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "jobsets.jobset.x-k8s.io", metav1.GetOptions{})
	if err != nil || got.Labels[InstallIDLabel] != "" {
		t.Errorf("the pre-existing JobSet CRD was deleted or adopted: %v, labels %v", err, got.GetLabels())
	}
}

// dropReplies loses the answer to every create the server carries out while
// drop is set: the request reaches the server and is committed, and the
// client sees a broken connection, as under load when the run's timeout
// fires first (e2e/README.md, the notrainer install row).
type dropReplies struct {
	next http.RoundTripper
	drop atomic.Bool
}

func (d *dropReplies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || !d.drop.Load() {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, errors.New("read: connection reset by peer")
}

// A create whose answer is lost on a real server still ends up in the
// teardown: the Applier reads the object back, sees the install's label and
// records its UID, so the plan deletes it like any object it created.
func TestLostCreateAnswerOnAPIServer(t *testing.T) {
	cfg := startAPIServer(t)
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lossy := rest.CopyConfig(cfg)
	var drop *dropReplies
	lossy.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		drop = &dropReplies{next: rt}
		return drop
	})
	a, _ := newApplier(t, lossy, crds)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := NewPlan(Decide(false, Missing), func() ([]*unstructured.Unstructured, error) { return trainerObjects(t), nil })
	if err != nil {
		t.Fatal(err)
	}
	drop.drop.Store(true)
	err = p.Run(ctx, a, func(ctx context.Context) error {
		drop.drop.Store(false)
		list, err := crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{LabelSelector: InstallIDLabel + "=" + p.InstallID})
		if err != nil {
			return err
		}
		if len(list.Items) != 4 {
			t.Errorf("%d CRDs of the install during the benchmark, want 4", len(list.Items))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Run = %v; want every lost create confirmed", err)
	}
	terminating(ctx, t, crds, nil)
}
