package benchmark

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// testImage is a well-formed pinned reference that names no real image.
var testImage = fmt.Sprintf("registry.example/nccl-tests:2.x@sha256:%x", sha256.Sum256([]byte("example")))

const testNamespace = "nccl-bench"

func shippedRuntime(t testing.TB) *trainer.ClusterTrainingRuntime {
	t.Helper()
	rt, err := shipped.Runtime()
	if err != nil {
		t.Fatalf("building the shipped runtime: %v", err)
	}
	return rt
}

// testParams are the pinned installer's benchmark facts with a test image:
// the image, binary and port come from the generated constants, as they do
// for every real derivation.
func testParams() Params {
	p := ParamsFor(shipped.Facts())
	p.Namespace, p.Image = testNamespace, testImage
	return p
}

func derive(t testing.TB, s *trainer.ClusterTrainingRuntime, p Params) *trainer.TrainingRuntime {
	t.Helper()
	rt, err := Derive(s, p)
	if err != nil {
		t.Fatalf("Derive: %v", err)
	}
	return rt
}

func rjob(t testing.TB, rt *trainer.TrainingRuntime, name string) *jobsetv1alpha2.ReplicatedJob {
	t.Helper()
	for i := range rt.Spec.Template.Spec.ReplicatedJobs {
		if rj := &rt.Spec.Template.Spec.ReplicatedJobs[i]; rj.Name == name {
			return rj
		}
	}
	t.Fatalf("runtime %s has no replicated job %q", rt.Name, name)
	return nil
}

func container(t testing.TB, pod *corev1.PodTemplateSpec, name string) *corev1.Container {
	t.Helper()
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	t.Fatalf("pod has no container %q", name)
	return nil
}

