package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/internal/markdown"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes/admission"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

// warnings collects the API server's warning headers for one request.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

var trainJobResource = trainer.GroupVersion.WithResource("trainjobs")

// admit creates u (a dry run unless real) and returns the warnings the API
// server sent and its error.
func admit(t *testing.T, ctx context.Context, u *unstructured.Unstructured, real bool) ([]string, error) {
	t.Helper()
	w := &warnings{}
	cfg := rest.CopyConfig(cp.Config)
	cfg.WarningHandler = w
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	if !real {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = dc.Resource(trainJobResource).Namespace(u.GetNamespace()).Create(ctx, u.DeepCopy(), opts)
	return w.list, err
}

// policyGolden reads a committed policy golden into its policies and
// bindings.
func policyGolden(t *testing.T, rel string) ([]*admissionv1.ValidatingAdmissionPolicy, []*admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	var ps []*admissionv1.ValidatingAdmissionPolicy
	var bs []*admissionv1.ValidatingAdmissionPolicyBinding
	for _, doc := range documents(data) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			p := &admissionv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict(doc, p); err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict(doc, b); err != nil {
				t.Fatal(err)
			}
			bs = append(bs, b)
		default:
			t.Fatalf("%s holds a %s", rel, meta.Kind)
		}
	}
	return ps, bs
}

// guideTrainJobs are the guide's TrainJobs of the shipped runtime, split
// into the pitfalls a policy can see, those only the lint can (a field the
// API server prunes before admission), and the correct examples.
func guideTrainJobs(t *testing.T, ns string) (pitfalls, lintOnly, correct []*unstructured.Unstructured) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "tcpxo-workloads.md"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := schema.NewTrainer()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range markdown.YAMLBlocks(data) {
		for _, doc := range documents(b.Content) {
			u, err := decode(doc)
			if err != nil || u.GetKind() != trainer.TrainJobKind || mustRef(u) != names.Runtime {
				continue
			}
			u.SetNamespace(ns)
			reports, err := v.Validate(doc)
			if err != nil || len(reports) != 1 {
				t.Fatalf("line %d: %v", b.Line, err)
			}
			switch {
			case b.Info == "pitfall" && len(reports[0].Findings) > 0:
				lintOnly = append(lintOnly, u)
			case b.Info == "pitfall":
				pitfalls = append(pitfalls, u)
			default:
				correct = append(correct, u)
			}
		}
	}
	if len(pitfalls) < 4 || len(correct) < 4 {
		t.Fatalf("the guide has %d pitfalls a policy sees and %d correct examples", len(pitfalls), len(correct))
	}
	return pitfalls, lintOnly, correct
}

