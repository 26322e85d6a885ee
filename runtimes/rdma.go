package runtimes

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// The gIB wiring's host paths and mounts, from Google's gpudirect-rdma
// manifests (container-engine-accelerators nccl-test.yaml, nccl-test-a4.yaml
// and nccl-rdma-installer.yaml at dfe0f210): the installer copies the
// payload's lib64 into the host's /home/kubernetes/bin/nvidia/lib64 and the
// payload into /home/kubernetes/bin/gib; pods mount the first at
// /usr/local/nvidia and the second at /usr/local/gib, with
// LD_LIBRARY_PATH=/usr/local/nvidia/lib64.
const (
	GIBHostDir   = "/home/kubernetes/bin/gib"
	GIBMountPath = "/usr/local/gib"
	// gibInstallDir is where the installer entrypoint (`install
	// --install-nccl`) puts the payload inside its container.
	gibInstallDir = "/var/lib/gib"
	// gibShmLimit is Google's /dev/shm size for the gIB test pods.
	gibShmLimit = "250Gi"

	volGIBLibraries = "library-dir-host"
	volGIB          = "gib"
	volGIBShm       = "shared-memory"
)

// RDMAOptions are the cluster-specific inputs of the gIB runtime.
type RDMAOptions struct {
	// Interfaces is required: eth2..eth9 bound to the cluster's eight RDMA
	// networks (and eth1 to gvnic-1 where the cluster has it). Without them
	// NCCL has no RDMA NIC and falls back to TCP.
	Interfaces interfaces.Mapping
	// MachineType is required: gIB's env differs per machine type (its
	// tuner config), so one runtime serves one machine type.
	MachineType  string
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// WorkerImage, pinned by digest, is the node container's image. It has
	// no default: gIB's release notes name a minimum CUDA runtime (13.0
	// for v1.1.2) that the BOM's worker image (CUDA 12) does not meet, so
	// the runtime ships without an image and each TrainJob brings one
	// (spec.trainer.image); a pod without one is refused by the API
	// server, never run with a CUDA the installer does not support.
	WorkerImage string
}

// RDMAEnv is the gIB worker env on machine type mt: LD_LIBRARY_PATH as
// Google's manifests set it (the installer puts NCCL and the plugin there),
// then what the pinned installer's set_nccl_env.sh exports on mt, in
// order. Shipped as direct env it survives a TrainJob that replaces the
// command (Trainer merges env by name), where Google's samples `source`
// the script in the command.
func (in *Inputs) RDMAEnv(mt string) ([]corev1.EnvVar, error) {
	prof, ok := in.GIB.Profile(mt)
	if !ok {
		return nil, fmt.Errorf("machine type %q is not one the gIB installer %s was extracted for (%s)", mt, in.GIB.PluginVersion, strings.Join(in.GIB.ProfileNames(), ", "))
	}
	out := []corev1.EnvVar{{Name: "LD_LIBRARY_PATH", Value: in.GIB.LibDir}}
	for _, v := range prof {
		if v.Name == "LD_LIBRARY_PATH" {
			return nil, fmt.Errorf("the gIB installer %s's env script sets LD_LIBRARY_PATH (%s): tcpxogen sets it from Google's manifests; review how the two combine", in.GIB.PluginVersion, v.Value)
		}
		out = append(out, corev1.EnvVar{Name: v.Name, Value: v.Value})
	}
	return out, nil
}

func (o *RDMAOptions) defaults(in *Inputs) (fabric.MachineType, error) {
	if o.Interfaces.IsZero() {
		return fabric.MachineType{}, errors.New("the RDMA NIC network mapping is required (eth2=<network>,...,eth9=<network>): without it pods get no RDMA NIC and NCCL silently falls back to TCP")
	}
	if o.Interfaces.Layout() != interfaces.RDMA {
		return fabric.MachineType{}, errors.New("the mapping is a TCPXO one (eth1..eth8); the gIB fabric maps its RDMA NICs eth2..eth9")
	}
	m, ok := fabric.GIB.MachineType(o.MachineType)
	if !ok {
		return m, fmt.Errorf("machine type %q is not served by the gIB fabric: use one of %s", o.MachineType, strings.Join(fabric.GIB.MachineTypeNames(), ", "))
	}
	if err := checkAim(fabric.GIB.RuntimeFor(m.Name), fabric.GIB, []fabric.MachineType{m}, o.NodeSelector); err != nil {
		return m, err
	}
	if o.WorkerImage != "" {
		if _, err := bom.ParsePinned(o.WorkerImage); err != nil {
			return m, fmt.Errorf("worker image is not pinned by digest: %w", err)
		}
	}
	return m, nil
}

