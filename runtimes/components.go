package runtimes

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Component names; the coupling check and the docs refer to them.
const (
	InstallerName   = "nccl-tcpxo-installer"
	InjectorName    = "device-injector"
	SystemNamespace = "kube-system"

	// installDir is where the installer entrypoint (`install
	// --install-nccl`) puts the plugin and NCCL libraries.
	installDir = "/var/lib/tcpxo"
)

// Components returns the cluster-side DaemonSets pinned from the same BOM as
// the runtime, so the installer a cluster runs and the runtime users
// reference cannot disagree.
func Components(in *Inputs) []*appsv1.DaemonSet {
	return []*appsv1.DaemonSet{installer(in), injector(in)}
}

// gpuPoolAffinity restricts a DaemonSet to A3 Mega nodes.
func gpuPoolAffinity() *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: AcceleratorLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{AcceleratorValue}}},
		}}},
	}}
}

func daemonSet(name string, spec corev1.PodSpec) *appsv1.DaemonSet {
	labels := map[string]string{"k8s-app": name}
	spec.Affinity = gpuPoolAffinity()
	spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	spec.PriorityClassName = "system-node-critical"
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: SystemNamespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template:       corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

// installer runs the plugin installer image's entrypoint, then copies its
// output to the host directory workload pods mount at /usr/local/nvidia.
// Both steps are init containers; pause keeps the pod (and so the node's
// "installed" state) visible.
func installer(in *Inputs) *appsv1.DaemonSet {
	mounts := []corev1.VolumeMount{
		{Name: "tcpxo-install", MountPath: installDir},
		{Name: "nvidia-install-dir-host", MountPath: LibMountPath},
	}
	return daemonSet(InstallerName, corev1.PodSpec{
		InitContainers: []corev1.Container{
			{
				Name:            "nccl-tcpxo-installer",
				Image:           in.Pins.InstallerImage,
				Command:         []string{"/scripts/container_entry.sh"},
				Args:            []string{"install", "--install-nccl"},
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				VolumeMounts:    mounts[:1],
			},
			{
				Name:         "copy-to-host",
				Image:        in.Pins.InstallerImage,
				Command:      []string{"/bin/sh", "-c"},
				Args:         []string{"mkdir -p " + in.Pins.LibDir + " && cp -a " + installDir + "/lib64/. " + in.Pins.LibDir + "/"},
				VolumeMounts: mounts,
			},
		},
		Containers: []corev1.Container{{Name: "pause", Image: in.BOM.Images.Pause.Reference}},
		Volumes: []corev1.Volume{
			hostPathVolume("tcpxo-install", installDir),
			hostPathVolume("nvidia-install-dir-host", HostLibDir),
		},
	})
}

// injector is the NRI device injector that honours the
// devices.gke.io/container.* annotations, so the daemon gets GPU devices
// without being privileged.
func injector(in *Inputs) *appsv1.DaemonSet {
	return daemonSet(InjectorName, corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:            InjectorName,
			Image:           in.BOM.Images.NRIInjector.Reference,
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			VolumeMounts:    []corev1.VolumeMount{{Name: "nri", MountPath: "/var/run/nri"}},
		}},
		Volumes: []corev1.Volume{hostPathVolume("nri", "/var/run/nri")},
	})
}
