package benchmark

import (
	"slices"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/runtimes"
)

func TestWiringEqualOnDerived(t *testing.T) {
	s := shippedRuntime(t)
	if d := WiringEqual(s, derive(t, s, testParams())); len(d) > 0 {
		t.Fatalf("WiringEqual(shipped, Derive(shipped)) = %q, want none", d)
	}
}

func benchNodePod(t testing.TB, rt *trainer.TrainingRuntime) *corev1.PodTemplateSpec {
	return &rjob(t, rt, constants.Node).Template.Spec.Template
}

func benchNode(t testing.TB, rt *trainer.TrainingRuntime) *corev1.Container {
	return container(t, benchNodePod(t, rt), runtimes.NodeContainer)
}

func removeEnv(env []corev1.EnvVar, name string) []corev1.EnvVar {
	return slices.DeleteFunc(env, func(e corev1.EnvVar) bool { return e.Name == name })
}

func setEnv(env []corev1.EnvVar, name, value string) {
	for i := range env {
		if env[i].Name == name {
			env[i].Value = value
		}
	}
}

// dropX removes "-x name" from argv.
func dropX(argv []string, name string) []string {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == "-x" && argv[i+1] == name {
			return slices.Delete(argv, i, i+2)
		}
	}
	return argv
}

// Each mutation of the benchmark changes one thing; WiringEqual must name
// it, in exactly as many lines as expected (no silent pass, no echo of one
// change through several comparisons).
func TestWiringEqualNamesEachDifference(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(t *testing.T, rt *trainer.TrainingRuntime)
		want  string
		lines int
	}{
		{"annotation dropped", func(t *testing.T, rt *trainer.TrainingRuntime) {
			delete(benchNodePod(t, rt).Annotations, runtimes.AnnotationInterfaces)
		}, "annotation lost: annotation networking.gke.io/interfaces", 1},
		{"NRI annotation changed", func(t *testing.T, rt *trainer.TrainingRuntime) {
			benchNodePod(t, rt).Annotations[runtimes.AnnotationDaemonDevices] = "- path: /dev/nvidia0\n"
		}, "annotation changed: annotation devices.gke.io/container.tcpxo-daemon", 1},
		{"daemon image changed", func(t *testing.T, rt *trainer.TrainingRuntime) {
			benchNodePod(t, rt).Spec.InitContainers[0].Image = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.20"
		}, "init container changed: initContainer tcpxo-daemon image", 1},
		{"daemon sidecar dropped", func(t *testing.T, rt *trainer.TrainingRuntime) {
			benchNodePod(t, rt).Spec.InitContainers = nil
		}, "init container lost: initContainer tcpxo-daemon", 1},
		{"daemon probe changed", func(t *testing.T, rt *trainer.TrainingRuntime) {
			benchNodePod(t, rt).Spec.InitContainers[0].StartupProbe.FailureThreshold = 1
		}, "initContainer tcpxo-daemon (runtime spec -> differs outside", 1},
		{"volume mount removed", func(t *testing.T, rt *trainer.TrainingRuntime) {
			n := benchNode(t, rt)
			n.VolumeMounts = slices.DeleteFunc(n.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == runtimes.LibMountPath })
		}, "mount lost: mount /usr/local/nvidia", 1},
		{"volume removed", func(t *testing.T, rt *trainer.TrainingRuntime) {
			p := benchNodePod(t, rt)
			p.Spec.Volumes = slices.DeleteFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "aperture-devices" })
		}, "volume lost: volume aperture-devices", 1},
		{"node env value changed", func(t *testing.T, rt *trainer.TrainingRuntime) {
			setEnv(benchNode(t, rt).Env, "NCCL_FASTRAK_NUM_FLOWS", "4")
		}, "env overridden: env NCCL_FASTRAK_NUM_FLOWS (2 -> 4)", 1},
		{"node env reordered", func(t *testing.T, rt *trainer.TrainingRuntime) {
			// Same names and values, another order: a $(VAR) reference
			// expands only from earlier entries, so this is other wiring.
			env := benchNode(t, rt).Env
			env[0], env[1] = env[1], env[0]
		}, "env reordered: env order from ", 1},
		{"node env removed", func(t *testing.T, rt *trainer.TrainingRuntime) {
			n := benchNode(t, rt)
			n.Env = removeEnv(n.Env, "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY")
		}, "env lost: env NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", 1},
		{"GPU count changed", func(t *testing.T, rt *trainer.TrainingRuntime) {
			n := benchNode(t, rt)
			n.Resources.Limits[runtimes.GPUResource] = resource.MustParse("4")
			n.Resources.Requests[runtimes.GPUResource] = resource.MustParse("4")
		}, "resource changed: limits nvidia.com/gpu (8 -> 4)", 2},
		{"capability dropped", func(t *testing.T, rt *trainer.TrainingRuntime) {
			benchNode(t, rt).SecurityContext.Capabilities.Add = nil
		}, "capability lost: capability IPC_LOCK", 1},
		{"privileged added", func(t *testing.T, rt *trainer.TrainingRuntime) {
			benchNode(t, rt).SecurityContext.Privileged = ptr.To(true)
		}, "spec.containers[name=node].securityContext.privileged: shipped absent vs benchmark true", 1},
		{"nodeSelector changed", func(t *testing.T, rt *trainer.TrainingRuntime) {
			benchNodePod(t, rt).Spec.NodeSelector[runtimes.AcceleratorLabel] = "nvidia-h100-80gb"
		}, `node selector changed: nodeSelector cloud.google.com/gke-accelerator (nvidia-h100-mega-80gb -> nvidia-h100-80gb)`, 1},
		{"toleration added", func(t *testing.T, rt *trainer.TrainingRuntime) {
			p := benchNodePod(t, rt)
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "example.com/spot", Operator: corev1.TolerationOpExists})
		}, "spec.tolerations: shipped absent vs benchmark [{", 1},
		{"extra container", func(t *testing.T, rt *trainer.TrainingRuntime) {
			p := benchNodePod(t, rt)
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
		}, "spec.containers[name=sidecar]: shipped absent vs benchmark {", 1},
		{"numProcPerNode changed", func(t *testing.T, rt *trainer.TrainingRuntime) {
			rt.Spec.MLPolicy.MPI.NumProcPerNode = ptr.To[int32](4)
		}, "numProcPerNode is 4, but the shipped node has 8 GPUs", 1},
		{"launcher stops forwarding", func(t *testing.T, rt *trainer.TrainingRuntime) {
			l := launcherOf(t, rt)
			l.Args = dropX(l.Args, "NCCL_FASTRAK_IFNAME")
		}, "does not forward NCCL_FASTRAK_IFNAME", 1},
		{"launcher value differs", func(t *testing.T, rt *trainer.TrainingRuntime) {
			setEnv(launcherOf(t, rt).Env, "NCCL_DEBUG", "INFO")
		}, `forwards NCCL_DEBUG="INFO", the shipped worker has "WARN"`, 1},
		{"launcher lacks a forwarded value", func(t *testing.T, rt *trainer.TrainingRuntime) {
			l := launcherOf(t, rt)
			l.Env = removeEnv(l.Env, "LD_LIBRARY_PATH")
		}, "forwards LD_LIBRARY_PATH but does not set it", 1},
		{"launcher sets value inline", func(t *testing.T, rt *trainer.TrainingRuntime) {
			l := launcherOf(t, rt)
			i := slices.Index(l.Args, "NCCL_PROTO")
			l.Args[i] = "NCCL_PROTO=Simple"
		}, `forwards NCCL_PROTO="Simple"`, 1},
		{"launcher forwards extra", func(t *testing.T, rt *trainer.TrainingRuntime) {
			l := launcherOf(t, rt)
			l.Args = slices.Insert(l.Args, 1, "-x", "NCCL_ALGO=Tree")
		}, "forwards NCCL_ALGO, which the shipped worker env does not set", 1},
		{"no launcher", func(t *testing.T, rt *trainer.TrainingRuntime) {
			rt.Spec.Template.Spec.ReplicatedJobs = rt.Spec.Template.Spec.ReplicatedJobs[:1]
		}, `benchmark launcher: runtime nccl-tests-tcpxo has no replicated job "launcher"`, 1},
		{"no node job", func(t *testing.T, rt *trainer.TrainingRuntime) {
			rt.Spec.Template.Spec.ReplicatedJobs = rt.Spec.Template.Spec.ReplicatedJobs[1:]
		}, `benchmark runtime: runtime nccl-tests-tcpxo has no replicated job "node"`, 1},
		{"node container renamed", func(t *testing.T, rt *trainer.TrainingRuntime) {
			benchNode(t, rt).Name = "sshd"
		}, "node container lost", 3}, // the lost container, and the remainder of the old name and the new
		{"not MPI", func(t *testing.T, rt *trainer.TrainingRuntime) {
			rt.Spec.MLPolicy.MPI = nil
		}, "has no mlPolicy.mpi", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := shippedRuntime(t)
			rt := derive(t, s, testParams())
			tc.edit(t, rt)
			d := WiringEqual(s, rt)
			found := slices.ContainsFunc(d, func(l string) bool { return strings.Contains(l, tc.want) })
			if !found || len(d) != tc.lines {
				t.Errorf("WiringEqual = %d line(s):\n  %s\nwant %d, one containing %q", len(d), strings.Join(d, "\n  "), tc.lines, tc.want)
			}
		})
	}
}