// RDMARuntime builds the gIB runtime for one machine type
// (torch-distributed-rdma-<machine type>). It fails closed: no mapping, a
// TCPXO mapping, a machine type gIB does not serve or facts without that
// machine's env is an error, never a runtime without the wiring.
func RDMARuntime(in *Inputs, opts RDMAOptions) (*trainer.ClusterTrainingRuntime, error) {
	mt, err := opts.defaults(in)
	if err != nil {
		return nil, err
	}
	env, err := in.RDMAEnv(mt.Name)
	if err != nil {
		return nil, err
	}
	node := corev1.Container{Name: NodeContainer, Image: opts.WorkerImage}
	RDMAWorkerWiring(&node, env)
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			AnnotationDefaultInterface: interfaces.DefaultInterface,
			AnnotationInterfaces:       opts.Interfaces.AnnotationJSON(),
		}},
		Spec: corev1.PodSpec{
			// The machine type decides the fabric: the accelerator label
			// alone would also match nodes of another machine type.
			Affinity:     nodeAffinity(machineRequirements(mt)...),
			NodeSelector: opts.NodeSelector,
			Tolerations:  opts.Tolerations,
			// node stays the first non-init container: GKE gives the RDMA
			// device files only to the pod's first non-init container.
			Containers: []corev1.Container{node},
			Volumes:    RDMAVolumes(),
		},
	}
	return torchRuntime(fabric.GIB.RuntimeFor(mt.Name), pod), nil
}

// machineRequirements select nodes of machine type m.
func machineRequirements(m fabric.MachineType) []corev1.NodeSelectorRequirement {
	return []corev1.NodeSelectorRequirement{
		{Key: fabric.InstanceTypeLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{m.Name}},
		{Key: fabric.AcceleratorLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{m.Accelerator}},
	}
}

// RDMAVolumes are the gIB pod's volumes, as Google's test pods have them.
func RDMAVolumes() []corev1.Volume {
	return []corev1.Volume{
		hostPathVolume(volGIBLibraries, HostLibDir),
		hostPathVolume(volGIB, GIBHostDir),
		{Name: volGIBShm, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse(gibShmLimit)),
		}}},
	}
}

// RDMAWorkerWiring applies the worker side of the gIB wiring to c: all
// eight GPUs, the env and the three mounts. No capability: Google dropped
// IPC_LOCK from its gIB tests in 2025, and none is privileged.
func RDMAWorkerWiring(c *corev1.Container, env []corev1.EnvVar) {
	gpus := corev1.ResourceList{GPUResource: *resource.NewQuantity(GPUsPerNode, resource.DecimalSI)}
	c.Resources = corev1.ResourceRequirements{Limits: gpus, Requests: gpus.DeepCopy()}
	c.Env = append(c.Env, env...)
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: volGIBLibraries, MountPath: LibMountPath, ReadOnly: true},
		corev1.VolumeMount{Name: volGIB, MountPath: GIBMountPath, ReadOnly: true},
		corev1.VolumeMount{Name: volGIBShm, MountPath: "/dev/shm"},
	)
}

// RDMAInstallCommand is the gIB installer container's shell program, as
// Google's nccl-rdma-installer runs it: the image's entrypoint with
// `install --install-nccl`, then copies of the payload's lib64 and of the
// whole payload to the host directories pods mount.
func RDMAInstallCommand(p facts.Facts) string {
	quoted := make([]string, len(p.InstallerEntrypoint))
	for i, a := range p.InstallerEntrypoint {
		quoted[i] = shellQuote(a)
	}
	return strings.Join([]string{
		"set -eu",
		strings.Join(quoted, " ") + " install --install-nccl",
		"cp -r " + gibInstallDir + "/lib64/. /usr/local" + HostLibDir + "/lib64",
		"cp -r " + gibInstallDir + "/. /usr/local" + GIBHostDir,
		`echo "installed into ` + HostLibDir + `/lib64 and ` + GIBHostDir + ` on the host"`,
	}, "\n") + "\n"
}

// RDMAComponents returns the gIB node components: the installer DaemonSet,
// pinned from the same BOM as the runtime. gIB needs no NRI injector.
func RDMAComponents(in *Inputs) []*appsv1.DaemonSet {
	accels := fabric.GIB.Accelerators()
	return []*appsv1.DaemonSet{daemonSet(fabric.GIB.InstallerDaemonSet, nodeAffinity(corev1.NodeSelectorRequirement{
		Key: fabric.AcceleratorLabel, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(accels),
	}), corev1.PodSpec{
		InitContainers: []corev1.Container{{
			Name:            fabric.GIB.InstallerDaemonSet,
			Image:           in.GIB.InstallerImage,
			Command:         []string{"/bin/sh", "-c", RDMAInstallCommand(in.GIB)},
			Resources:       cpuRequest(150),
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			VolumeMounts: []corev1.VolumeMount{
				{Name: volGIBLibraries, MountPath: "/usr/local" + HostLibDir + "/lib64"},
				{Name: volGIB, MountPath: "/usr/local" + GIBHostDir},
			},
		}},
		Containers: []corev1.Container{{Name: "pause", Image: in.BOM.Images.Pause.Reference}},
		Volumes: []corev1.Volume{
			{Name: volGIBLibraries, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: HostLibDir + "/lib64", Type: ptr.To(corev1.HostPathDirectoryOrCreate),
			}}},
			hostPathVolume(volGIB, GIBHostDir),
		},
	})}
}
