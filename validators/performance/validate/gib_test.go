package validate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	fakerest "k8s.io/client-go/rest/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/internal/access"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/cluster"
	"github.com/tcpxogen/tcpxogen/validators/performance/report"
)

const gibRecipe = "gke-a4-gib.yaml"

// The gIB machine types of the tests.
var (
	a4      = mustMachine(fabric.GIB, "a4-highgpu-8g")
	a3Ultra = mustMachine(fabric.GIB, "a3-ultragpu-8g")
	a3High  = fabric.MachineType{Name: "a3-highgpu-8g", Accelerator: "nvidia-h100-80gb"}
)

func mustMachine(f fabric.Fabric, name string) fabric.MachineType {
	m, ok := f.MachineType(name)
	if !ok {
		panic("no machine type " + name + " in fabric " + f.Name)
	}
	return m
}

// gibRuntime renders torch-distributed-rdma-<mt> from a recipe's mapping:
// what a user following the gIB guide deploys.
func gibRuntime(t testing.TB, recipeName string, mt fabric.MachineType) *trainer.ClusterTrainingRuntime {
	t.Helper()
	rt, err := runtimes.RDMARuntime(inputs(t), runtimes.RDMAOptions{Interfaces: loadRecipe(t, recipeName).Interfaces(), MachineType: mt.Name})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// gibCluster is a declared-and-complete cluster with a healthy gIB pool of
// mt (gibNodes) on the recipe's networks, the namespace, and the recipe's
// gIB runtime deployed (changed by change, when given; nil deploys none).
func gibCluster(t *testing.T, mt fabric.MachineType, change func(rt *trainer.ClusterTrainingRuntime) *trainer.ClusterTrainingRuntime) *fakeCluster {
	t.Helper()
	rt := gibRuntime(t, gibRecipe, mt)
	if change != nil {
		rt = change(rt)
	}
	var custom []runtime.Object
	if rt != nil {
		custom = append(custom, unstructuredOf(t, rt))
	}
	kube := append(append(gibNodes(t, gibRecipe, mt, 2), controllers()...), namespace("default"))
	return newFakeCluster(t, kube, establishedCRDs(t), custom)
}

// gibPassingLog is a passing 2-node all_gather run on gIB, taken the way
// busbw's gIB tests take theirs: its reconstructed A4 log
// (validators/performance/busbw/testdata/gib, "RECONSTRUCTION" in its
// header), 342.69 GB/s at 8 GB with NCCL's "Using network gIB" lines.
func gibPassingLog(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "busbw", "testdata", "gib", "a4-2node-all-gather.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// logKube serves log as every pod's log, where client-go's fake serves
// "fake logs"; the fake still records the get pods/log request.
type logKube struct {
	kubernetes.Interface
	log string
}

func (k logKube) CoreV1() corev1client.CoreV1Interface {
	return logCore{CoreV1Interface: k.Interface.CoreV1(), log: k.log}
}

type logCore struct {
	corev1client.CoreV1Interface
	log string
}

func (c logCore) Pods(ns string) corev1client.PodInterface {
	return logPods{PodInterface: c.CoreV1Interface.Pods(ns), ns: ns, log: c.log}
}

type logPods struct {
	corev1client.PodInterface
	ns, log string
}

func (p logPods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	p.PodInterface.GetLogs(name, opts) // recorded as the request it stands for
	c := &fakerest.RESTClient{
		Client: fakerest.CreateHTTPClient(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(p.log))}, nil
		}),
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		GroupVersion:         corev1.SchemeGroupVersion,
		VersionedAPIPath:     "/api/v1/namespaces/" + p.ns + "/pods/" + name + "/log",
	}
	return c.Request()
}

// benchApplier is fakeApplier that also plays JobSet's workers: when the
// TrainJob is created, one worker pod per node runs the benchmark
// runtime's node template, as the cluster reports it.
type benchApplier struct {
	fakeApplier
	bench *unstructured.Unstructured
	// editWorker, when set, changes each worker pod as something on the
	// cluster (a webhook, a mutated template) would.
	editWorker func(*corev1.Pod)
}

