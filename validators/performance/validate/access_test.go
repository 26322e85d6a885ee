package validate

import (
	"errors"
	"slices"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tcpxogen/tcpxogen/internal/access"
	"github.com/tcpxogen/tcpxogen/validators/performance/lifecycle"
)

// requestOf is a fake client's recorded action as the authorizer would see
// the request; ok is false for discovery (the server version), which every
// authenticated user may read.
func requestOf(a k8stesting.Action) (access.Request, bool) {
	gvr := a.GetResource()
	if gvr.Group == "" && gvr.Resource == "version" {
		return access.Request{}, false
	}
	r := access.Request{Verb: a.GetVerb(), Group: gvr.Group, Resource: gvr.Resource, Subresource: a.GetSubresource(), Namespace: a.GetNamespace()}
	switch a := a.(type) {
	case k8stesting.GetAction:
		r.Name = a.GetName()
	case k8stesting.DeleteAction:
		r.Name = a.GetName()
	}
	return r, true
}

// checkRequests checks every request of the fakes against b, and returns the rules
// requests.
func checkRequests(t *testing.T, f *fakeCluster, b access.Binding) []access.Request {
	t.Helper()
	var all []access.Request
	for _, actions := range [][]k8stesting.Action{f.kube.Actions(), f.crds.Actions(), f.dyn.Actions()} {
		for _, a := range actions {
			req, ok := requestOf(a)
			if !ok {
				continue
			}
			if err := b.Check(req); err != nil {
				t.Error(err)
			}
			all = append(all, req)
		}
	}
	return all
}

// TestEveryRequestIsDeclared runs validate on fakes (a dry run, a live run
// and the install row's dry run) and holds every request it made to its
// declared list bound to --namespace: a request outside it is a bug the
// guard refuses on a real cluster (internal/access). Conversely every base
// rule is needed by some request, so the role asks for no more than the
// runs use.
func TestEveryRequestIsDeclared(t *testing.T) {
	base, err := access.Validate.Bind("default")
	if err != nil {
		t.Fatal(err)
	}
	var reqs []access.Request

	dry := completeCluster(t, nil)
	if code, stdout, stderr := dryRun(t, dry.connect, declared); code != exitOK {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	reqs = append(reqs, checkRequests(t, dry, base)...)

	live := completeCluster(t, nil)
	a := &fakeApplier{f: live}
	connect := func(string, string) (*Clients, error) {
		c, _ := live.connect("", "")
		c.Applier = a
		return c, nil
	}
	validate(t, connect, "--recipe", recipePath(declared), "--benchmark-image", pinnedImage, "--out", t.TempDir(), "--timeout", "1m")
	reqs = append(reqs, checkRequests(t, live, base)...)
	if len(a.steps) == 0 {
		t.Fatal("the live run created nothing; the test no longer covers its writes")
	}

	kube := append(gpuNodes(t, undeclared, 2), namespace("default"))
	install := newFakeCluster(t, kube, nil, nil)
	if code, stdout, stderr := dryRun(t, install.connect, undeclared); code != exitOK {
		t.Fatalf("install row dry run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	reqs = append(reqs, checkRequests(t, install, base)...)

	// gIB: a dry run reads the other fabric's runtime, installer pods and
	// networks; the install row applies its runtime (TestGIBLiveRunPasses
	// holds the live run's requests).
	gibDry := gibCluster(t, a4, nil)
	// Managed DRANET's DeviceClass naming a (made-up) driver that publishes
	// nothing on the pool: its ResourceSlices are read too.
	dc := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: fabric.DRANETDeviceClass}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "mrdma.example.com"`}}}}}
	if err := gibDry.kube.Tracker().Add(dc); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := validate(t, gibDry.connect, "--fabric", "gib", "--recipe", recipePath(gibRecipe), "--dry-run"); code != exitOK {
		t.Fatalf("gIB dry run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	reqs = append(reqs, checkRequests(t, gibDry, base)...)
	undeclaredGIB := writeFile(t, "gib-undeclared.yaml", strings.Replace(readFile(t, recipePath(gibRecipe)), "  - name: kubeflow-trainer\n    version: v2.2.0\n", "", 1))
	gibInstall := newFakeCluster(t, append(gibNodes(t, gibRecipe, a4, 2), namespace("default")), nil, nil)
	if code, stdout, stderr := validate(t, gibInstall.connect, "--fabric", "gib", "--recipe", undeclaredGIB, "--dry-run"); code != exitOK || !strings.Contains(stdout, "ClusterTrainingRuntime torch-distributed-rdma-a4-highgpu-8g: to be applied") {
		t.Fatalf("gIB install row dry run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	reqs = append(reqs, checkRequests(t, gibInstall, base)...)

	for _, r := range base.List.Rules {
		one, _ := access.List{Command: "validate", Rules: []access.Rule{r}}.Bind("default")
		if !slices.ContainsFunc(reqs, one.Allows) {
			t.Errorf("rule %q (%s) is declared but no request of the runs needed it", r.Permission(), r.For)
		}
	}
}

// The install-trainer row covers every object of the pinned trainer's
// rendered install, and the shipped runtime the install row applies; and
// each of its rules is needed by one of them.
func TestInstallRowCoversThePinnedInstall(t *testing.T) {
	objs, err := renderPinnedTrainer(inputs(t).BOM)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := lifecycle.NewPlan(lifecycle.Decide(false, lifecycle.Missing), func() ([]*unstructured.Unstructured, error) { return objs, nil })
	if err != nil {
		t.Fatal(err)
	}
	rt, err := toUnstructured(shippedFor(t, undeclared))
	if err != nil {
		t.Fatal(err)
	}
	rt.SetAPIVersion("trainer.kubeflow.org/v1alpha1")
	rt.SetKind("ClusterTrainingRuntime")
	// A gIB run's install row applies its machine type's runtime.
	gibRT, err := toUnstructured(gibRuntime(t, gibRecipe, a4))
	if err != nil {
		t.Fatal(err)
	}
	gibRT.SetAPIVersion("trainer.kubeflow.org/v1alpha1")
	gibRT.SetKind("ClusterTrainingRuntime")
	all := append(plan.Install, rt, gibRT)
	b, err := access.Validate.Bind("default", access.InstallTrainer)
	if err != nil {
		t.Fatal(err)
	}
	if err := installCovered(b, all); err != nil {
		t.Error(err)
	}
	row, _ := access.Validate.Row(access.InstallTrainer)
	for _, r := range row.Rules {
		if !slices.ContainsFunc(all, func(o *unstructured.Unstructured) bool {
			plural, _ := meta.UnsafeGuessKindToResource(o.GroupVersionKind())
			return plural.Group == r.Group && plural.Resource == r.Resource
		}) {
			t.Errorf("install rule %q (%s) covers no object of the install", r.Permission(), r.For)
		}
	}

	// A manifest of another kind is refused as input.
	extra := &unstructured.Unstructured{}
	extra.SetAPIVersion("v1")
	extra.SetKind("PersistentVolume")
	extra.SetName("pv")
	err = installCovered(b, []*unstructured.Unstructured{extra})
	var ie *InputError
	if err == nil || !strings.Contains(err.Error(), "PersistentVolume pv") || !errors.As(err, &ie) {
		t.Errorf("an uncovered kind: %v", err)
	}
}
