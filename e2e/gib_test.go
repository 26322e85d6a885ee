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
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/markdown"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/performance/podcheck"
	"github.com/tcpxogen/tcpxogen/validators/realize"
)

// gibGuide is the gIB workload guide.
var gibGuide = filepath.Join(repoRoot, "docs", "gib-workloads.md")

// gibRuntime is a shipped gIB runtime as the API server stored it, with
// the machine type it is for and the checker rules a TrainJob of it is
// judged by (as check trainjob picks them).
type gibRuntime struct {
	machine fabric.MachineType
	stored  *trainer.ClusterTrainingRuntime
	rules   []guestconfig.Rule
}

// installGIBRuntimes applies the committed gIB goldens, one per machine
// type (runtimes/torch-distributed-rdma-<machine type>.yaml), with strict
// field validation through the trainer's webhook, once per binary (they
// are cluster-scoped), and returns them as stored, by runtime name.
func installGIBRuntimes(t *testing.T, ctx context.Context) map[string]gibRuntime {
	t.Helper()
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]gibRuntime{}
	for _, mt := range fabric.GIB.MachineTypes {
		name := fabric.GIB.RuntimeFor(mt.Name)
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(runtimes.GoldenRDMARuntime(mt.Name))))
		if err != nil {
			t.Fatal(err)
		}
		docs := documents(data)
		if len(docs) != 1 {
			t.Fatalf("%s has %d documents, want 1", runtimes.GoldenRDMARuntime(mt.Name), len(docs))
		}
		u, err := decode(docs[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := cp.Client.Create(ctx, u, strict); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("applying %s: %v", runtimes.GoldenRDMARuntime(mt.Name), err)
		}
		rt := &trainer.ClusterTrainingRuntime{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, rt); err != nil {
			t.Fatal(err)
		}
		out[name] = gibRuntime{machine: mt, stored: rt, rules: in.GIB.GuestRules(mt.Name)}
	}
	return out
}