func (a *benchApplier) Apply(ctx context.Context, obj *unstructured.Unstructured) error {
	switch obj.GetKind() {
	case trainer.TrainingRuntimeKind:
		a.bench = obj
	case trainer.TrainJobKind:
		if err := a.addWorkers(obj); err != nil {
			return err
		}
	}
	return a.fakeApplier.Apply(ctx, obj)
}

func (a *benchApplier) addWorkers(tj *unstructured.Unstructured) error {
	var bench trainer.TrainingRuntime
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(a.bench.Object, &bench); err != nil {
		return err
	}
	tpl, err := wiring.RuntimePodTemplate(&bench, constants.Node)
	if err != nil {
		return err
	}
	for i := range *bench.Spec.MLPolicy.NumNodes {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: tj.GetNamespace(), Name: fmt.Sprintf("%s-node-0-%d", tj.GetName(), i), Annotations: tpl.Annotations,
				Labels: map[string]string{jobsetv1alpha2.JobSetNameKey: tj.GetName(), jobsetv1alpha2.ReplicatedJobNameKey: constants.Node}},
			Spec:   *tpl.Spec.DeepCopy(),
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		if a.editWorker != nil {
			a.editWorker(pod)
		}
		// Through the tracker: JobSet's doing, not a request of validate's.
		if err := a.f.kube.Tracker().Add(pod); err != nil {
			return err
		}
	}
	return nil
}

// liveOn runs validate live on f, the launcher's log being log; it returns
// the applier, which recorded what the run created and deleted.
func liveOn(t *testing.T, f *fakeCluster, log string, args ...string) (a *benchApplier, code int, stdout, stderr string) {
	t.Helper()
	return liveWith(t, f, &benchApplier{fakeApplier: fakeApplier{f: f}}, log, args...)
}

// liveWith is liveOn with the applier a.
func liveWith(t *testing.T, f *fakeCluster, a *benchApplier, log string, args ...string) (_ *benchApplier, code int, stdout, stderr string) {
	t.Helper()
	connect := func(string, string) (*Clients, error) {
		c, err := f.connect("", "")
		if err != nil {
			return nil, err
		}
		c.Kube, c.Applier = logKube{Interface: f.kube, log: log}, a
		return c, nil
	}
	code, stdout, stderr = validate(t, connect, args...)
	return a, code, stdout, stderr
}

