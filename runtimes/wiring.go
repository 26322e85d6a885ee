package runtimes

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// Names of the wiring, shared by the runtime, the benchmark derivation and
// the documentation.
const (
	NodeContainer = "node"

	AnnotationDefaultInterface = "networking.gke.io/default-interface"
	AnnotationInterfaces       = "networking.gke.io/interfaces"
	// AnnotationDaemonDevices asks the NRI device injector to give the
	// daemon the GPU and dmabuf devices without making it privileged.
	AnnotationDaemonDevices = "devices.gke.io/container." + names.DaemonContainer

	// GPUResource and GPUsPerNode: an a3-megagpu-8g node has eight H100s,
	// and TCPXO assigns one GPU NIC per GPU.
	GPUResource = corev1.ResourceName("nvidia.com/gpu")
	GPUsPerNode = 8

	// AcceleratorLabel selects A3 Mega nodes by default.
	AcceleratorLabel = "cloud.google.com/gke-accelerator"
	AcceleratorValue = "nvidia-h100-mega-80gb"

	// LibMountPath is where workload pods see the installed plugin; LibDir
	// (NCCL_LIB_DIR) is its lib64.
	LibMountPath = "/usr/local/nvidia"
	// HostLibDir is where the installer DaemonSet puts the plugin on the host.
	HostLibDir = "/home/kubernetes/bin/nvidia"

	ApertureDevices = "/dev/aperture_devices"

	// HealthCheckFile is written by the daemon once initialised (~30 s); no
	// underscore in the file name.
	HealthCheckFile = "/run/health-check"

	// DaemonHops is the daemon's only flag: --num_nics was retired in
	// v1.0.14/v1.0.20 (accepted, no effect) and is deliberately absent, as
	// are --uid and --alsologtostderr (retired from v1.0.21) and
	// --enforce_kernel_ipv6_support (the v1.0.21 daemon exits on it); bom-check's
	// no-retired-daemon-flags holds the goldens to that.
	DaemonHops = "--num_hops=2"
)

// Volume names.
const (
	volLibraries = "libraries"
	volSys       = "sys"
	volProcSys   = "proc-sys"
	volAperture  = "aperture-devices"
	volShm       = "dshm"
)

// daemonDevices are the devices the NRI injector adds to the daemon.
func daemonDevices() []string {
	devs := make([]string, 0, GPUsPerNode+3)
	for i := range GPUsPerNode {
		devs = append(devs, fmt.Sprintf("/dev/nvidia%d", i))
	}
	return append(devs, "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/dmabuf_import_helper")
}

// DaemonDevicesAnnotation is the NRI annotation value: a YAML list of paths.
func DaemonDevicesAnnotation() string {
	var b strings.Builder
	for _, d := range daemonDevices() {
		fmt.Fprintf(&b, "- path: %s\n", d)
	}
	return b.String()
}

// PodAnnotations are the multi-network and NRI annotations of a wired pod.
func PodAnnotations(m interfaces.Mapping) map[string]string {
	return map[string]string{
		AnnotationDaemonDevices:    DaemonDevicesAnnotation(),
		AnnotationDefaultInterface: interfaces.DefaultInterface,
		AnnotationInterfaces:       m.AnnotationJSON(),
	}
}

func hostPathVolume(name, path string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
}

// Volumes are the pod volumes the daemon and the worker mount.
func Volumes() []corev1.Volume {
	return []corev1.Volume{
		hostPathVolume(volLibraries, HostLibDir),
		hostPathVolume(volSys, "/sys"),
		hostPathVolume(volProcSys, "/proc/sys"),
		hostPathVolume(volAperture, ApertureDevices),
		{Name: volShm, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
	}
}

// DaemonSidecar is the tcpxo-daemon as a native sidecar: an init container
// with restartPolicy Always starts before the worker and lives beside it.
// Its startup probe fails the pod fast on a bad node instead of letting
// NCCL init hang waiting for a daemon that never comes up.
func DaemonSidecar(p facts.Facts) corev1.Container {
	return corev1.Container{
		Name:          names.DaemonContainer,
		Image:         p.DaemonImage,
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		// The image's own entrypoint, read from the image: it runs the entry
		// script through its interpreter, because the script carries no
		// exec bit and a command that execs it directly fails with
		// "permission denied".
		Command: slices.Clone(p.DaemonEntrypoint),
		Args:    []string{DaemonHops},
		Env: []corev1.EnvVar{
			{Name: "LD_LIBRARY_PATH", Value: p.LibDir},
			{Name: "HEALTH_CHECK_LOG_FILE", Value: HealthCheckFile},
		},
		SecurityContext: &corev1.SecurityContext{
			Privileged:   ptr.To(false),
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_BIND_SERVICE"}},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: volLibraries, MountPath: LibMountPath, ReadOnly: true},
			{Name: volSys, MountPath: "/hostsysfs"},
			{Name: volProcSys, MountPath: "/hostprocsysfs"},
		},
		StartupProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", HealthCheckFile}}},
			PeriodSeconds:    5,
			FailureThreshold: 24, // 2 minutes for a ~30 s initialisation
		},
	}
}

// WorkerWiring applies the worker side of the wiring to c: GPUs, IPC_LOCK,
// the fabric env and the three mounts. The container keeps its name, image
// and command, so the benchmark can wire a container of its own.
func WorkerWiring(c *corev1.Container, env []corev1.EnvVar) {
	gpus := corev1.ResourceList{GPUResource: *resource.NewQuantity(GPUsPerNode, resource.DecimalSI)}
	c.Resources = corev1.ResourceRequirements{Limits: gpus, Requests: gpus.DeepCopy()}
	c.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}}
	c.Env = append(c.Env, env...)
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: volShm, MountPath: "/dev/shm"},
		corev1.VolumeMount{Name: volLibraries, MountPath: LibMountPath, ReadOnly: true},
		corev1.VolumeMount{Name: volAperture, MountPath: ApertureDevices},
	)
}