// addGIBPools registers a pool of two simulated nodes for each machine
// type of mts, labelled as GKE labels them (the instance type and the
// accelerator of internal/fabric's registry), and removes them when t
// ends. It returns the nodes by machine type.
func addGIBPools(t *testing.T, ctx context.Context, test string, mts ...fabric.MachineType) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, mt := range mts {
		pool := harness.Pool{Name: test + "-" + mt.Name, InstanceType: mt.Name, Accelerator: mt.Accelerator, Nodes: 2}
		nodes, err := cp.Nodes.AddPool(ctx, pool)
		t.Cleanup(func() {
			if err := cp.Nodes.RemovePool(context.Background(), pool.Name); err != nil {
				t.Errorf("removing pool %s: %v", pool.Name, err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		out[mt.Name] = nodes
	}
	return out
}

// TestShippedGIBRuntimes applies the gIB goldens as a user would: each
// passes the CRD schema (strict field validation) and the trainer's
// webhook, and the server stores the wiring tcpxogen builds in-process
// (runtimes.RDMARuntime with the goldens' example networks), affinity and
// container order included.
func TestShippedGIBRuntimes(t *testing.T) {
	ctx := context.Background()
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	for name, g := range installGIBRuntimes(t, ctx) {
		want, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: runtimes.ExampleRDMAInterfaces(), MachineType: g.machine.Name})
		if err != nil {
			t.Fatal(err)
		}
		gotPod, err := wiring.RuntimePodTemplate(g.stored, constants.Node)
		if err != nil {
			t.Fatal(err)
		}
		wantPod, err := wiring.RuntimePodTemplate(want, constants.Node)
		if err != nil {
			t.Fatal(err)
		}
		if d := wiring.Diff(wiring.Of(wantPod, constants.Node), wiring.Of(gotPod, constants.Node)); len(d) > 0 {
			t.Errorf("%s: the API server stored other wiring than tcpxogen builds:\n%s", name, joinChanges(d))
		}
		if !equality.Semantic.DeepEqual(gotPod.Spec.Affinity, wantPod.Spec.Affinity) {
			t.Errorf("%s: stored affinity %+v, built %+v", name, gotPod.Spec.Affinity, wantPod.Spec.Affinity)
		}
		if names := containerNames(gotPod.Spec.Containers); !slices.Equal(names, []string{constants.Node}) {
			t.Errorf("%s: stored containers %v, want [node]", name, names)
		}
	}
}

// TestGIBGuideExamples runs every YAML example of the gIB workload guide
// on the control plane, with pools of simulated A3 Ultra and A4 nodes:
// each TrainJob of a gIB runtime is admitted with strict field validation
// through the real webhooks, gets a JobSet whose node wiring is exactly
// what check trainjob's realization predicts, and pods that run on nodes
// of the runtime's machine type and then complete. A correct example's
// pods carry the whole wiring (annotations, the shipped env with
// NCCL_NET=gIB, the /usr/local/nvidia and /usr/local/gib host mounts, all
// eight GPUs, node first, the affinity); a pitfall's pods lack some of it,
// and check trainjob and the control plane agree on what was lost.
func TestGIBGuideExamples(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	addGIBPools(t, ctx, "guide", fabric.GIB.MachineTypes...)
	rts := installGIBRuntimes(t, ctx)
	data, err := os.ReadFile(gibGuide)
	if err != nil {
		t.Fatal(err)
	}
	blocks := markdown.YAMLBlocks(data)
	// The guide must keep a correct TrainJob of every gIB runtime and a
	// pitfall for this test to mean something.
	correct, pitfalls := map[string]int{}, 0
	for _, b := range blocks {
		for _, doc := range documents(b.Content) {
			u, err := decode(doc)
			if err != nil || u.GetKind() != trainer.TrainJobKind {
				continue
			}
			if _, ok := rts[mustRef(u)]; !ok {
				continue
			}
			if b.Info == "pitfall" {
				pitfalls++
			} else {
				correct[mustRef(u)]++
			}
		}
	}
	for name := range rts {
		if correct[name] == 0 {
			t.Errorf("%s has no correct TrainJob of %s", gibGuide, name)
		}
	}
	if pitfalls == 0 {
		t.Errorf("%s has no pitfall", gibGuide)
	}
	t.Run("examples", func(t *testing.T) {
		for _, b := range blocks {
			t.Run(fmt.Sprintf("line-%d", b.Line), func(t *testing.T) {
				t.Parallel()
				ns := namespace(t, ctx, fmt.Sprintf("gib-guide-%d", b.Line))
				for _, doc := range documents(b.Content) {
					u, err := decode(doc)
					if err != nil {
						t.Fatalf("example does not parse: %v", err)
					}
					if u.GetKind() != trainer.TrainJobKind {
						t.Fatalf("%s is a %s: this test runs TrainJobs of the gIB runtimes; teach it the kind", u.GetName(), u.GetKind())
					}
					g, ok := rts[mustRef(u)]
					if !ok {
						t.Fatalf("TrainJob %s references %s, not a gIB runtime", u.GetName(), mustRef(u))
					}
					u.SetNamespace(ns)
					if err := cp.Client.Create(ctx, u, strict); err != nil {
						t.Fatalf("TrainJob %s rejected: %v", u.GetName(), err)
					}
					runGIBTrainJob(t, ctx, g, u, b.Info == "pitfall")
				}
			})
		}
	})
	t.Logf("the gIB guide's %d examples ran in %s", len(blocks), time.Since(start).Round(100*time.Millisecond))
}

// TestGIBRuntimeKeepsItsMachineType is the negative row: the guide's
// TrainJob of the A3 Ultra runtime, with only A3 Mega nodes (the
// harness's) and A4 nodes in the cluster, gets no node: its pods stay
// Pending, unbound, Unschedulable. Once an A3 Ultra pool exists they bind
// to its nodes, and no other, and the TrainJob completes.
func TestGIBRuntimeKeepsItsMachineType(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	a3u, ok := fabric.GIB.MachineType("a3-ultragpu-8g")
	a4, ok4 := fabric.GIB.MachineType("a4-highgpu-8g")
	if !ok || !ok4 {
		t.Fatalf("the fabric registry lost A3 Ultra or A4: %v", fabric.GIB.MachineTypeNames())
	}
	addGIBPools(t, ctx, "placement", a4)
	installGIBRuntimes(t, ctx)
	rtName := fabric.GIB.RuntimeFor(a3u.Name)
	u := guideTrainJob(t, rtName)
	ns := namespace(t, ctx, "gib-placement")
	u.SetNamespace(ns)
	if err := cp.Client.Create(ctx, u, strict); err != nil {
		t.Fatalf("TrainJob %s rejected: %v", u.GetName(), err)
	}
	js := &jobsetv1alpha2.JobSet{}
	waitFor(t, ctx, 60*time.Second, "the JobSet of "+u.GetName(), func() (bool, error) {
		err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: u.GetName()}, js)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	want := expectedNodePods(js)
	unschedulable := func() (bool, error) {
		pods, err := nodePods(ctx, ns, u.GetName())
		if err != nil {
			return false, err
		}
		n := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				return false, fmt.Errorf("pod %s of %s was bound to %s (%s)", p.Name, rtName, p.Spec.NodeName, nodeMachine(ctx, p.Spec.NodeName))
			}
			if isUnschedulable(&p) {
				n++
			}
		}
		return n == want, nil
	}
	waitFor(t, ctx, 60*time.Second, fmt.Sprintf("%d Unschedulable node pods of %s", want, u.GetName()), unschedulable, func() string { return describeNamespace(ctx, ns) })
	// A scheduler retries; so does the simulator, every 100 ms. Two more
	// seconds with A3 Mega and A4 nodes free: still no binding.
	held := time.Now()
	for time.Since(held) < 2*time.Second {
		if _, err := unschedulable(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d pods of %s Pending and Unschedulable for 2 s on A3 Mega nodes %v and A4 nodes", want, rtName, cp.Nodes.NodeNames())

	nodes := addGIBPools(t, ctx, "placement", a3u)[a3u.Name]
	pods := waitPods(t, ctx, ns, u.GetName(), want, corev1.PodSucceeded)
	for _, p := range pods {
		if p.Labels[podcheck.ReplicatedJobLabel] == constants.Node && !slices.Contains(nodes, p.Spec.NodeName) {
			t.Errorf("pod %s ran on %s (%s), not on the A3 Ultra pool %v", p.Name, p.Spec.NodeName, nodeMachine(ctx, p.Spec.NodeName), nodes)
		}
	}
	waitComplete(t, ctx, ns, u.GetName())
	t.Logf("negative row and its recovery in %s", time.Since(start).Round(100*time.Millisecond))
}

// guideTrainJob is the first correct TrainJob of rtName in the gIB guide.
func guideTrainJob(t *testing.T, rtName string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(gibGuide)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range markdown.YAMLBlocks(data) {
		if b.Info == "pitfall" {
			continue
		}
		for _, doc := range documents(b.Content) {
			if u, err := decode(doc); err == nil && u.GetKind() == trainer.TrainJobKind && mustRef(u) == rtName {
				return u
			}
		}
	}
	t.Fatalf("%s has no correct TrainJob of %s", gibGuide, rtName)
	return nil
}

// runGIBTrainJob follows one admitted TrainJob of a gIB runtime: the
// offline verdict and realization against the control plane's JobSet, the
// running pods against the runtime's wiring and machine type, then
// completion.
func runGIBTrainJob(t *testing.T, ctx context.Context, g gibRuntime, u *unstructured.Unstructured, pitfall bool) {
	ns, name := u.GetNamespace(), u.GetName()
	cp.Nodes.SetPlan(ns, harness.Plan{Hold: true})

	job := &trainer.TrainJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, job); err != nil {
		t.Fatal(err)
	}
	rtPod, err := wiring.RuntimePodTemplate(g.stored, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	rtWiring := wiring.Of(rtPod, constants.Node)
	verdict, js := controlPlaneAgrees(t, ctx, g.stored, job, rtWiring, fabric.GIB.Rules(), g.rules)

	want := expectedNodePods(js)
	pods := waitPods(t, ctx, ns, name, want, corev1.PodRunning)
	var problems []string
	for i := range pods {
		p := &pods[i]
		if p.Labels[podcheck.ReplicatedJobLabel] != constants.Node {
			continue
		}
		problems = append(problems, gibPodProblems(ctx, p, rtPod, g)...)
	}
	launchWrong := len(verdict.Launch.Problems) > 0
	switch {
	case pitfall && len(problems) == 0 && !launchWrong:
		t.Errorf("a pitfall's pods carry the full gIB wiring and it launches right: the guide is wrong")
	case pitfall:
		t.Logf("pitfall, as the guide says: %s", strings.Join(problems, "; "))
	case len(problems) > 0:
		t.Errorf("pods of a correct example lack the gIB wiring:\n  %s", strings.Join(problems, "\n  "))
	case launchWrong:
		t.Errorf("a correct example launches wrong: %+v", verdict.Launch.Problems)
	}

	cp.Nodes.Release(ns)
	waitComplete(t, ctx, ns, name)
}

// gibPodProblems says what a running node pod of a gIB TrainJob lacks of
// its runtime's wiring, element by element: bound to a node of the
// runtime's machine type; the runtime's affinity; node its first
// container; the multi-network annotations; the shipped env, NCCL_NET=gIB
// among it; the /usr/local/nvidia and /usr/local/gib mounts of the host's
// /home/kubernetes/bin/nvidia and /home/kubernetes/bin/gib; all eight GPUs;
// and whatever else gIB's rule set judges lost against the runtime.
func gibPodProblems(ctx context.Context, p *corev1.Pod, rtPod *corev1.PodTemplateSpec, g gibRuntime) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, "pod "+p.Name+": "+fmt.Sprintf(format, args...)) }

	node := &corev1.Node{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
		add("its node %q: %v", p.Spec.NodeName, err)
	} else if it, acc := node.Labels[harness.InstanceTypeLabel], node.Labels[harness.AcceleratorLabel]; it != g.machine.Name || acc != g.machine.Accelerator {
		add("runs on %s, a %s (%s) node, not %s (%s)", node.Name, it, acc, g.machine.Name, g.machine.Accelerator)
	}
	if !equality.Semantic.DeepEqual(p.Spec.Affinity, rtPod.Spec.Affinity) {
		add("affinity %+v, the runtime's is %+v", p.Spec.Affinity, rtPod.Spec.Affinity)
	}
	if len(p.Spec.Containers) == 0 || p.Spec.Containers[0].Name != constants.Node {
		add("containers %v: node is not the first (GKE gives the RDMA devices to the first only)", containerNames(p.Spec.Containers))
		return out
	}
	c := &p.Spec.Containers[0]
	for k, v := range rtPod.Annotations {
		if p.Annotations[k] != v {
			add("annotation %s is %q, the runtime's %q", k, p.Annotations[k], v)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = wiring.EnvValue(&e)
	}
	if env["NCCL_NET"] != fabric.GIB.Rules().Net() {
		add("env NCCL_NET is %q, not %s", env["NCCL_NET"], fabric.GIB.Rules().Net())
	}
	rtNode := rtPod.Spec.Containers[slices.IndexFunc(rtPod.Spec.Containers, func(c corev1.Container) bool { return c.Name == constants.Node })]
	for _, e := range rtNode.Env {
		if got, ok := env[e.Name]; !ok || got != e.Value {
			add("env %s is %q, shipped %q", e.Name, got, e.Value)
		}
	}
	for mount, host := range map[string]string{runtimes.LibMountPath: runtimes.HostLibDir, runtimes.GIBMountPath: runtimes.GIBHostDir} {
		if got := hostPathAt(p, c, mount); got != host {
			add("%s mounts host path %q, want %s", mount, got, host)
		}
	}
	for _, rl := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		if q := rl[runtimes.GPUResource]; q.Value() != runtimes.GPUsPerNode {
			add("%s %s, want %d in limits and requests", runtimes.GPUResource, q.String(), runtimes.GPUsPerNode)
		}
	}
	got := wiring.Of(&corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}, constants.Node)
	for _, j := range realize.JudgeWith(fabric.GIB.Rules(), wiring.Of(serverDefaults(rtPod), constants.Node), got, g.rules) {
		if j.LosesFabric() {
			add("%s: %s", j.Change, j.Reason)
		}
	}
	return out
}