// A live gIB run goes through TCPXO's machinery: the pool gate and check
// cluster's gIB checks, the deployed torch-distributed-rdma-<mt>'s
// agreement, the benchmark derived from it and run, the workers' wiring,
// the launcher's log judged with gIB's rules against the recipe's
// all_gather floor, the results written, and everything it created
// deleted; every request within validate's declared permissions.
func TestGIBLiveRunPasses(t *testing.T) {
	f := gibCluster(t, a4, nil)
	out := t.TempDir()
	a, code, stdout, stderr := liveOn(t, f, gibPassingLog(t), "--fabric", "gib", "--recipe", recipePath(gibRecipe), "--out", out, "--timeout", "1m")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	pins := shipped.GIBFacts()
	contains(t, "plan", stdout,
		"fabric gib on a4-highgpu-8g",
		"GPU pool: ok",
		"  2 GPU nodes, all nvidia-b200 with 8 GPUs and the recipe's 9 GPU-NIC networks (gvnic-1, rdma-0,",
		"cluster fabric (tcpxogen check cluster): ok",
		"shipped runtime: ClusterTrainingRuntime torch-distributed-rdma-a4-highgpu-8g: ok",
		"would create TrainingRuntime default/nccl-tests-rdma-a4-highgpu-8g-",
		"derived from the deployed torch-distributed-rdma-a4-highgpu-8g",
		"image "+pins.DiagnosticImage+"; 2 nodes × 8 ranks (one per GPU); all_gather_perf 1K..8G over MPI, sshd on port 222; wiring equal to the shipped runtime",
		"floor: nccl-all-gather-bw >= 275.2 GB/s (recipe); passes at >= 247.68 GB/s",
		"runtimeSource: shipped",
		"result: PASS",
		"measured   342.69 GB/s out-of-place busbw at 8G",
	)
	if strings.Contains(stdout, "dry run") || strings.Contains(stdout, "kind: TrainingRuntime") {
		t.Errorf("a live run prints a dry run's objects:\n%s", stdout)
	}
	var kinds []string
	for _, s := range a.steps {
		verb, obj, _ := strings.Cut(s, " ")
		kind, name, _ := strings.Cut(obj, " ")
		if kind == trainer.TrainingRuntimeKind && !strings.HasPrefix(name, "default/nccl-tests-rdma-a4-highgpu-8g-") {
			t.Errorf("benchmark runtime %s", name)
		}
		kinds = append(kinds, verb+" "+kind)
	}
	if got, want := strings.Join(kinds, ", "), "create TrainingRuntime, create TrainJob, delete TrainJob, delete TrainingRuntime"; got != want {
		t.Errorf("steps %s\nwant  %s", got, want)
	}
	ctrf := readFile(t, filepath.Join(out, report.File))
	contains(t, "CTRF report", ctrf, `"fabric": "gib"`, `"runtimeSource": "shipped"`, pins.PluginVersion, pins.NCCLVersion)
	if readFile(t, filepath.Join(out, LogFile)) != gibPassingLog(t) {
		t.Error("the launcher log was not kept as served")
	}
	base, err := access.Validate.Bind("default")
	if err != nil {
		t.Fatal(err)
	}
	checkRequests(t, f, base)
}