// What the benchmark owns may change freely: it is not wiring.
func TestWiringEqualIgnoresWhatTheBenchmarkRuns(t *testing.T) {
	s := shippedRuntime(t)
	rt := derive(t, s, testParams())
	n := benchNode(t, rt)
	n.Image = "registry.example/other:1@sha256:" + strings.Repeat("0", 64)
	n.Command, n.Args = []string{"/usr/sbin/sshd"}, []string{"-D"}
	n.ReadinessProbe, n.WorkingDir = nil, "/workspace"
	n.Ports = []corev1.ContainerPort{{Name: "ssh", ContainerPort: 22}}
	l := launcherOf(t, rt)
	l.Args = slices.DeleteFunc(l.Args, func(a string) bool { return a == "--bind-to" || a == "none" })
	if d := WiringEqual(s, rt); len(d) > 0 {
		t.Errorf("changes to what the benchmark runs reported as wiring: %q", d)
	}
}

// The comparison is against the shipped object given: a shipped runtime
// re-rendered for other networks no longer matches an old benchmark.
func TestWiringEqualFollowsTheShippedRuntime(t *testing.T) {
	s := shippedRuntime(t)
	rt := derive(t, s, testParams())
	other := s.DeepCopy()
	pod := &other.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template
	pod.Annotations[runtimes.AnnotationInterfaces] = strings.ReplaceAll(pod.Annotations[runtimes.AnnotationInterfaces], "example-gpu-nic-", "prod-gpu-nic-")
	setEnv(pod.Spec.Containers[0].Env, "NCCL_DEBUG", "INFO")

	d := WiringEqual(other, rt)
	for _, want := range []string{
		"annotation changed: annotation networking.gke.io/interfaces",
		"env overridden: env NCCL_DEBUG (INFO -> WARN)",
		`forwards NCCL_DEBUG="WARN", the shipped worker has "INFO"`,
	} {
		if !slices.ContainsFunc(d, func(l string) bool { return strings.Contains(l, want) }) {
			t.Errorf("WiringEqual lacks %q:\n  %s", want, strings.Join(d, "\n  "))
		}
	}
	if len(d) != 3 {
		t.Errorf("WiringEqual = %d lines, want 3:\n  %s", len(d), strings.Join(d, "\n  "))
	}
	if d := WiringEqual(other, derive(t, other, testParams())); len(d) > 0 {
		t.Errorf("re-derived benchmark differs: %q", d)
	}
}

func TestWiringEqualNil(t *testing.T) {
	s := shippedRuntime(t)
	if d := WiringEqual(nil, derive(t, s, testParams())); len(d) != 1 {
		t.Errorf("nil shipped: %q", d)
	}
	if d := WiringEqual(s, nil); len(d) != 1 {
		t.Errorf("nil benchmark: %q", d)
	}
}