func shippedNodeContainer(t testing.TB, s *trainer.ClusterTrainingRuntime) *corev1.Container {
	t.Helper()
	pod, err := wiring.RuntimePodTemplate(s, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	return container(t, pod, runtimes.NodeContainer)
}

func launcherOf(t testing.TB, rt *trainer.TrainingRuntime) *corev1.Container {
	t.Helper()
	return container(t, &rjob(t, rt, constants.Launcher).Template.Spec.Template, constants.Node)
}

// shippedGPUs reads the GPU count the way an operator would: the shipped
// node container's nvidia.com/gpu limit.
func shippedGPUs(t testing.TB, s *trainer.ClusterTrainingRuntime) int32 {
	t.Helper()
	q, ok := shippedNodeContainer(t, s).Resources.Limits[runtimes.GPUResource]
	if !ok {
		t.Fatal("shipped node container has no GPU limit")
	}
	return int32(q.Value())
}

func TestDeriveShape(t *testing.T) {
	s := shippedRuntime(t)
	rt := derive(t, s, testParams())

	if rt.Kind != trainer.TrainingRuntimeKind || rt.APIVersion != trainer.GroupVersion.String() {
		t.Errorf("type = %s %s, want %s %s", rt.APIVersion, rt.Kind, trainer.GroupVersion, trainer.TrainingRuntimeKind)
	}
	if rt.Name != names.Benchmark || rt.Namespace != testNamespace {
		t.Errorf("object = %s/%s, want %s/%s", rt.Namespace, rt.Name, testNamespace, names.Benchmark)
	}
	if got := rt.Annotations[AnnotationDerivedFrom]; got != "ClusterTrainingRuntime/"+names.Runtime {
		t.Errorf("%s = %q", AnnotationDerivedFrom, got)
	}
	if rt.ResourceVersion != "" || rt.UID != "" || rt.ManagedFields != nil {
		t.Errorf("derived runtime carries server fields: %+v", rt.ObjectMeta)
	}

	mp := rt.Spec.MLPolicy
	if mp == nil || mp.MPI == nil || mp.Torch != nil {
		t.Fatalf("mlPolicy = %+v, want mpi only", mp)
	}
	if got := ptr.Deref(mp.NumNodes, 0); got != DefaultNumNodes {
		t.Errorf("numNodes = %d, want %d", got, DefaultNumNodes)
	}
	mpi := mp.MPI
	if got, want := ptr.Deref(mpi.NumProcPerNode, 0), shippedGPUs(t, s); got != want {
		t.Errorf("numProcPerNode = %d, want the shipped GPU limit %d", got, want)
	}
	if ptr.Deref(mpi.MPIImplementation, "") != trainer.MPIImplementationOpenMPI ||
		ptr.Deref(mpi.SSHAuthMountPath, "") != "/root/.ssh" ||
		mpi.RunLauncherAsNode == nil || *mpi.RunLauncherAsNode {
		t.Errorf("mpi = impl %v, ssh %v, runLauncherAsNode %v; want OpenMPI, /root/.ssh, false",
			ptr.Deref(mpi.MPIImplementation, ""), ptr.Deref(mpi.SSHAuthMountPath, ""), mpi.RunLauncherAsNode)
	}

	var names []string
	for _, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
		names = append(names, rj.Name)
	}
	if !reflect.DeepEqual(names, []string{constants.Node, constants.Launcher}) {
		t.Fatalf("replicated jobs = %v, want [node launcher] (dependsOn may only name an earlier job)", names)
	}
	node, launcher := rjob(t, rt, constants.Node), rjob(t, rt, constants.Launcher)
	if node.Template.Labels[constants.LabelTrainJobAncestor] != constants.AncestorTrainer {
		t.Errorf("node job labels = %v, want the trainer ancestor step (numNodes must size the node job)", node.Template.Labels)
	}
	if _, ok := launcher.Template.Labels[constants.LabelTrainJobAncestor]; ok {
		t.Errorf("launcher job is labelled a trainer step: numNodes would size the launcher")
	}
	if want := []jobsetv1alpha2.DependsOn{{Name: constants.Node, Status: jobsetv1alpha2.DependencyReady}}; !reflect.DeepEqual(launcher.DependsOn, want) {
		t.Errorf("launcher dependsOn = %+v, want %+v", launcher.DependsOn, want)
	}
	if sp := rt.Spec.Template.Spec.SuccessPolicy; sp == nil || sp.Operator != jobsetv1alpha2.OperatorAll || !reflect.DeepEqual(sp.TargetReplicatedJobs, []string{constants.Launcher}) {
		t.Errorf("successPolicy = %+v, want All of [launcher]: sshd never exits", sp)
	}
	if got := ptr.Deref(launcher.Template.Spec.BackoffLimit, -1); got != 0 {
		t.Errorf("launcher backoffLimit = %d, want 0", got)
	}
	if got := launcher.Template.Spec.Template.Spec.RestartPolicy; got != corev1.RestartPolicyNever {
		t.Errorf("launcher restartPolicy = %q, want Never", got)
	}
}

