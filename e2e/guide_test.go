package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/e2e/scenario"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/markdown"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/performance/podcheck"
	"github.com/tcpxogen/tcpxogen/validators/realize"
)

// repoRoot is the parent module's checkout: this module lives in its e2e/.
const repoRoot = ".."

// strict is how every manifest is applied: an unknown or duplicate field is
// an error, not a silently pruned field.
var strict = client.FieldValidation(metav1.FieldValidationStrict)

// TestShippedRuntime applies the shipped golden as a user would and checks
// that the API server stored the runtime tcpxogen builds in-process
// (runtimes.Shipped): the golden passes the CRD schema and the trainer's
// ClusterTrainingRuntime webhook, and nothing is pruned or defaulted away.
func TestShippedRuntime(t *testing.T) {
	ctx := context.Background()
	stored := installShippedRuntime(t, ctx)
	want, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	gotPod, err := wiring.RuntimePodTemplate(stored, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	wantPod, err := wiring.RuntimePodTemplate(want, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	if d := wiring.Diff(wiring.Of(wantPod, constants.Node), wiring.Of(gotPod, constants.Node)); len(d) > 0 {
		t.Fatalf("the API server stored other wiring than tcpxogen builds:\n%s", joinChanges(d))
	}
}

// installShippedRuntime applies runtimes/torch-distributed-tcpxo.yaml once
// per binary (it is cluster-scoped) and returns it as stored.
func installShippedRuntime(t *testing.T, ctx context.Context) *trainer.ClusterTrainingRuntime {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "runtimes", names.Runtime+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := documents(data)
	if len(docs) != 1 {
		t.Fatalf("the golden has %d documents, want 1", len(docs))
	}
	u, err := decode(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	err = cp.Client.Create(ctx, u, strict)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("applying the shipped runtime: %v", err)
	}
	rt := &trainer.ClusterTrainingRuntime{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: names.Runtime}, rt); err != nil {
		t.Fatal(err)
	}
	return rt
}

// TestGuideExamples applies every YAML example of the user guide with
// strict field validation through the real webhooks. Each TrainJob of the
// shipped runtime must be admitted, produce a JobSet whose node pods the
// Job controller creates, and complete once the simulated kubelets succeed
// its pods. Its pods are checked, while running, with the pod check
// `validate` runs on live pods: an example the guide presents as correct
// must pass it, a pitfall must fail it or launch wrong. And the offline
// lint (`check trainjob`, realize.Lint) must agree with the control plane:
// the JobSet the trainer controller created carries exactly the wiring the
// in-process realization predicts, and both lose the fabric for the same
// changes.
func TestGuideExamples(t *testing.T) {
	ctx := context.Background()
	installShippedRuntime(t, ctx)
	shippedRT, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(repoRoot, "docs", "tcpxo-workloads.md")
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	blocks := markdown.YAMLBlocks(data)
	if len(blocks) < 8 {
		t.Fatalf("only %d YAML examples in %s: the guide lost its examples", len(blocks), page)
	}
	// The guide must keep enough TrainJobs of the shipped runtime for this
	// test to mean something.
	trainJobs := 0
	for _, b := range blocks {
		for _, doc := range documents(b.Content) {
			if u, err := decode(doc); err == nil && u.GetKind() == trainer.TrainJobKind && mustRef(u) == names.Runtime {
				trainJobs++
			}
		}
	}
	if trainJobs < 5 {
		t.Fatalf("only %d TrainJobs of %s in the guide", trainJobs, names.Runtime)
	}
	for _, b := range blocks {
		t.Run(fmt.Sprintf("line-%d", b.Line), func(t *testing.T) {
			t.Parallel()
			ns := namespace(t, ctx, fmt.Sprintf("guide-%d", b.Line))
			for _, doc := range documents(b.Content) {
				u, err := decode(doc)
				if err != nil {
					t.Fatalf("example does not parse: %v", err)
				}
				if u.GetKind() == trainer.TrainJobKind {
					// Each example in its own namespace, whatever the
					// guide's (several share team-a): the simulated
					// kubelets' plan is per namespace.
					u.SetNamespace(ns)
				}
				if u.GetNamespace() != "" {
					namespace(t, ctx, u.GetNamespace())
				}
				ref, _, _ := unstructured.NestedString(u.Object, "spec", "runtimeRef", "name")
				if u.GetKind() == trainer.TrainJobKind && ref != names.Runtime {
					// A TrainJob of another runtime (EKS, AKS) or a
					// namespaced one: admission is the proof; a server-side
					// dry run runs the schema and every webhook.
					checkForeignTrainJob(t, ctx, u)
					continue
				}
				if err := cp.Client.Create(ctx, u, strict); err != nil {
					if b.Info == "pitfall" && apierrors.IsBadRequest(err) {
						// kubectl applies with strict validation by
						// default: the pitfall never reaches the cluster.
						t.Logf("pitfall: the API server rejects it under strict field validation: %v", err)
						continue
					}
					t.Fatalf("%s %s rejected: %v", u.GetKind(), u.GetName(), err)
				}
				if u.GetKind() != trainer.TrainJobKind {
					continue
				}
				runGuideTrainJob(t, ctx, shippedRT, u, b.Info == "pitfall")
			}
		})
	}
}

// checkForeignTrainJob dry-runs a TrainJob whose runtime is not installed.
// The trainer's TrainJob webhook rejects a TrainJob whose runtime does not
// exist; any other rejection is a broken example.
func checkForeignTrainJob(t *testing.T, ctx context.Context, u *unstructured.Unstructured) {
	t.Helper()
	err := cp.Client.Create(ctx, u, strict, client.DryRunAll)
	if err == nil {
		return
	}
	if strings.Contains(err.Error(), "not found") {
		t.Logf("%s: runtime %s is not installed here; the webhook rejects only that: %v", u.GetName(), mustRef(u), err)
		return
	}
	t.Fatalf("TrainJob %s rejected: %v", u.GetName(), err)
}

func mustRef(u *unstructured.Unstructured) string {
	ref, _, _ := unstructured.NestedString(u.Object, "spec", "runtimeRef", "name")
	return ref
}

func runGuideTrainJob(t *testing.T, ctx context.Context, shippedRT *trainer.ClusterTrainingRuntime, u *unstructured.Unstructured, pitfall bool) {
	ns, name := u.GetNamespace(), u.GetName()
	cp.Nodes.SetPlan(ns, harness.Plan{Hold: true})

	// The offline verdict, on the TrainJob as the guide writes it.
	job := &trainer.TrainJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, job); err != nil {
		t.Fatal(err)
	}
	rtPod, err := wiring.RuntimePodTemplate(shippedRT, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	rtWiring := wiring.Of(rtPod, constants.Node)
	rules := runtimes.RulesFor(shipped.Facts(), rtWiring.NodeEnv)
	verdict, js := controlPlaneAgrees(t, ctx, shippedRT, job, rtWiring, fabric.TCPXORules, rules)

	// The pods, running: the check `validate` runs on live pods.
	want := expectedNodePods(js)
	pods := waitPods(t, ctx, ns, name, want, corev1.PodRunning)
	checkGuideLaunch(t, name, pods)
	podErr := podcheck.Check(pods, rtPod, rules)
	launchWrong := len(verdict.Launch.Problems) > 0
	switch {
	case pitfall && podErr == nil && !launchWrong:
		t.Errorf("a pitfall's pods carry the full wiring and it launches right: the guide is wrong")
	case pitfall:
		t.Logf("pitfall, as the guide says: pod check: %v; launch problems: %d", podErr, len(verdict.Launch.Problems))
	case podErr != nil:
		t.Errorf("pods of a correct example lack the wiring: %v", podErr)
	case launchWrong:
		t.Errorf("a correct example launches wrong: %+v", verdict.Launch.Problems)
	}

	// Completion.
	cp.Nodes.Release(ns)
	waitFor(t, ctx, 60*time.Second, "TrainJob "+name+" Complete", func() (bool, error) {
		tj := &trainer.TrainJob{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, tj); err != nil {
			return false, err
		}
		if meta.IsStatusConditionTrue(tj.Status.Conditions, trainer.TrainJobFailed) {
			return false, fmt.Errorf("TrainJob failed: %+v", tj.Status.Conditions)
		}
		return meta.IsStatusConditionTrue(tj.Status.Conditions, trainer.TrainJobComplete), nil
	})
}

// The scenario helpers the main suite calls by their old names.
func expectedNodePods(js *jobsetv1alpha2.JobSet) int { return scenario.ExpectedNodePods(js) }

func waitPods(t *testing.T, ctx context.Context, ns, jobSet string, want int, phase corev1.PodPhase) []corev1.Pod {
	t.Helper()
	return scenario.WaitPods(t, ctx, cp.Client, ns, jobSet, want, phase)
}

func describeNamespace(ctx context.Context, ns string) string {
	return scenario.DescribeNamespace(ctx, cp.Client, ns)
}

func lostFabric(js []realize.Judged) []string {
	var out []string
	for _, j := range js {
		if j.LosesFabric() {
			out = append(out, j.Change.String())
		}
	}
	slices.Sort(out)
	return out
}

func joinChanges(cs []wiring.Change) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = "  " + c.String()
	}
	return strings.Join(s, "\n")
}