// The judge is gIB's: a log in which NCCL fell back to its IB transport
// fails the run (exit 1), naming the network, though its busbw passes.
func TestGIBLiveRunJudgesWithGIBRules(t *testing.T) {
	f := gibCluster(t, a4, nil)
	fallback := strings.ReplaceAll(gibPassingLog(t), "Using network gIB", "Using network IB")
	_, code, stdout, stderr := liveOn(t, f, fallback, "--fabric", "gib", "--recipe", recipePath(gibRecipe), "--out", t.TempDir(), "--timeout", "1m")
	if code != exitFailure {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	contains(t, "output", stdout+stderr, "result: FAIL", "IB")
}

// Workers that ran without gIB's wiring fail the run even though the log
// passes: a worker whose env lost NCCL_NET is named, judged by gIB's rule
// set, and no tcpxo-daemon is asked of it.
func TestGIBLiveRunChecksTheWorkersWiring(t *testing.T) {
	f := gibCluster(t, a4, nil)
	a := &benchApplier{fakeApplier: fakeApplier{f: f}, editWorker: func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		for i, e := range c.Env {
			if e.Name == "NCCL_NET" {
				c.Env = append(c.Env[:i], c.Env[i+1:]...)
				return
			}
		}
		t.Fatal("the gIB runtime's node container sets no NCCL_NET")
	}}
	_, code, stdout, stderr := liveWith(t, f, a, gibPassingLog(t), "--fabric", "gib", "--recipe", recipePath(gibRecipe), "--out", t.TempDir(), "--timeout", "1m")
	if code != exitFailure {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	contains(t, "stderr", stderr, "did not run with the GPUDirect-RDMA (NCCL/gIB) wiring", "NCCL_NET")
	if strings.Contains(stderr, "tcpxo-daemon") {
		t.Errorf("a gIB worker is asked for the tcpxo-daemon:\n%s", stderr)
	}
}

// The dry run reads the cluster as TCPXO's does (the pool, check cluster,
// the deployed runtime's agreement), derives the benchmark from the
// deployed runtime, prints the plan and both objects, and writes nothing.
func TestGIBDryRunOnFakes(t *testing.T) {
	f := gibCluster(t, a4, nil)
	code, out, stderr := validate(t, f.connect, "--fabric", "gib", "--recipe", recipePath(gibRecipe), "--dry-run", "--nodes", "2")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	contains(t, "plan", out,
		"fabric gib on a4-highgpu-8g",
		"GPU pool: ok",
		"cluster fabric (tcpxogen check cluster): ok",
		"shipped runtime: ClusterTrainingRuntime torch-distributed-rdma-a4-highgpu-8g: ok",
		"all_gather_perf 1K..8G over MPI, sshd on port 222",
		"tcpxogen nccl-report --fabric gib --floor '>= 275.2' --log FILE",
		"dry run: nothing was created, changed or deleted")
	bench, tj := gibObjects(t, out)
	if bench.Namespace != "default" || !strings.HasPrefix(bench.Name, "nccl-tests-rdma-a4-highgpu-8g-") || tj.Spec.RuntimeRef.Name != bench.Name || tj.Labels[RunLabel] == "" {
		t.Errorf("benchmark %s/%s, TrainJob runs %s labelled %v", bench.Namespace, bench.Name, tj.Spec.RuntimeRef.Name, tj.Labels)
	}
	if diffs := benchmark.WiringEqual(gibRuntime(t, gibRecipe, a4), bench); len(diffs) > 0 {
		t.Errorf("the printed benchmark does not carry the shipped gIB wiring: %s", strings.Join(diffs, "; "))
	}
	if w := f.writes(); len(w) > 0 {
		t.Errorf("the dry run wrote to the cluster: %v", w)
	}
}

// gibObjects reads the TrainingRuntime and TrainJob a gIB dry run prints
// after its plan.
func gibObjects(t *testing.T, out string) (*trainer.TrainingRuntime, *trainer.TrainJob) {
	t.Helper()
	docs := strings.Split(out, "\n---\n")
	if len(docs) != 3 {
		t.Fatalf("%d documents, want the plan and two objects:\n%s", len(docs), out)
	}
	var rt trainer.TrainingRuntime
	var tj trainer.TrainJob
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &rt); err != nil {
		t.Fatal(err)
	}
	tail := strings.TrimSuffix(strings.TrimSpace(docs[2]), "dry run: nothing was created, changed or deleted")
	if err := yaml.UnmarshalStrict([]byte(tail), &tj); err != nil {
		t.Fatal(err)
	}
	return &rt, &tj
}

// The recipe's floor names the collective: an all_reduce floor runs
// all_reduce_perf.
func TestGIBDryRunFollowsTheRecipesCollective(t *testing.T) {
	r := writeFile(t, "r.yaml", strings.Replace(readFile(t, recipePath(gibRecipe)), "nccl-all-gather-bw", "nccl-all-reduce-bw", 1))
	f := gibCluster(t, a4, nil)
	code, out, stderr := validate(t, f.connect, "--fabric", "gib", "--recipe", r, "--dry-run")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	contains(t, "plan", out, "all_reduce_perf 1K..8G", "/third_party/nccl-tests-mpi/build/all_reduce_perf", "floor: nccl-all-reduce-bw >= 275.2")
	if strings.Contains(out, "all_gather_perf") {
		t.Errorf("an all_reduce recipe runs all_gather_perf:\n%s", out)
	}
}

// nodesOf are n nodes of machine type mt carrying recipeName's networks
// (TCPXO's NIC layout for a TCPXO recipe, gIB's for a gIB one), with the
// trainer's controllers and the namespace.
func nodesOf(t *testing.T, recipeName string, mt fabric.MachineType, n int, labels map[string]string) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	if loadRecipe(t, recipeName).FabricName() == fabric.GIB.Name {
		objs = gibNodes(t, recipeName, mt, n)
	} else {
		objs = gpuNodes(t, recipeName, n)
	}
	for _, o := range objs {
		if node, ok := o.(*corev1.Node); ok && node.Labels != nil {
			node.Labels[fabric.InstanceTypeLabel], node.Labels[fabric.AcceleratorLabel] = mt.Name, mt.Accelerator
			for k, v := range labels {
				node.Labels[k] = v
			}
		}
	}
	return append(append(objs, controllers()...), namespace("default"))
}

