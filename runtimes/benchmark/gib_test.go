package benchmark

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

// gibShipped is the gIB runtime shipped for machine type mt, as the goldens
// carry it (Google's network names).
func gibShipped(t testing.TB, mt string) *trainer.ClusterTrainingRuntime {
	t.Helper()
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: runtimes.ExampleRDMAInterfaces(), MachineType: mt})
	if err != nil {
		t.Fatalf("building the gIB runtime for %s: %v", mt, err)
	}
	return rt
}

func gibParams(mt, collective string) Params {
	p := GIBParamsFor(shipped.GIBFacts(), mt, collective)
	p.Namespace = testNamespace
	return p
}

func nodePodOf(t testing.TB, rt *trainer.TrainingRuntime) *corev1.PodTemplateSpec {
	t.Helper()
	return &rjob(t, rt, constants.Node).Template.Spec.Template
}

// The gIB benchmark's node pod carries the shipped gIB wiring of its
// machine type element by element: the multi-network annotations, the
// machine's affinity, the host mounts and volumes, every variable
// set_nccl_env.sh exports on that machine (and LD_LIBRARY_PATH), all eight
// GPUs, and the node container first; the launcher forwards every one of
// those variables to the ranks.
func TestGIBBenchmarkCarriesTheShippedWiring(t *testing.T) {
	pins := shipped.GIBFacts()
	for _, mt := range fabric.GIB.MachineTypeNames() {
		t.Run(mt, func(t *testing.T) {
			s := gibShipped(t, mt)
			bench := derive(t, s, gibParams(mt, ""))
			sp, err := wiring.RuntimePodTemplate(s, constants.Node)
			if err != nil {
				t.Fatal(err)
			}
			bp := nodePodOf(t, bench)
			for _, k := range []string{runtimes.AnnotationDefaultInterface, runtimes.AnnotationInterfaces} {
				if bp.Annotations[k] == "" || bp.Annotations[k] != sp.Annotations[k] {
					t.Errorf("annotation %s = %q, shipped %q", k, bp.Annotations[k], sp.Annotations[k])
				}
			}
			if !reflect.DeepEqual(bp.Spec.Affinity, sp.Spec.Affinity) || bp.Spec.Affinity == nil {
				t.Errorf("affinity %+v, shipped %+v", bp.Spec.Affinity, sp.Spec.Affinity)
			}
			if !strings.Contains(mustJSON(t, bp.Spec.Affinity), `"`+mt+`"`) {
				t.Errorf("affinity does not select %s: %s", mt, mustJSON(t, bp.Spec.Affinity))
			}
			if !reflect.DeepEqual(bp.Spec.Volumes, sp.Spec.Volumes) || len(bp.Spec.Volumes) != 3 {
				t.Errorf("volumes %+v, shipped %+v", bp.Spec.Volumes, sp.Spec.Volumes)
			}
			if bp.Spec.Containers[0].Name != runtimes.NodeContainer {
				t.Errorf("first container %q: GKE gives RDMA device files only to the first", bp.Spec.Containers[0].Name)
			}
			node, want := &bp.Spec.Containers[0], &sp.Spec.Containers[0]
			if !reflect.DeepEqual(node.VolumeMounts, want.VolumeMounts) {
				t.Errorf("mounts %+v, shipped %+v", node.VolumeMounts, want.VolumeMounts)
			}
			for _, m := range []string{runtimes.LibMountPath, runtimes.GIBMountPath, "/dev/shm"} {
				if !slices.ContainsFunc(node.VolumeMounts, func(v corev1.VolumeMount) bool { return v.MountPath == m }) {
					t.Errorf("no mount at %s", m)
				}
			}
			if !reflect.DeepEqual(node.Resources, want.Resources) || node.Resources.Limits.Name(runtimes.GPUResource, "").Value() != 8 {
				t.Errorf("resources %+v, shipped %+v", node.Resources, want.Resources)
			}
			if !reflect.DeepEqual(node.Env, want.Env) {
				t.Errorf("env %+v, shipped %+v", node.Env, want.Env)
			}
			prof, ok := pins.Profile(mt)
			if !ok || len(prof) == 0 {
				t.Fatalf("no extracted env for %s", mt)
			}
			launcher := launcherOf(t, bench)
			fwd := xNames(launcher.Args)
			for _, v := range append([]facts.EnvVar{{Name: "LD_LIBRARY_PATH", Value: pins.LibDir}}, prof...) {
				if got := envValues(node.Env)[v.Name]; got != v.Value {
					t.Errorf("node %s = %q, set_nccl_env.sh on %s exports %q", v.Name, got, mt, v.Value)
				}
				if _, ok := fwd[v.Name]; !ok {
					t.Errorf("launcher does not forward %s (-x) to the ranks", v.Name)
				}
				if got := envValues(launcher.Env)[v.Name]; got != v.Value {
					t.Errorf("launcher %s = %q, want %q", v.Name, got, v.Value)
				}
			}
			if diffs := WiringEqual(s, bench); len(diffs) > 0 {
				t.Errorf("WiringEqual: %s", strings.Join(diffs, "; "))
			}
			if bench.Name != "nccl-tests-rdma-"+mt || bench.Annotations[AnnotationDerivedFrom] != "ClusterTrainingRuntime/torch-distributed-rdma-"+mt {
				t.Errorf("benchmark %s derived from %s", bench.Name, bench.Annotations[AnnotationDerivedFrom])
			}
		})
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

// The gIB benchmark runs from the pinned diagnostic image: sshd on the port
// its sshd_config sets, the launcher dialing it, the MPI build of the named
// collective from 1K to 8G as Google's test runs it, each rank the perf
// binary itself (no TCPXO open-files prelude).
func TestGIBBenchmarkRunsTheDiagnosticImage(t *testing.T) {
	pins := shipped.GIBFacts()
	mt := fabric.GIB.MachineTypeNames()[0]
	for _, tc := range []struct{ collective, perf string }{
		{"", pins.AllGatherPerfMPI},
		{AllGather, pins.AllGatherPerfMPI},
		{AllReduce, pins.AllReducePerfMPI},
	} {
		t.Run("collective "+tc.collective, func(t *testing.T) {
			bench := derive(t, gibShipped(t, mt), gibParams(mt, tc.collective))
			node := &nodePodOf(t, bench).Spec.Containers[0]
			launcher := launcherOf(t, bench)
			for what, img := range map[string]string{"node": node.Image, "launcher": launcher.Image} {
				if img != pins.DiagnosticImage || img == "" {
					t.Errorf("%s image %q, want the pinned diagnostic image %q", what, img, pins.DiagnosticImage)
				}
			}
			port := strconv.Itoa(pins.SSHDPort)
			if pins.SSHDPort != 222 || !hasSeq(node.Args, "-p", port) || node.ReadinessProbe.TCPSocket.Port.IntValue() != pins.SSHDPort {
				t.Errorf("sshd %q, probe %+v: want the diagnostic image's port %d (222)", node.Args, node.ReadinessProbe, pins.SSHDPort)
			}
			rsh := launcher.Args[slices.Index(launcher.Args, "plm_rsh_args")+1]
			if !strings.Contains(rsh, "-p "+port) {
				t.Errorf("mpirun ssh args %q do not dial %s", rsh, port)
			}
			tail := []string{tc.perf, "-b", "1K", "-e", "8G", "-f", "2", "-g", "1"}
			if !strings.Contains(tc.perf, "/nccl-tests-mpi/") || !slices.Equal(launcher.Args[len(launcher.Args)-len(tail):], tail) {
				t.Errorf("mpirun program %q, want it to end with %q", launcher.Args, tail)
			}
			if i := slices.Index(launcher.Args, tc.perf); i < 1 || launcher.Args[i-1] == RankPrelude || slices.Contains(launcher.Args, RankPrelude) {
				t.Errorf("a gIB rank runs %s directly; args %q", tc.perf, launcher.Args)
			}
		})
	}
}

// What cannot be a gIB benchmark is refused: a collective it does not run,
// a perf binary of another collective, a shipped runtime whose node
// container is not first; and TCPXO's benchmark runs all_reduce only.
func TestGIBBenchmarkRefusals(t *testing.T) {
	mt := fabric.GIB.MachineTypeNames()[1]
	for _, tc := range []struct {
		name    string
		shipped func() *trainer.ClusterTrainingRuntime
		params  func() Params
		target  error
		want    []string
	}{
		{"unknown collective", func() *trainer.ClusterTrainingRuntime { return gibShipped(t, mt) },
			func() Params { return gibParams(mt, "broadcast") }, ErrParams,
			[]string{`collective "broadcast": the gIB benchmark runs all_gather or all_reduce`}},
		{"perf binary of another collective", func() *trainer.ClusterTrainingRuntime { return gibShipped(t, mt) },
			func() Params { p := gibParams(mt, AllReduce); p.Perf = shipped.GIBFacts().AllGatherPerfMPI; return p }, ErrParams,
			[]string{"all_reduce_perf", "is another binary"}},
		{"node not first", func() *trainer.ClusterTrainingRuntime {
			s := gibShipped(t, mt)
			pod := &s.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template
			pod.Spec.Containers = append([]corev1.Container{{Name: "sidecar", Image: "x"}}, pod.Spec.Containers...)
			return s
		}, func() Params { return gibParams(mt, "") }, ErrShipped,
			[]string{`first container is "sidecar", not "node"`, "RDMA device files", "tcpxogen render runtime --fabric gib"}},
		{"TCPXO all_gather", func() *trainer.ClusterTrainingRuntime { return shippedRuntime(t) },
			func() Params { p := testParams(); p.Collective = AllGather; return p }, ErrParams,
			[]string{`collective "all_gather": the TCPXO benchmark runs all_reduce`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := Derive(tc.shipped(), tc.params())
			if err == nil {
				t.Fatalf("derived %s", rt.Name)
			}
			if !errors.Is(err, tc.target) {
				t.Errorf("error does not wrap %v: %v", tc.target, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// The gIB benchmark passes the API server's schema and the trainer's
// webhook, and the trainer's MPI plugin realizes it with one slot per GPU
// and the node pod's wiring intact (only the SSH key is added).
func TestGIBBenchmarkSurvivesTheTrainer(t *testing.T) {
	v, err := schema.NewTrainer()
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range fabric.GIB.MachineTypeNames() {
		t.Run(mt, func(t *testing.T) {
			bench := derive(t, gibShipped(t, mt), gibParams(mt, ""))
			data, err := yaml.Marshal(bench)
			if err != nil {
				t.Fatal(err)
			}
			reports, err := v.Validate(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) != 1 || !reports[0].OK() {
				t.Fatalf("schema: %d reports, first %v", len(reports), reports[0].Err())
			}
			res := realizeDerived(t, bench, nil)
			if hf := hostfile(t, res); strings.Count(hf, "slots=8") != int(DefaultNumNodes) {
				t.Errorf("hostfile %q: want %d hosts with 8 slots", hf, DefaultNumNodes)
			}
			realized, err := wiring.JobSetPodTemplate(res.JobSet, constants.Node)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range wiring.Diff(wiring.Of(nodePodOf(t, bench), runtimes.NodeContainer), wiring.Of(realized, runtimes.NodeContainer)) {
				if !c.IsAddition() || !strings.Contains(c.String(), constants.MPISSHAuthVolumeName) {
					t.Errorf("realized node pod: %s", c)
				}
			}
			if realized.Spec.Containers[0].Name != runtimes.NodeContainer {
				t.Errorf("realized first container %q", realized.Spec.Containers[0].Name)
			}
		})
	}
}

// The committed gIB benchmark goldens are the derivation from the shipped
// gIB runtimes, run from the diagnostic image with no example image left.
func TestGIBGoldenRunsFromTheDiagnosticImage(t *testing.T) {
	pins := shipped.GIBFacts()
	for _, mt := range fabric.GIB.MachineTypeNames() {
		golden, err := GIBGolden(gibShipped(t, mt), pins, mt)
		if err != nil {
			t.Fatal(err)
		}
		g := string(golden)
		for _, want := range []string{"namespace: " + GIBGoldenNamespace, "image: " + pins.DiagnosticImage, pins.AllGatherPerfMPI, "tcpxogen render benchmark --fabric gib --machine-type " + mt} {
			if !strings.Contains(g, want) {
				t.Errorf("%s golden lacks %q", mt, want)
			}
		}
		if strings.Contains(g, "registry.example") || strings.Contains(g, pins.InstallerImage) {
			t.Errorf("%s golden runs another image than the diagnostic one", mt)
		}
	}
}