func decode(doc []byte) (*unstructured.Unstructured, error) { return scenario.Decode(doc) }

// namespace creates ns once (concurrent callers tolerate each other) and
// returns its name.
func namespace(t *testing.T, ctx context.Context, ns string) string {
	t.Helper()
	err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	return ns
}

// waitFor polls cond every 100 ms until it holds, fails, or timeout.
func waitFor(t *testing.T, ctx context.Context, timeout time.Duration, what string, cond func() (bool, error), describe ...func() string) {
	t.Helper()
	scenario.WaitFor(t, ctx, timeout, what, cond, describe...)
}

// controlPlaneAgrees realizes job offline against rt as check trainjob does
// (its verdict with the fabric's rule set rs and the checker rules, and its
// realization), waits for the JobSet the trainer controller creates for
// it, and fails the test where the two disagree: on the node pod's wiring,
// or on what loses the fabric. rtWiring is rt's node pod wiring.
func controlPlaneAgrees(t *testing.T, ctx context.Context, rt client.Object, job *trainer.TrainJob, rtWiring wiring.Wiring, rs *fabric.RuleSet, rules []guestconfig.Rule) (*realize.Verdict, *jobsetv1alpha2.JobSet) {
	t.Helper()
	ns, name := job.Namespace, job.Name
	verdict, err := realize.LintWith(ctx, rt, job.DeepCopy(), rs, rules)
	if err != nil {
		t.Fatalf("check trainjob: %v", err)
	}
	realized, err := realize.Realize(ctx, rt, job.DeepCopy())
	if err != nil {
		t.Fatalf("realize: %v", err)
	}

	// What the control plane did.
	js := &jobsetv1alpha2.JobSet{}
	waitFor(t, ctx, 60*time.Second, "the JobSet of "+name, func() (bool, error) {
		err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, js)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	clusterPod, err := wiring.JobSetPodTemplate(js, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	offlinePod, err := wiring.JobSetPodTemplate(realized.JobSet, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	clusterWiring := wiring.Of(clusterPod, constants.Node)
	if d := wiring.Diff(wiring.Of(offlinePod, constants.Node), clusterWiring); len(d) > 0 {
		t.Errorf("check trainjob's realization disagrees with the JobSet the trainer controller created:\n%s", joinChanges(d))
	}
	offlineLost := lostFabric(verdict.Changes)
	clusterLost := lostFabric(realize.JudgeWith(rs, rtWiring, clusterWiring, rules))
	if !slices.Equal(offlineLost, clusterLost) {
		t.Errorf("check trainjob and the control plane disagree on what loses the fabric:\n  check trainjob: %v\n  control plane:  %v", offlineLost, clusterLost)
	}
	return verdict, js
}
