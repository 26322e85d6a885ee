package realize

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeflow/trainer/v2/pkg/constants"
)

func fixtureNodePod(t *testing.T) *corev1.PodTemplateSpec {
	t.Helper()
	pod, err := RuntimePodTemplate(FixtureTCPXORuntime(), constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func TestWiringOf(t *testing.T) {
	pod := fixtureNodePod(t)
	w := WiringOf(pod, constants.Node)
	if !w.HasNode || len(w.InitContainers) != 1 || len(w.Volumes) != 5 || len(w.NodeMounts) != 3 {
		t.Fatalf("wiring incomplete: %+v", w)
	}
	if !reflect.DeepEqual(w.NodeCaps, []corev1.Capability{"IPC_LOCK"}) {
		t.Errorf("NodeCaps = %v", w.NodeCaps)
	}
	if q := w.NodeResources.Limits["nvidia.com/gpu"]; q.String() != "8" {
		t.Errorf("gpu limit = %s", q.String())
	}
	// The result must not alias the template.
	w.Annotations["x"] = "y"
	w.NodeEnv[0].Value = "changed"
	if _, ok := pod.Annotations["x"]; ok || pod.Spec.Containers[0].Env[0].Value == "changed" {
		t.Error("WiringOf shares state with its input")
	}

	if got := WiringOf(nil, constants.Node); !reflect.DeepEqual(got, Wiring{}) {
		t.Errorf("WiringOf(nil) = %+v", got)
	}
	other := WiringOf(pod, "no-such-container")
	if other.HasNode || other.NodeEnv != nil || len(other.InitContainers) != 1 {
		t.Errorf("missing node container: %+v", other)
	}
}

func TestDiffIdentical(t *testing.T) {
	w := WiringOf(fixtureNodePod(t), constants.Node)
	if got := Diff(w, WiringOf(fixtureNodePod(t), constants.Node)); len(got) != 0 {
		t.Errorf("Diff of identical wiring = %v", got)
	}
}

func TestDiff(t *testing.T) {
	runtime := WiringOf(fixtureNodePod(t), constants.Node)

	pod := fixtureNodePod(t)
	delete(pod.Annotations, "devices.gke.io/container.tcpxo-daemon")
	pod.Annotations["networking.gke.io/default-interface"] = "eth1"
	pod.Annotations["example.com/new"] = "v"
	side := &pod.Spec.InitContainers[0]
	side.Image = "other:1"
	side.RestartPolicy = nil
	side.SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: "extra", Image: "busybox"})
	pod.Spec.Volumes = pod.Spec.Volumes[1:] // drops nvidia-install-dir-host
	pod.Spec.Volumes[0].HostPath.Path = "/other-sys"
	node := &pod.Spec.Containers[0]
	node.Env = append(node.Env[:8], node.Env[9:]...) // drops NCCL_DEBUG (index 8 of FixtureNodeEnv)
	node.Env[1].Value = "eth1"                       // NCCL_FASTRAK_IFNAME
	node.Env = append(node.Env, corev1.EnvVar{Name: "RANK", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
	node.VolumeMounts[1].ReadOnly = false // /usr/local/nvidia
	node.VolumeMounts = node.VolumeMounts[1:]
	node.SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
	node.Resources = corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), corev1.ResourceCPU: resource.MustParse("8")},
		Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4000m")}, // 4, written differently
		Claims:   []corev1.ResourceClaim{{Name: "c", Request: "r"}},
	}

	got := Diff(runtime, WiringOf(pod, constants.Node))
	want := []Change{
		{What: AnnotationLost, Path: "annotation devices.gke.io/container.tcpxo-daemon", From: fixtureDaemonDevices()},
		{What: AnnotationChanged, Path: "annotation networking.gke.io/default-interface", From: "eth0", To: "eth1"},
		{What: AnnotationAdded, Path: "annotation example.com/new", To: "v"},
		{What: InitContainerChanged, Path: "initContainer tcpxo-daemon image", From: fixtureDaemonImage, To: "other:1"},
		{What: InitContainerChanged, Path: "initContainer tcpxo-daemon restartPolicy", From: "Always"},
		{What: CapabilityLost, Path: "initContainer tcpxo-daemon capability NET_BIND_SERVICE"},
		{What: InitContainerAdded, Path: "initContainer extra", To: "busybox"},
		{What: VolumeLost, Path: "volume nvidia-install-dir-host", From: "hostPath:/home/kubernetes/bin/nvidia"},
		{What: VolumeChanged, Path: "volume sys", From: "hostPath:/sys", To: "hostPath:/other-sys"},
		{What: EnvLost, Path: "env NCCL_DEBUG", From: "WARN"},
		{What: EnvOverridden, Path: "env NCCL_FASTRAK_IFNAME", From: "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8", To: "eth1"},
		{What: EnvAdded, Path: "env RANK", To: "fieldRef:metadata.name"},
		{What: MountLost, Path: "mount /dev/shm", From: "dshm"},
		{What: MountChanged, Path: "mount /usr/local/nvidia", From: "nvidia-install-dir-host (ro)", To: "nvidia-install-dir-host"},
		{What: CapabilityLost, Path: "capability IPC_LOCK"},
		{What: CapabilityAdded, Path: "capability SYS_ADMIN"},
		{What: ResourceChanged, Path: "limits nvidia.com/gpu", From: "8", To: "4"},
		{What: ResourceAdded, Path: "limits cpu", To: "8"},
		{What: ResourceChanged, Path: "requests nvidia.com/gpu", From: "8", To: "4"},
		{What: ResourceAdded, Path: "claims c", To: "r"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff:\n got %d changes:", len(got))
		for _, c := range got {
			t.Errorf("   %s", c)
		}
		t.Errorf(" want %d changes:", len(want))
		for _, c := range want {
			t.Errorf("   %s", c)
		}
	}
}