// TestAdmissionPolicy installs the committed policies on the real API
// server (ValidatingAdmissionPolicy GA, no webhook): the default bindings
// admit the guide's pitfalls with the contract's warnings and its correct
// examples with none; the enforcing binding rejects the pitfalls; a
// two-node TrainJob of another runtime gets the capability advisory; and
// with the policies deleted TrainJobs are created as before.
func TestAdmissionPolicy(t *testing.T) {
	ctx := context.Background()
	installShippedRuntime(t, ctx)
	ns := namespace(t, ctx, "admission-policy")
	cp.Nodes.SetPlan(ns, harness.Plan{Hold: true})
	vap, vapb := cp.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies(), cp.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	policies, bindings := policyGolden(t, admission.GoldenPath)
	_, enforcing := policyGolden(t, admission.GoldenEnforcePath)
	strictCreate := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	cleanup := func() {
		for _, b := range bindings {
			if err := vapb.Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting binding %s: %v", b.Name, err)
			}
		}
		for _, p := range policies {
			if err := vap.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting policy %s: %v", p.Name, err)
			}
		}
	}
	t.Cleanup(cleanup)
	for _, p := range policies {
		if _, err := vap.Create(ctx, p, strictCreate); err != nil {
			t.Fatalf("the API server refuses policy %s: %v", p.Name, err)
		}
	}
	for _, b := range bindings {
		if _, err := vapb.Create(ctx, b, strictCreate); err != nil {
			t.Fatalf("the API server refuses binding %s: %v", b.Name, err)
		}
	}
	pitfalls, lintOnly, correct := guideTrainJobs(t, ns)
	contractSays := "ValidatingAdmissionPolicy '" + admission.ContractPolicy + "'"

	// The policies take effect once the API server's informers see them.
	waitFor(t, ctx, 30*time.Second, "the contract to warn", func() (bool, error) {
		w, err := admit(t, ctx, pitfalls[0], false)
		return err == nil && len(w) > 0, nil
	})
	for _, u := range pitfalls {
		w, err := admit(t, ctx, u, false)
		if err != nil {
			t.Errorf("default bindings: pitfall %s rejected: %v", u.GetName(), err)
			continue
		}
		if !strings.Contains(strings.Join(w, "\n"), contractSays) || !strings.Contains(strings.Join(w, "\n"), "fix: ") {
			t.Errorf("default bindings: pitfall %s admitted without the contract's warning and fix: %q", u.GetName(), w)
		}
		t.Logf("pitfall %s admitted with: %q", u.GetName(), w)
	}
	for _, u := range correct {
		if w, err := admit(t, ctx, u, false); err != nil || len(w) > 0 {
			t.Errorf("correct example %s: error %v, warnings %q", u.GetName(), err, w)
		}
	}
	for _, u := range lintOnly {
		// Strict field validation rejects the pruned field; the lenient
		// default prunes it before admission, where no policy sees it.
		u := u.DeepCopy()
		if w, err := admit(t, ctx, u, false); err == nil {
			t.Logf("lint-only pitfall %s admitted under strict validation: %q", u.GetName(), w)
		}
	}

	// The capability advisory: two nodes on a runtime without the wiring.
	plain, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	plain.Name = "e2e-plain-torch"
	if err := cp.Client.Create(ctx, plain); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	twoNodes, err := decode([]byte(fmt.Sprintf("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: two-nodes, namespace: %s}\nspec:\n  runtimeRef: {name: e2e-plain-torch}\n  trainer: {numNodes: 2}\n", ns)))
	if err != nil {
		t.Fatal(err)
	}
	// The trainer's webhook reads runtimes from its informer cache, which
	// may not hold the one just created (e2e/README.md, "Found by it").
	waitFor(t, ctx, 30*time.Second, "the trainer's webhook to see e2e-plain-torch", func() (bool, error) {
		_, err := admit(t, ctx, twoNodes, false)
		return err == nil || !strings.Contains(err.Error(), "must be created before"), nil
	})
	if w, err := admit(t, ctx, twoNodes, false); err != nil || !strings.Contains(strings.Join(w, "\n"), admission.AdvisoryMessage) {
		t.Errorf("two nodes on e2e-plain-torch: error %v, warnings %q", err, w)
	}

	// --enforce: the contract's binding with Deny.
	for _, b := range enforcing {
		cur, err := vapb.Get(ctx, b.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec = b.Spec
		if _, err := vapb.Update(ctx, cur, metav1.UpdateOptions{FieldValidation: metav1.FieldValidationStrict}); err != nil {
			t.Fatalf("the API server refuses the enforcing binding %s: %v", b.Name, err)
		}
	}
	waitFor(t, ctx, 30*time.Second, "the contract to deny", func() (bool, error) {
		_, err := admit(t, ctx, pitfalls[0], false)
		return apierrors.IsInvalid(err), nil
	})
	for _, u := range pitfalls {
		if _, err := admit(t, ctx, u, false); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "fix: ") {
			t.Errorf("--enforce: pitfall %s: %v, want the contract's rejection with its fix", u.GetName(), err)
		}
	}
	for _, u := range correct {
		if w, err := admit(t, ctx, u, false); err != nil || len(w) > 0 {
			t.Errorf("--enforce: correct example %s: error %v, warnings %q", u.GetName(), err, w)
		}
	}
	if w, err := admit(t, ctx, twoNodes, false); err != nil || !strings.Contains(strings.Join(w, "\n"), admission.AdvisoryMessage) {
		t.Errorf("--enforce: the advisory must stay a warning: error %v, warnings %q", err, w)
	}

	// No webhook to fail: without the policies creation works as before.
	cleanup()
	waitFor(t, ctx, 30*time.Second, "the policies to be gone", func() (bool, error) {
		w, err := admit(t, ctx, pitfalls[0], false)
		return err == nil && len(w) == 0, nil
	})
	if w, err := admit(t, ctx, correct[0], true); err != nil || len(w) > 0 {
		t.Errorf("after deleting the policies: %s: error %v, warnings %q", correct[0].GetName(), err, w)
	}
}
