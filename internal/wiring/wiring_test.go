package wiring

import (
	"reflect"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// testPod is a small pod template carrying every kind of wiring the model
// knows: a made-up one, since these tests are about the differ, not about
// what ships (the realization proof and the coupling check judge that).
func testPod(*testing.T) *corev1.PodTemplateSpec {
	gpus := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
	node := corev1.Container{
		Name:      constants.Node,
		Resources: corev1.ResourceRequirements{Limits: gpus, Requests: gpus.DeepCopy()},
		SecurityContext: &corev1.SecurityContext{
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}},
		},
		Env: []corev1.EnvVar{
			{Name: "LD_LIBRARY_PATH", Value: "/usr/local/nvidia/lib64"},
			{Name: "NCCL_FASTRAK_IFNAME", Value: "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"},
			{Name: "NCCL_DEBUG", Value: "WARN"},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "dshm", MountPath: "/dev/shm"},
			{Name: "nvidia-install-dir-host", MountPath: "/usr/local/nvidia", ReadOnly: true},
			{Name: "aperture-devices", MountPath: "/dev/aperture_devices"},
		},
	}
	hostPath := func(name, path string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
	}
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			"networking.gke.io/default-interface":   "eth0",
			"devices.gke.io/container.tcpxo-daemon": testDevices,
		}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{
				Name:          "tcpxo-daemon",
				Image:         testDaemonImage,
				RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
				SecurityContext: &corev1.SecurityContext{
					Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_BIND_SERVICE"}},
				},
			}},
			Containers: []corev1.Container{node},
			Volumes: []corev1.Volume{
				hostPath("nvidia-install-dir-host", "/home/kubernetes/bin/nvidia"),
				hostPath("sys", "/sys"),
				hostPath("aperture-devices", "/dev/aperture_devices"),
				{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
			},
		},
	}
}

const (
	testDaemonImage = "registry.example/tcpxo-daemon:test"
	testDevices     = "- path: /dev/nvidia0\n"
)

func TestWiringOf(t *testing.T) {
	pod := testPod(t)
	w := Of(pod, constants.Node)
	if !w.HasNode || len(w.InitContainers) != 1 || len(w.Volumes) != 4 || len(w.NodeMounts) != 3 {
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

	if got := Of(nil, constants.Node); !reflect.DeepEqual(got, Wiring{}) {
		t.Errorf("WiringOf(nil) = %+v", got)
	}
	other := Of(pod, "no-such-container")
	if other.HasNode || other.NodeEnv != nil || len(other.InitContainers) != 1 {
		t.Errorf("missing node container: %+v", other)
	}
}

func TestDiffIdentical(t *testing.T) {
	w := Of(testPod(t), constants.Node)
	if got := Diff(w, Of(testPod(t), constants.Node)); len(got) != 0 {
		t.Errorf("Diff of identical wiring = %v", got)
	}
}

func TestDiff(t *testing.T) {
	runtime := Of(testPod(t), constants.Node)

	pod := testPod(t)
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
	node.Env = node.Env[:2]    // drops NCCL_DEBUG
	node.Env[1].Value = "eth1" // NCCL_FASTRAK_IFNAME
	node.Env = append(node.Env, corev1.EnvVar{Name: "RANK", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
	node.VolumeMounts[1].ReadOnly = false // /usr/local/nvidia
	node.VolumeMounts = node.VolumeMounts[1:]
	node.SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
	node.Resources = corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), corev1.ResourceCPU: resource.MustParse("8")},
		Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4000m")}, // 4, written differently
		Claims:   []corev1.ResourceClaim{{Name: "c", Request: "r"}},
	}

	got := Diff(runtime, Of(pod, constants.Node))
	want := []Change{
		{What: AnnotationLost, Path: "annotation devices.gke.io/container.tcpxo-daemon", From: testDevices},
		{What: AnnotationChanged, Path: "annotation networking.gke.io/default-interface", From: "eth0", To: "eth1"},
		{What: AnnotationAdded, Path: "annotation example.com/new", To: "v"},
		{What: InitContainerChanged, Path: "initContainer tcpxo-daemon image", From: testDaemonImage, To: "other:1"},
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
	runtime := Of(testPod(t), constants.Node)
	pod := testPod(t)
	pod.Spec.Containers[0].Name = "renamed"
	got := Diff(runtime, Of(pod, constants.Node))
	if len(got) != 1 || got[0].What != NodeContainerLost {
		t.Errorf("Diff = %v, want only %q", got, NodeContainerLost)
	}
}

func TestDiffInitContainerOtherField(t *testing.T) {
	runtime := Of(testPod(t), constants.Node)
	pod := testPod(t)
	pod.Spec.InitContainers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/run/health-check"}}}}
	got := Diff(runtime, Of(pod, constants.Node))
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
	rt := &trainer.ClusterTrainingRuntime{}
	rt.Spec.Template.Spec.ReplicatedJobs = []jobsetv1alpha2.ReplicatedJob{{Name: constants.Node}}
	if _, err := RuntimePodTemplate(rt, "missing"); err == nil {
		t.Error("RuntimePodTemplate found a missing job")
	}
	if _, err := RuntimePodTemplate(nil, constants.Node); err == nil {
		t.Error("RuntimePodTemplate accepted nil")
	}
	if _, err := JobSetPodTemplate(nil, constants.Node); err == nil {
		t.Error("JobSetPodTemplate accepted nil")
	}
	if pod, err := RuntimePodTemplate(rt, constants.Node); err != nil || pod != &rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template {
		t.Errorf("RuntimePodTemplate(node) = %p, %v; want the node job's template", pod, err)
	}
}