// The machine type decides the fabric: a pool of another fabric's machine
// type, of the other gIB machine type than the recipe's, of A3 High, or a
// managed DRANET pool is refused (exit 1) before anything is created,
// naming what the recipe is for and what the nodes are; so is a deployed
// gIB runtime that does not agree with the recipe's render, or none.
func TestGIBRefusals(t *testing.T) {
	a3Mega := fabric.TCPXO.MachineTypes[0]
	deployedFor := func(t *testing.T, recipeName string, mt fabric.MachineType) []runtime.Object {
		if loadRecipe(t, recipeName).FabricName() == fabric.GIB.Name {
			return []runtime.Object{unstructuredOf(t, gibRuntime(t, recipeName, mt))}
		}
		return []runtime.Object{unstructuredOf(t, shippedFor(t, recipeName))}
	}
	for _, tc := range []struct {
		name   string
		recipe string
		fabric string
		nodes  func(t *testing.T) []runtime.Object
		custom func(t *testing.T) []runtime.Object
		wants  []string
	}{{
		name: "a gIB recipe on A3 Mega nodes", recipe: gibRecipe, fabric: "gib",
		nodes:  func(t *testing.T) []runtime.Object { return nodesOf(t, declared, a3Mega, 2, nil) },
		custom: func(t *testing.T) []runtime.Object { return deployedFor(t, gibRecipe, a4) },
		wants:  []string{"GPU pool: the recipe is for a4-highgpu-8g", "these nodes are a3-megagpu-8g", "served by tcpxo", "--fabric gib"},
	}, {
		name: "a TCPXO recipe on A3 Ultra nodes", recipe: declared, fabric: "tcpxo",
		nodes:  func(t *testing.T) []runtime.Object { return nodesOf(t, gibRecipe, a3Ultra, 2, nil) },
		custom: func(t *testing.T) []runtime.Object { return deployedFor(t, declared, a3Mega) },
		wants:  []string{"GPU pool: the recipe is for a3-megagpu-8g", "these nodes are a3-ultragpu-8g", "served by gib", "--fabric tcpxo"},
	}, {
		name: "an A4 recipe on A3 Ultra nodes", recipe: gibRecipe, fabric: "gib",
		nodes:  func(t *testing.T) []runtime.Object { return nodesOf(t, gibRecipe, a3Ultra, 2, nil) },
		custom: func(t *testing.T) []runtime.Object { return deployedFor(t, gibRecipe, a4) },
		wants:  []string{"the recipe is for a4-highgpu-8g (nvidia-b200), but the GPU nodes (2) are a3-ultragpu-8g", "torch-distributed-rdma-a4-highgpu-8g selects a4-highgpu-8g nodes", "criteria.accelerator h200"},
	}, {
		name: "A3 High nodes", recipe: declared, fabric: "tcpxo",
		nodes:  func(t *testing.T) []runtime.Object { return nodesOf(t, declared, a3High, 2, nil) },
		custom: func(t *testing.T) []runtime.Object { return deployedFor(t, declared, a3Mega) },
		wants:  []string{"a3-highgpu-8g", "A3 High uses GPUDirect-TCPX"},
	}, {
		name: "a managed DRANET pool", recipe: gibRecipe, fabric: "gib",
		nodes: func(t *testing.T) []runtime.Object {
			return nodesOf(t, gibRecipe, a4, 2, map[string]string{cluster.DRANETLabel: "true"})
		},
		custom: func(t *testing.T) []runtime.Object { return deployedFor(t, gibRecipe, a4) },
		wants:  []string{"DRANET", cluster.DRANETLabel},
	}, {
		name: "a deployed gIB runtime that disagrees", recipe: gibRecipe, fabric: "gib",
		nodes: func(t *testing.T) []runtime.Object { return nodesOf(t, gibRecipe, a4, 2, nil) },
		custom: func(t *testing.T) []runtime.Object {
			rt := gibRuntime(t, gibRecipe, a4)
			node := &rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0]
			node.Env = node.Env[1:]
			return []runtime.Object{unstructuredOf(t, rt)}
		},
		wants: []string{"the deployed ClusterTrainingRuntime torch-distributed-rdma-a4-highgpu-8g does not agree with what the recipe's mapping renders",
			"tcpxogen render runtime --fabric gib --machine-type a4-highgpu-8g --interfaces eth1=gvnic-1,eth2=rdma-0,"},
	}, {
		name: "no gIB runtime deployed", recipe: gibRecipe, fabric: "gib",
		nodes:  func(t *testing.T) []runtime.Object { return nodesOf(t, gibRecipe, a4, 2, nil) },
		custom: func(t *testing.T) []runtime.Object { return nil },
		wants: []string{"ClusterTrainingRuntime torch-distributed-rdma-a4-highgpu-8g is not deployed",
			"tcpxogen render runtime --fabric gib --machine-type a4-highgpu-8g --interfaces eth1=gvnic-1,eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7 | kubectl apply -f -"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(t, tc.nodes(t), establishedCRDs(t), tc.custom(t))
			a, code, stdout, stderr := liveOn(t, f, gibPassingLog(t), "--fabric", tc.fabric, "--recipe", recipePath(tc.recipe), "--benchmark-image", pinnedImage, "--out", t.TempDir(), "--timeout", "1m")
			if code != exitFailure {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitFailure, stdout, stderr)
			}
			contains(t, "stderr", stderr, append([]string{"validation refused", "nothing was changed"}, tc.wants...)...)
			contains(t, "plan", stdout, "refused:")
			if len(a.steps) > 0 {
				t.Errorf("a refused run created or deleted: %v", a.steps)
			}
			if w := f.writes(); len(w) > 0 {
				t.Errorf("a refused run wrote to the cluster: %v", w)
			}
		})
	}
}

