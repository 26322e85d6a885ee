package runtimes

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/names"
)

// Component names; the coupling check and the docs refer to them. The
// installer's DaemonSet and container, the namespace and the pod label are
// in package names, which check cluster reads them from.
const (
	InjectorName = "device-injector"

	// PrepareContainer is the installer's host preparation step.
	PrepareContainer = "pre-installation"

	// installDir is where the installer entrypoint (`install
	// --install-nccl`) puts the plugin and NCCL libraries.
	installDir = "/var/lib/tcpxo/lib64"
	// hostBinDir is mounted at /usr/local in the installer container, so
	// LibMountPath inside it is HostLibDir on the host.
	hostBinDir = "/home/kubernetes/bin"

	// GPULabel is set by GKE on every GPU node; the NRI device injector runs
	// on all of them, as Google's manifest does.
	GPULabel = "cloud.google.com/gke-gpu"
)

// HostPrepareScript runs on the node itself (nsenter into PID 1's
// namespaces, so the tools are the node's, not the image's). It prepares
// what the pods' wiring refers to and nothing creates otherwise, after
// Google's installer DaemonSet (container-engine-accelerators
// gpudirect-tcpxo/nccl-tcpxo-installer.yaml, "pre-installation"):
//
//   - accept inbound TCP, which the GPU NICs' control traffic needs; checked
//     first so a re-run does not stack duplicate rules;
//   - load import-helper, which creates /dev/dmabuf_import_helper: the
//     daemon's NRI annotation lists it, and the injector refuses to create
//     the daemon container when an annotated device is missing;
//   - bind-mount every GPU NIC aperture (PCI 1ae0:0084) under
//     /dev/aperture_devices and make it readable, its resource files
//     writable: with NCCL_FASTRAK_USE_LLCM=1 the plugin fails on an empty
//     directory. Unmounting first keeps re-runs idempotent.
//
// POSIX sh (Google's uses bash process substitution under sh -c), and it
// fails when the node has no aperture device instead of leaving an empty
// directory for the plugin to fail on later.
const HostPrepareScript = `set -eu
iptables -C INPUT -p tcp -m tcp -j ACCEPT 2>/dev/null || iptables -I INPUT -p tcp -m tcp -j ACCEPT
modprobe import-helper
mkdir -p ` + ApertureDevices + `
found=0
for bdf in $(lspci -nn -D | awk '/1ae0:0084/ {print $1}'); do
  target=` + ApertureDevices + `/$bdf
  mkdir -p "$target"
  umount -R "$target" 2>/dev/null || true
  mount --bind "$(readlink -f "/sys/bus/pci/devices/$bdf")" "$target"
  found=$((found + 1))
done
if [ "$found" -eq 0 ]; then
  echo "no GPU NIC aperture (PCI 1ae0:0084) on this node: ` + ApertureDevices + ` would stay empty and NCCL would fail; is this an A3 Mega node?" >&2
  exit 1
fi
chmod -R a+r ` + ApertureDevices + `/
chmod a+rw ` + ApertureDevices + `/*/resource*
echo "host prepared: $found GPU NIC apertures under ` + ApertureDevices + `"
`

// Components returns the cluster-side DaemonSets pinned from the same BOM as
// the runtime, so the installer a cluster runs and the runtime users
// reference cannot disagree.
func Components(in *Inputs) []*appsv1.DaemonSet {
	return []*appsv1.DaemonSet{installer(in), injector(in)}
}

// nodeAffinity requires every one of reqs (one term, ANDed).
func nodeAffinity(reqs ...corev1.NodeSelectorRequirement) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: reqs,
		}}},
	}}
}

// daemonSet is a node-level system DaemonSet: on the host's network and PID
// namespaces, tolerating every taint, never preempted.
func daemonSet(name string, affinity *corev1.Affinity, spec corev1.PodSpec) *appsv1.DaemonSet {
	labels := map[string]string{names.AppLabel: name}
	spec.Affinity = affinity
	spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	spec.PriorityClassName = "system-node-critical"
	spec.HostNetwork, spec.HostPID = true, true
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: names.ComponentsNamespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template:       corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

func cpuRequest(milli int64) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}}
}

// InstallCommand is the installer container's shell program: the image's
// entrypoint with `install --install-nccl`, then a copy of what it installed
// to the host directory workload pods mount at LibMountPath.
func InstallCommand(p facts.Facts) string {
	quoted := make([]string, len(p.InstallerEntrypoint))
	for i, a := range p.InstallerEntrypoint {
		quoted[i] = shellQuote(a)
	}
	return strings.Join([]string{
		"set -eu",
		strings.Join(quoted, " ") + " install --install-nccl",
		"mkdir -p " + p.LibDir,
		"cp -r " + installDir + "/. " + p.LibDir,
		`echo "installed into ` + HostLibDir + `/lib64 on the host"`,
	}, "\n") + "\n"
}

// shellQuote quotes s for sh unless it is made only of safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// installer prepares the node (HostPrepareScript, on the host), runs the
// plugin installer image's entrypoint and copies its output to the host
// directory workload pods mount at /usr/local/nvidia. Both steps are init
// containers; pause keeps the pod (and so the node's "installed" state)
// visible. The preparation uses the pinned installer image (Ubuntu, with sh
// and nsenter) rather than the unpinned ubuntu image Google's sample uses.
func installer(in *Inputs) *appsv1.DaemonSet {
	return daemonSet(names.InstallerDaemonSet, nodeAffinity(corev1.NodeSelectorRequirement{Key: AcceleratorLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{AcceleratorValue}}), corev1.PodSpec{
		InitContainers: []corev1.Container{
			{
				Name:            PrepareContainer,
				Image:           in.Facts.InstallerImage,
				Command:         []string{"nsenter", "-at", "1", "--", "sh", "-c", HostPrepareScript},
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			},
			{
				Name:            names.InstallerContainer,
				Image:           in.Facts.InstallerImage,
				Command:         []string{"/bin/sh", "-c", InstallCommand(in.Facts)},
				Resources:       cpuRequest(150),
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "var-lib", MountPath: "/var/lib"},
					{Name: "library-dir-host", MountPath: "/usr/local"},
				},
			},
		},
		Containers: []corev1.Container{{Name: "pause", Image: in.BOM.Images.Pause.Reference}},
		Volumes: []corev1.Volume{
			hostPathVolume("var-lib", "/var/lib"),
			hostPathVolume("library-dir-host", hostBinDir),
		},
	})
}

// injector is the NRI device injector that honours the
// devices.gke.io/container.* annotations, so the daemon gets GPU devices
// without being privileged. It mounts the host's /dev: devices created
// after it starts (nvidia-uvm, dmabuf_import_helper) are otherwise
// invisible to it, and it fails container creation when an annotated path
// does not exist (Google's nri-device-injector.yaml, since 2024-04-30).
func injector(in *Inputs) *appsv1.DaemonSet {
	return daemonSet(InjectorName, nodeAffinity(corev1.NodeSelectorRequirement{Key: GPULabel, Operator: corev1.NodeSelectorOpExists}), corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:            InjectorName,
			Image:           in.BOM.Images.NRIInjector.Reference,
			Resources:       cpuRequest(150),
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "dev", MountPath: "/dev"},
				{Name: "nri", MountPath: "/var/run/nri"},
			},
		}},
		Volumes: []corev1.Volume{hostPathVolume("nri", "/var/run/nri"), hostPathVolume("dev", "/dev")},
	})
}