func TestDiffNodeContainerLost(t *testing.T) {
	runtime := WiringOf(fixtureNodePod(t), constants.Node)
	pod := fixtureNodePod(t)
	pod.Spec.Containers[0].Name = "renamed"
	got := Diff(runtime, WiringOf(pod, constants.Node))
	if len(got) != 1 || got[0].What != NodeContainerLost {
		t.Errorf("Diff = %v, want only %q", got, NodeContainerLost)
	}
}

func TestDiffInitContainerOtherField(t *testing.T) {
	runtime := WiringOf(fixtureNodePod(t), constants.Node)
	pod := fixtureNodePod(t)
	pod.Spec.InitContainers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/run/health-check"}}}}
	got := Diff(runtime, WiringOf(pod, constants.Node))
	if len(got) != 1 || got[0].What != InitContainerChanged || got[0].Path != "initContainer tcpxo-daemon" {
		t.Errorf("Diff = %v, want one catch-all init container change", got)
	}
}

func TestEnvValue(t *testing.T) {
	for _, tc := range []struct {
		env  corev1.EnvVar
		want string
	}{
		{corev1.EnvVar{Value: "v"}, "v"},
		{corev1.EnvVar{ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}, "secretKeyRef:s/k"},
		{corev1.EnvVar{ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"}}}, "configMapKeyRef:c/k"},
		{corev1.EnvVar{ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "node", Resource: "limits.cpu"}}}, "resourceFieldRef:node/limits.cpu"},
	} {
		if got := EnvValue(&tc.env); got != tc.want {
			t.Errorf("EnvValue(%+v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

func TestChangeString(t *testing.T) {
	for c, want := range map[Change]string{
		{What: EnvOverridden, Path: "env NCCL_DEBUG", From: "WARN", To: "INFO"}: "env overridden: env NCCL_DEBUG (WARN -> INFO)",
		{What: ResourceLost, Path: "limits nvidia.com/gpu", From: "8"}:          "resource lost: limits nvidia.com/gpu (8 -> <none>)",
		{What: CapabilityLost, Path: "capability IPC_LOCK"}:                     "capability lost: capability IPC_LOCK",
	} {
		if got := c.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", c, got, want)
		}
	}
}

func TestPodTemplateLookups(t *testing.T) {
	if _, err := RuntimePodTemplate(FixtureTCPXORuntime(), "missing"); err == nil {
		t.Error("RuntimePodTemplate found a missing job")
	}
	if _, err := RuntimePodTemplate(nil, constants.Node); err == nil {
		t.Error("RuntimePodTemplate accepted nil")
	}
	if _, err := JobSetPodTemplate(nil, constants.Node); err == nil {
		t.Error("JobSetPodTemplate accepted nil")
	}
	mpi, err := RuntimePodTemplate(mustMPI(t), constants.Launcher)
	if err != nil || mpi.Spec.Containers[0].Command[0] != "mpirun" {
		t.Errorf("MPI launcher template = %v, %v", mpi, err)
	}
}

func TestSurvivalCategories(t *testing.T) {
	o := &Outcome{Changes: []Change{
		{What: CapabilityLost, Path: "initContainer tcpxo-daemon capability NET_ADMIN"},
		{What: EnvAdded, Path: "env X", To: "1"},
		{What: ResourceLost, Path: "limits nvidia.com/gpu", From: "8"},
		{What: EnvOverridden, Path: "env NCCL_DEBUG", From: "WARN", To: "INFO"},
	}}
	got := survival(o)
	for k, want := range map[string]bool{
		"sidecars": false, "node capabilities": true, "gpu limit": false, "gpu request": true,
		"node resources": false, "node env": false, "annotations": true, "volumes": true,
	} {
		if got[k] != want {
			t.Errorf("survives[%q] = %v, want %v", k, got[k], want)
		}
	}
	if len(got) != len(SurvivalCategories) {
		t.Errorf("survival has %d keys, want %d", len(got), len(SurvivalCategories))
	}
}

// Env order is wiring: the same variables in another order are one change,
// which Judge does not let pass as harmless.
func TestDiffEnvOrder(t *testing.T) {
	from := []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "$(A)"}, {Name: "C", Value: "3"}}
	to := []corev1.EnvVar{{Name: "B", Value: "$(A)"}, {Name: "A", Value: "1"}, {Name: "C", Value: "3"}}
	got := DiffEnv(from, to)
	want := []Change{{What: EnvReordered, Path: "env order from A", From: "A,B,C", To: "B,A,C"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DiffEnv = %+v, want %+v", got, want)
	}
	j := Judge(Wiring{HasNode: true, NodeEnv: from}, Wiring{HasNode: true, NodeEnv: to}, nil)
	if len(j) != 1 || !j[0].LosesFabric() {
		t.Errorf("Judge of a reordered env = %+v, want one change that loses the fabric", j)
	}
}