// What a gIB run is asked wrongly is bad input, exit 2, nothing on stdout,
// no cluster contacted: a recipe of the other fabric either way, signing
// (the evidence predicate is TCPXO's), and the shared flags' checks.
func TestGIBBadInput(t *testing.T) {
	gib := []string{"--fabric", "gib", "--recipe", recipePath(gibRecipe), "--dry-run"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a TCPXO recipe", []string{"--fabric", "gib", "--recipe", recipePath(declared)}, "is for fabric tcpxo, not --fabric gib: run validate --fabric tcpxo"},
		{"a gIB recipe as TCPXO", []string{"--recipe", recipePath(gibRecipe)}, "is for fabric gib, not --fabric tcpxo: run validate --fabric gib"},
		{"unknown fabric", []string{"--fabric", "rdma", "--recipe", recipePath(gibRecipe)}, `--fabric: unknown fabric "rdma"`},
		{"an unusable sign key", []string{"--fabric", "gib", "--recipe", recipePath(gibRecipe), "--sign-key", "no-such-key.pem"}, "--sign-key no-such-key.pem"},
		{"one node", append(gib, "--nodes", "1"), "--nodes 1"},
		{"bad namespace", append(gib, "--namespace", "Bad_NS"), `namespace "Bad_NS"`},
		{"image by tag", append(gib, "--benchmark-image", "nvcr.io/example/nccl-tests:2.16.4"), "not pinned by digest"},
		{"no recipe", []string{"--fabric", "gib", "--dry-run"}, "--recipe is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := validate(t, noConnect(t), tc.args...)
			if code != exitUsage || stdout != "" {
				t.Fatalf("exit %d, stdout %q; want exit 2 and nothing printed; stderr:\n%s", code, stdout, stderr)
			}
			contains(t, "stderr", stderr, tc.want)
		})
	}
}