// hostPathAt is the host path of the hostPath volume c mounts at path, ""
// when none is.
func hostPathAt(p *corev1.Pod, c *corev1.Container, path string) string {
	for _, m := range c.VolumeMounts {
		if m.MountPath != path {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.Name == m.Name && v.HostPath != nil {
				return v.HostPath.Path
			}
		}
	}
	return ""
}

// serverDefaults is tpl with the defaults the API server sets on every pod
// in the fields the wiring compares and the gIB runtime has: a hostPath
// volume's type becomes "" (podcheck does the same for the TCPXO pods).
func serverDefaults(tpl *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	out := tpl.DeepCopy()
	for i := range out.Spec.Volumes {
		if hp := out.Spec.Volumes[i].HostPath; hp != nil && hp.Type == nil {
			hp.Type = new(corev1.HostPathUnset)
		}
	}
	return out
}

func containerNames(cs []corev1.Container) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// nodePods lists the node pods of a JobSet.
func nodePods(ctx context.Context, ns, jobSet string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := cp.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: jobSet, podcheck.ReplicatedJobLabel: constants.Node}); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

func isUnschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// nodeMachine names a node's machine type, for messages.
func nodeMachine(ctx context.Context, name string) string {
	n := &corev1.Node{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return err.Error()
	}
	return n.Labels[harness.InstanceTypeLabel]
}

// waitComplete waits for the TrainJob's Complete condition; Failed fails.
func waitComplete(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
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