// The node pod is the shipped node pod with exactly four fields of the node
// container replaced: everything else is equal, compared on the whole pod
// template so a field nobody thought of is covered too.
func TestNodePodIsShippedPodExceptWhatItRuns(t *testing.T) {
	s := shippedRuntime(t)
	rt := derive(t, s, testParams())
	want, err := wiring.RuntimePodTemplate(s, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	got := rjob(t, rt, constants.Node).Template.Spec.Template.DeepCopy()
	c := container(t, got, runtimes.NodeContainer)

	if c.Image != testImage {
		t.Errorf("node image = %q, want the benchmark image", c.Image)
	}
	if !slices.Contains(c.Args, "/usr/sbin/sshd") || !slices.Contains(c.Args, "-De") || c.Command[0] != "/bin/sh" ||
		!strings.HasSuffix(c.Command[2], `exec "$0" "$@"`) {
		t.Errorf("node command = %q %q, want sshd in the foreground behind the prelude", c.Command, c.Args)
	}
	port := tcpxo.SSHDPort
	if p := c.ReadinessProbe; p == nil || p.TCPSocket == nil || p.TCPSocket.Port.IntValue() != port {
		t.Errorf("node readinessProbe = %+v, want TCP %d (the launcher waits for Ready)", p, port)
	}
	if !hasSeq(c.Args, "-p", strconv.Itoa(port)) {
		t.Errorf("sshd args %q do not name port %d", c.Args, port)
	}

	sc := shippedNodeContainer(t, s)
	c.Image, c.Command, c.Args, c.ReadinessProbe = sc.Image, sc.Command, sc.Args, sc.ReadinessProbe
	if !reflect.DeepEqual(got, want) {
		t.Errorf("node pod differs from the shipped node pod beyond image, command, args and readinessProbe:\n got %+v\nwant %+v", got, want)
	}
}

// Derive copies from the object it is given, not from the builders: a
// shipped runtime carrying something the builders never produce (as a
// deployed one edited by an operator might) reaches the benchmark.
func TestDeriveCopiesTheGivenObject(t *testing.T) {
	s := shippedRuntime(t)
	pod := &s.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template
	pod.Annotations["example.com/operator-note"] = "kept"
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	pod.Spec.PriorityClassName = "benchmark-critical"
	nc := container(t, pod, runtimes.NodeContainer)
	nc.Env = append(nc.Env, corev1.EnvVar{Name: "NCCL_ALGO", Value: "Ring"})
	s.ResourceVersion, s.UID, s.Generation = "4711", "11111111-2222-3333-4444-555555555555", 3

	rt := derive(t, s, testParams())
	got := &rjob(t, rt, constants.Node).Template.Spec.Template
	if got.Annotations["example.com/operator-note"] != "kept" || len(got.Spec.Tolerations) != 1 || got.Spec.PriorityClassName != "benchmark-critical" {
		t.Errorf("node pod lost what the given shipped object carries: annotations %v, tolerations %v, priorityClassName %q",
			got.Annotations, got.Spec.Tolerations, got.Spec.PriorityClassName)
	}
	if !slices.Contains(launcherOf(t, rt).Args, "NCCL_ALGO") {
		t.Error("launcher does not forward NCCL_ALGO, which the given shipped worker env sets")
	}
	if rt.ResourceVersion != "" || rt.UID != "" || rt.Generation != 0 {
		t.Errorf("server fields of the shipped object leaked into the benchmark: %+v", rt.ObjectMeta)
	}
	if d := WiringEqual(s, rt); len(d) > 0 {
		t.Errorf("WiringEqual against the object it was derived from: %q", d)
	}
}

func TestDeriveDoesNotModifyOrShareShipped(t *testing.T) {
	s := shippedRuntime(t)
	before := s.DeepCopy()
	rt := derive(t, s, testParams())
	if !reflect.DeepEqual(s, before) {
		t.Fatal("Derive modified the shipped runtime")
	}
	// Mutating the result must not reach the shipped object.
	pod := &rjob(t, rt, constants.Node).Template.Spec.Template
	pod.Annotations[runtimes.AnnotationInterfaces] = "changed"
	pod.Spec.InitContainers[0].Args[0] = "changed"
	container(t, pod, runtimes.NodeContainer).Env[0].Value = "changed"
	launcherOf(t, rt).Env[0].Value = "changed"
	if !reflect.DeepEqual(s, before) {
		t.Fatal("the derived runtime shares memory with the shipped runtime")
	}
}

// expectedForwarded computes, independently of the code under test, which
// shipped worker variables must reach the ranks.
func expectedForwarded(t testing.TB, s *trainer.ClusterTrainingRuntime) []string {
	t.Helper()
	seen := map[string]bool{}
	var names []string
	for _, e := range shippedNodeContainer(t, s).Env {
		if (strings.HasPrefix(e.Name, "NCCL_") || strings.HasPrefix(e.Name, "CUDA_") || e.Name == "LD_LIBRARY_PATH") && !seen[e.Name] {
			seen[e.Name] = true
			names = append(names, e.Name)
		}
	}
	slices.Sort(names)
	return names
}

// hasSeq reports whether want occurs contiguously in argv.
func hasSeq(argv []string, want ...string) bool {
	for i := 0; i+len(want) <= len(argv); i++ {
		if slices.Equal(argv[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

func TestLauncherCommand(t *testing.T) {
	s := shippedRuntime(t)
	rt := derive(t, s, testParams())
	lc := launcherOf(t, rt)
	argv := lc.Args

	if len(lc.Command) != 3 || lc.Command[0] != "/bin/sh" || lc.Command[1] != "-c" || !strings.HasSuffix(lc.Command[2], `exec "$0" "$@"`) {
		t.Fatalf("launcher command = %q, want a /bin/sh -c prelude that execs its arguments", lc.Command)
	}
	script := lc.Command[2]
	for _, want := range []string{"umask 077", "cp /root/.ssh/id_rsa /tmp/mpi-ssh/id_rsa"} {
		if !strings.Contains(script, want) {
			t.Errorf("launcher prelude %q lacks %q: ssh ignores the 0644 key the trainer mounts", script, want)
		}
	}
	if len(argv) == 0 || argv[0] != "mpirun" {
		t.Fatalf("launcher args = %q, want mpirun first", argv)
	}
	for _, seq := range [][]string{
		{"--allow-run-as-root"},
		{"--bind-to", "none"},
		{"--mca", "pml", "ob1"},
		{"--mca", "btl", "tcp,self"},
		{"--mca", "btl_tcp_if_include", "eth0"},
		{"--mca", "oob_tcp_if_include", "eth0"},
	} {
		if !hasSeq(argv, seq...) {
			t.Errorf("mpirun lacks %q", seq)
		}
	}
	i := slices.Index(argv, "plm_rsh_args")
	if i < 0 || i+1 >= len(argv) {
		t.Fatalf("mpirun sets no plm_rsh_args: %q", argv)
	}
	for _, want := range []string{constants.OpenMPIEnvDefaultValueRSHArgs, "-i /tmp/mpi-ssh/id_rsa", "StrictHostKeyChecking=no"} {
		if !strings.Contains(argv[i+1], want) {
			t.Errorf("plm_rsh_args %q lacks %q", argv[i+1], want)
		}
	}
	if slices.Contains(argv, "-np") || slices.Contains(argv, "-n") {
		t.Errorf("mpirun fixes the rank count (%q): it must follow the hostfile's slots and the TrainJob's numNodes", argv)
	}

	want := expectedForwarded(t, s)
	if len(want) < 20 || !slices.Contains(want, "NCCL_FASTRAK_IFNAME") || !slices.Contains(want, "LD_LIBRARY_PATH") {
		t.Fatalf("the shipped worker env looks unwired (%d forwardable variables: %v); the test's premise is broken", len(want), want)
	}
	var got []string
	for j := 0; j+1 < len(argv); j++ {
		if argv[j] == "-x" {
			got = append(got, argv[j+1])
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("-x forwards\n %v\nwant, sorted,\n %v", got, want)
	}
	// -x NAME forwards the launcher's own value: it must be the worker's.
	workerVal := map[string]string{}
	for _, e := range shippedNodeContainer(t, s).Env {
		workerVal[e.Name] = e.Value
	}
	launcherVal := map[string]string{}
	for _, e := range lc.Env {
		launcherVal[e.Name] = e.Value
	}
	for _, n := range want {
		if launcherVal[n] != workerVal[n] {
			t.Errorf("launcher %s = %q, shipped worker %q", n, launcherVal[n], workerVal[n])
		}
	}

	// The MPI build from the installer image, never the plain build, which
	// under mpirun runs one single-GPU test per rank.
	tail := []string{tcpxo.AllReducePerfMPI, "-b", "1K", "-e", "16G", "-f", "2", "-g", "1"}
	if !strings.Contains(tcpxo.AllReducePerfMPI, "nccl-tests-mpi") {
		t.Errorf("the generated all_reduce_perf %q is not the MPI build", tcpxo.AllReducePerfMPI)
	}
	if rsh := argv[slices.Index(argv, "plm_rsh_args")+1]; !strings.Contains(rsh, "-p "+strconv.Itoa(tcpxo.SSHDPort)) {
		t.Errorf("mpirun ssh args %q do not dial port %d", rsh, tcpxo.SSHDPort)
	}
	if len(argv) < len(tail) || !slices.Equal(argv[len(argv)-len(tail):], tail) {
		t.Errorf("mpirun program = %q, want it to end with %q", argv, tail)
	}
}

func TestLauncherIsNotARank(t *testing.T) {
	rt := derive(t, shippedRuntime(t), testParams())
	pod := &rjob(t, rt, constants.Launcher).Template.Spec.Template
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			if _, ok := l[runtimes.GPUResource]; ok {
				t.Errorf("launcher container %s requests GPUs: %v", c.Name, c.Resources)
			}
		}
	}
	for k := range pod.Annotations {
		if strings.HasPrefix(k, "networking.gke.io/") || strings.HasPrefix(k, "devices.gke.io/") {
			t.Errorf("launcher pod carries TCPXO annotation %s", k)
		}
	}
	if len(pod.Spec.InitContainers) > 0 || len(pod.Spec.Volumes) > 0 || pod.Spec.NodeSelector != nil {
		t.Errorf("launcher pod carries node wiring: init containers %v, volumes %v, nodeSelector %v",
			pod.Spec.InitContainers, pod.Spec.Volumes, pod.Spec.NodeSelector)
	}
}

func TestParamsOverrides(t *testing.T) {
	s := shippedRuntime(t)
	p := Params{Namespace: "team-a", Name: "bench-small", Image: testImage, NumNodes: 4,
		MinBytes: "8", MaxBytes: "2g", Perf: "/opt/nccl-tests/all_reduce_perf", SSHPort: 2022}
	rt := derive(t, s, p)
	if rt.Name != "bench-small" || rt.Namespace != "team-a" || ptr.Deref(rt.Spec.MLPolicy.NumNodes, 0) != 4 {
		t.Errorf("runtime %s/%s numNodes %d", rt.Namespace, rt.Name, ptr.Deref(rt.Spec.MLPolicy.NumNodes, 0))
	}
	argv := launcherOf(t, rt).Args
	if !hasSeq(argv, "/opt/nccl-tests/all_reduce_perf", "-b", "8", "-e", "2g", "-f", "2", "-g", "1") {
		t.Errorf("mpirun program = %q, want the overridden path and sizes", argv)
	}
	if launcherOf(t, rt).Image != testImage {
		t.Errorf("launcher image = %q", launcherOf(t, rt).Image)
	}
}

func TestDeriveDeterministic(t *testing.T) {
	s := shippedRuntime(t)
	a, b := derive(t, s, testParams()), derive(t, s, testParams())
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two derivations from the same input differ")
	}
}

func TestDeriveRejectsBadParams(t *testing.T) {
	s := shippedRuntime(t)
	for _, tc := range []struct {
		name string
		edit func(*Params)
		want []string
	}{
		{"empty namespace", func(p *Params) { p.Namespace = "" }, []string{"namespace is empty"}},
		{"invalid namespace", func(p *Params) { p.Namespace = "Bench_1" }, []string{`namespace "Bench_1"`}},
		{"invalid name", func(p *Params) { p.Name = "Nccl Tests" }, []string{`name "Nccl Tests"`}},
		{"empty image", func(p *Params) { p.Image = "" }, []string{"image is empty", "pinned installer image"}},
		{"image by tag only", func(p *Params) { p.Image = "registry.example/nccl-tests:2.x" }, []string{"not pinned by digest", "has no digest"}},
		{"image by digest only", func(p *Params) { p.Image = strings.Replace(testImage, ":2.x@", "@", 1) }, []string{"has no tag"}},
		{"image with short digest", func(p *Params) { p.Image = "registry.example/nccl-tests:2.x@sha256:abcd" }, []string{"4 hex characters"}},
		{"one node", func(p *Params) { p.NumNodes = 1 }, []string{"numNodes 1", "at least 2"}},
		{"negative nodes", func(p *Params) { p.NumNodes = -2 }, []string{"numNodes -2"}},
		{"size with unit B", func(p *Params) { p.MinBytes = "1KB" }, []string{`minBytes "1KB"`}},
		{"size not a number", func(p *Params) { p.MaxBytes = "lots" }, []string{`maxBytes "lots"`}},
		{"size overflows", func(p *Params) { p.MaxBytes = "999999999999999G" }, []string{`maxBytes "999999999999999G"`}},
		{"zero min", func(p *Params) { p.MinBytes = "0" }, []string{"zero"}},
		{"min above max", func(p *Params) { p.MinBytes = "32G" }, []string{"minBytes 32G is larger than maxBytes 16G"}},
		{"relative binary", func(p *Params) { p.Perf = "all_reduce_perf" }, []string{"not a clean absolute path"}},
		{"unclean binary", func(p *Params) { p.Perf = "/opt/../all_reduce_perf" }, []string{"not a clean absolute path"}},
		{"every problem at once", func(p *Params) { *p = Params{NumNodes: 1} }, []string{"namespace is empty", "image is empty", "numNodes 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testParams()
			tc.edit(&p)
			rt, err := Derive(s, p)
			if err == nil {
				t.Fatalf("accepted; runtime %s/%s", rt.Namespace, rt.Name)
			}
			if !errors.Is(err, ErrParams) {
				t.Errorf("error does not wrap ErrParams: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestDeriveRejectsIncompleteShipped(t *testing.T) {
	nodePod := func(s *trainer.ClusterTrainingRuntime) *corev1.PodTemplateSpec {
		return &s.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template
	}
	node := func(s *trainer.ClusterTrainingRuntime) *corev1.Container { return &nodePod(s).Spec.Containers[0] }
	for _, tc := range []struct {
		name string
		edit func(*trainer.ClusterTrainingRuntime)
		want string
	}{
		{"no node job", func(s *trainer.ClusterTrainingRuntime) { s.Spec.Template.Spec.ReplicatedJobs[0].Name = "trainer" }, `no replicated job "node"`},
		{"no node container", func(s *trainer.ClusterTrainingRuntime) { node(s).Name = "pytorch" }, `has no container "node"`},
		{"no GPU limit", func(s *trainer.ClusterTrainingRuntime) { delete(node(s).Resources.Limits, runtimes.GPUResource) }, "has no nvidia.com/gpu limit"},
		{"zero GPUs", func(s *trainer.ClusterTrainingRuntime) {
			node(s).Resources.Limits[runtimes.GPUResource] = resource.MustParse("0")
		}, "not a positive whole number"},
		{"fractional GPUs", func(s *trainer.ClusterTrainingRuntime) {
			node(s).Resources.Limits[runtimes.GPUResource] = resource.MustParse("500m")
		}, "not a positive whole number"},
		{"no daemon sidecar", func(s *trainer.ClusterTrainingRuntime) { nodePod(s).Spec.InitContainers = nil }, "no tcpxo-daemon sidecar"},
		{"daemon not a native sidecar", func(s *trainer.ClusterTrainingRuntime) { nodePod(s).Spec.InitContainers[0].RestartPolicy = nil }, "not a native sidecar"},
		{"envFrom", func(s *trainer.ClusterTrainingRuntime) {
			node(s).EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nccl"}}}}
		}, "uses envFrom"},
		{"NCCL variable from a pod field", func(s *trainer.ClusterTrainingRuntime) {
			node(s).Env = append(node(s).Env, corev1.EnvVar{Name: "NCCL_HOSTID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
		}, "NCCL_HOSTID comes from a field of its own pod"},
		{"non-root user", func(s *trainer.ClusterTrainingRuntime) {
			nodePod(s).Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
		}, "runs as user 1000"},
		{"runAsNonRoot", func(s *trainer.ClusterTrainingRuntime) {
			node(s).SecurityContext.RunAsNonRoot = ptr.To(true)
		}, "sets runAsNonRoot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := shippedRuntime(t)
			tc.edit(s)
			_, err := Derive(s, testParams())
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrShipped) {
				t.Errorf("error does not wrap ErrShipped: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "tcpxogen render runtime") {
				t.Errorf("error %q lacks %q or the remedy", err, tc.want)
			}
		})
	}
	t.Run("nil", func(t *testing.T) {
		if _, err := Derive(nil, testParams()); !errors.Is(err, ErrShipped) {
			t.Errorf("err = %v, want ErrShipped", err)
		}
	})
	// A container-level root user overrides a pod-level non-root one.
	t.Run("container overrides pod user", func(t *testing.T) {
		s := shippedRuntime(t)
		nodePod(s).Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
		node(s).SecurityContext.RunAsUser = ptr.To[int64](0)
		if _, err := Derive(s, testParams()); err != nil {
			t.Errorf("root container in a non-root pod refused: %v", err)
		}
	})
}

// TestGoldenRunsFromTheInstallerImage: Google's samples run nccl-tests from
// the installer image (its MPI build, sshd on port 222); so does the
// committed benchmark, with no example image left in it.
func TestGoldenRunsFromTheInstallerImage(t *testing.T) {
	pins := shipped.Facts()
	p := ParamsFor(pins)
	p.Namespace = GoldenNamespace
	rt := derive(t, shippedRuntime(t), p)
	node := container(t, rjob(t, rt, constants.Node).Template.Spec.Template.DeepCopy(), runtimes.NodeContainer)
	launcher := launcherOf(t, rt)
	for what, img := range map[string]string{"node": node.Image, "launcher": launcher.Image} {
		if img != pins.InstallerImage {
			t.Errorf("%s image %q, want the pinned installer image %q", what, img, pins.InstallerImage)
		}
	}
	if !slices.Contains(launcher.Args, pins.AllReducePerfMPI) || !strings.Contains(pins.AllReducePerfMPI, "/nccl-tests-mpi/") {
		t.Errorf("launcher runs %q, want the MPI build %s", launcher.Args, pins.AllReducePerfMPI)
	}
	if pins.SSHDPort != 222 {
		t.Errorf("generated sshd port %d; the published image's sshd_config sets 222", pins.SSHDPort)
	}
	golden, err := Golden(shippedRuntime(t), pins)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(golden), "example@sha256") || strings.Contains(string(golden), "registry.example") {
		t.Error("the benchmark golden still carries an example image")
	}
}

// Google's MPI entry (the installer image's
// /scripts/demo_mpi_entry_with_config_profile.sh, run in every rank by
// Google's gpudirect-tcpxo/nccl-test.yaml) runs `ulimit -n 1048576` before
// the benchmark; every derived rank does too, through /bin/sh, right before
// all_reduce_perf.
func TestRanksRaiseTheOpenFilesLimit(t *testing.T) {
	lc := launcherOf(t, derive(t, shippedRuntime(t), testParams()))
	i := slices.Index(lc.Args, tcpxo.AllReducePerfMPI)
	if i < 3 || !slices.Equal(lc.Args[i-3:i], []string{"/bin/sh", "-c", RankPrelude}) {
		t.Fatalf("mpirun program = %q, want /bin/sh -c <rank prelude> right before %s", lc.Args, tcpxo.AllReducePerfMPI)
	}
	if !strings.HasPrefix(RankPrelude, "ulimit -n 1048576 ") {
		t.Errorf("rank prelude %q does not start with Google's ulimit -n 1048576", RankPrelude)
	}
}

// The prelude runs in a real shell: it raises the soft limit to 1048576 when
// the hard limit allows, and otherwise warns on stderr and raises it to the
// hard limit, going on like Google's entry (bash without -e).
func TestRankPreludeInAShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	run := func(hard string) (string, string) {
		t.Helper()
		// Lower the hard limit first where asked, then run the prelude as
		// a rank does: $0 and "$@" are the program it execs.
		outer := `exec "$0" -c "$PRELUDE" sh -c 'ulimit -n'`
		if hard != "" {
			outer = "ulimit -n " + hard + " && ulimit -Hn " + hard + " && " + outer
		}
		cmd := exec.Command(sh, "-c", outer, sh)
		cmd.Env = []string{"PRELUDE=" + RankPrelude, "PATH=/usr/bin:/bin"}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("sh: %v; stderr %q", err, stderr.String())
		}
		return strings.TrimSpace(stdout.String()), stderr.String()
	}
	out, errOut := run("")
	var hard syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &hard); err != nil {
		t.Fatal(err)
	}
	if hard.Max >= RankOpenFiles && (out != "1048576" || errOut != "") {
		t.Errorf("hard limit %d: rank's limit %q, stderr %q; want 1048576 and no warning", hard.Max, out, errOut)
	}
	if hard.Max < RankOpenFiles && (out != strconv.FormatUint(hard.Max, 10) || !strings.Contains(errOut, "below the 1048576")) {
		t.Errorf("hard limit %d: rank's limit %q, stderr %q; want the hard limit and the warning", hard.Max, out, errOut)
	}
	out, errOut = run("4096")
	if out != "4096" || !strings.Contains(errOut, "open-files hard limit is 4096, below the 1048576") {
		t.Errorf("hard limit 4096: rank's limit %q, stderr %q; want 4096 and the warning", out, errOut)
	}
}
