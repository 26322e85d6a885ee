package realize

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
)

// The fixtures below stand in for the shipped runtimes while runtimes/ does
// not build them yet. They are modeled on torch-distributed-tcpxo as the
// facts describe it, and carry every kind of wiring the compatibility matrix
// watches. They live in non-test code because the compat command runs the
// same matrix. When the real builder lands, FixtureTCPXORuntime is the one
// function to replace (FixtureMPIRuntime derives from it, as the benchmark
// derives from the shipped runtime).

// FixtureGPUNICNetworks are the made-up GKE Network names eth1..eth8 are
// bound to in the fixtures.
var FixtureGPUNICNetworks = []string{"vpc1", "vpc2", "vpc3", "vpc4", "vpc5", "vpc6", "vpc7", "vpc8"}

// FixtureTCPXORuntimeName is the name of the fixture ClusterTrainingRuntime.
const FixtureTCPXORuntimeName = "torch-distributed-tcpxo"

// FixtureMPIRuntimeName is the name of the fixture MPI TrainingRuntime.
const FixtureMPIRuntimeName = "nccl-tests-tcpxo"

// FixtureMPIRuntimeNamespace is the namespace of the fixture MPI runtime.
const FixtureMPIRuntimeNamespace = "tcpxo-validation"

// Fixture images, pinned by digest as the facts give them.
const (
	fixtureDaemonImage = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21@sha256:8d9e10fd589a34ab8a0aa64f7e70ad075c8f1c69bea176350f8d211367697e3d"
	fixtureTorchImage  = "pytorch/pytorch:2.11.0-cuda12.8-cudnn9-runtime@sha256:eee11b3b3872a8c838e35ef48f08b2d5def2080902c7f666831310ca1a0ef2be"
	// fixtureNCCLTestsImage is a placeholder: the benchmark image is not
	// pinned anywhere yet, and realization never pulls images.
	fixtureNCCLTestsImage = "example.invalid/nccl-tests:placeholder"
)

// FixtureNodeEnv is the env the fixture puts on the node container: a few of
// the profile's NCCL variables plus the non-privileged LLCM directory.
func FixtureNodeEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "LD_LIBRARY_PATH", Value: "/usr/local/nvidia/lib64"},
		{Name: "NCCL_FASTRAK_IFNAME", Value: "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"},
		{Name: "NCCL_FASTRAK_CTRL_DEV", Value: "eth0"},
		{Name: "NCCL_SOCKET_IFNAME", Value: "eth0"},
		{Name: "NCCL_CROSS_NIC", Value: "0"},
		{Name: "NCCL_PROTO", Value: "Simple,LL128"},
		{Name: "NCCL_TUNER_PLUGIN", Value: "libnccl-tuner.so"},
		{Name: "NCCL_TUNER_CONFIG_PATH", Value: "/usr/local/nvidia/lib64/a3plus_tuner_config.textproto"},
		{Name: "NCCL_DEBUG", Value: "WARN"},
		{Name: "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", Value: "/dev/aperture_devices"},
	}
}

// FixtureTCPXORuntime returns a fresh ClusterTrainingRuntime modeled on the
// shipped torch-distributed-tcpxo.
func FixtureTCPXORuntime() *trainer.ClusterTrainingRuntime {
	return &trainer.ClusterTrainingRuntime{
		TypeMeta: metav1.TypeMeta{APIVersion: trainer.SchemeGroupVersion.String(), Kind: trainer.ClusterTrainingRuntimeKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:   FixtureTCPXORuntimeName,
			Labels: map[string]string{"trainer.kubeflow.org/framework": "torch"},
		},
		Spec: trainer.TrainingRuntimeSpec{
			MLPolicy: &trainer.MLPolicy{
				NumNodes:       ptr.To[int32](2),
				MLPolicySource: trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{}},
			},
			Template: trainer.JobSetTemplateSpec{
				Spec: jobsetv1alpha2.JobSetSpec{
					ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
						Name: constants.Node,
						Template: batchJobTemplate(
							map[string]string{constants.LabelTrainJobAncestor: constants.AncestorTrainer},
							tcpxoPodTemplate(corev1.Container{
								Name:  constants.Node,
								Image: fixtureTorchImage,
							}),
						),
					}},
				},
			},
		},
	}
}

// FixtureMPIRuntime returns a fresh namespaced MPI TrainingRuntime shaped like
// the NCCL benchmark: an OpenMPI launcher and nodes running sshd. Like the
// real benchmark it is derived from the torch runtime: the node pod template
// (all of its wiring) is copied from FixtureTCPXORuntime's node job, and only
// the node container's image and command are the benchmark's own; the
// launcher is its own entirely. The MPI policy leaves every field to its CRD
// default, so realizing it also exercises defaulting.
func FixtureMPIRuntime() (*trainer.TrainingRuntime, error) {
	src, err := RuntimePodTemplate(FixtureTCPXORuntime(), constants.Node)
	if err != nil {
		return nil, fmt.Errorf("deriving the MPI fixture: %w", err)
	}
	node := *src.DeepCopy()
	found := false
	for i := range node.Spec.Containers {
		if c := &node.Spec.Containers[i]; c.Name == constants.Node {
			c.Image = fixtureNCCLTestsImage
			c.Command = []string{"/usr/sbin/sshd"}
			c.Args = []string{"-De"}
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("deriving the MPI fixture: %s's node job has no %q container", FixtureTCPXORuntimeName, constants.Node)
	}

	launcher := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:    constants.Node,
			Image:   fixtureNCCLTestsImage,
			Command: []string{"mpirun"},
			Args: []string{"--allow-run-as-root", "/third_party/nccl-tests/build/all_reduce_perf",
				"-b", "1K", "-e", "16G", "-f", "2", "-g", "1"},
		}},
	}}

	return &trainer.TrainingRuntime{
		TypeMeta: metav1.TypeMeta{APIVersion: trainer.SchemeGroupVersion.String(), Kind: trainer.TrainingRuntimeKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      FixtureMPIRuntimeName,
			Namespace: FixtureMPIRuntimeNamespace,
			Labels:    map[string]string{"trainer.kubeflow.org/framework": "mpi"},
		},
		Spec: trainer.TrainingRuntimeSpec{
			MLPolicy: &trainer.MLPolicy{
				NumNodes:       ptr.To[int32](2),
				MLPolicySource: trainer.MLPolicySource{MPI: &trainer.MPIMLPolicySource{}},
			},
			Template: trainer.JobSetTemplateSpec{
				Spec: jobsetv1alpha2.JobSetSpec{
					ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{
						{
							Name:     constants.Launcher,
							Template: batchJobTemplate(nil, launcher),
						},
						{
							// The node job, not the launcher, is the trainer
							// step: mlPolicy.numNodes sizes the trainer step,
							// and the MPI plugin reads GPUs per node (hence
							// hostfile slots) from the first job that is
							// named node or is the trainer step. Labelling
							// the launcher, as the upstream runtimes that run
							// the launcher as a node do, would give 2
							// launchers, 1 node and 1 slot here (see
							// TestMPILauncherAsTrainerStep).
							Name:     constants.Node,
							Template: batchJobTemplate(map[string]string{constants.LabelTrainJobAncestor: constants.AncestorTrainer}, node),
						},
					},
				},
			},
		},
	}, nil
}

// FixtureInterfacesAnnotation renders networking.gke.io/interfaces for
// FixtureGPUNICNetworks: eth0 on the default network first, then eth1..eth8.
func FixtureInterfacesAnnotation() string {
	var b strings.Builder
	b.WriteString(`[{"interfaceName":"eth0","network":"default"}`)
	for i, n := range FixtureGPUNICNetworks {
		fmt.Fprintf(&b, `,{"interfaceName":"eth%d","network":"%s"}`, i+1, n)
	}
	b.WriteString("]")
	return b.String()
}

// fixtureDaemonDevices is the NRI device annotation's value for the daemon.
func fixtureDaemonDevices() string {
	var b strings.Builder
	for i := range 8 {
		fmt.Fprintf(&b, "- path: /dev/nvidia%d\n", i)
	}
	for _, p := range []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/dmabuf_import_helper"} {
		fmt.Fprintf(&b, "- path: %s\n", p)
	}
	return b.String()
}

func tcpxoPodTemplate(node corev1.Container) corev1.PodTemplateSpec {
	gpus := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
	node.Resources = corev1.ResourceRequirements{Limits: gpus, Requests: gpus.DeepCopy()}
	node.SecurityContext = &corev1.SecurityContext{
		Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}},
	}
	node.Env = FixtureNodeEnv()
	node.VolumeMounts = []corev1.VolumeMount{
		{Name: "dshm", MountPath: "/dev/shm"},
		{Name: "nvidia-install-dir-host", MountPath: "/usr/local/nvidia", ReadOnly: true},
		{Name: "aperture-devices", MountPath: "/dev/aperture_devices"},
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			"networking.gke.io/default-interface":   "eth0",
			"networking.gke.io/interfaces":          FixtureInterfacesAnnotation(),
			"devices.gke.io/container.tcpxo-daemon": fixtureDaemonDevices(),
		}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{
				Name:          "tcpxo-daemon",
				Image:         fixtureDaemonImage,
				RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
				Command:       []string{"/fts/entrypoint_rxdm_container.sh"},
				Args:          []string{"--num_hops=2"},
				SecurityContext: &corev1.SecurityContext{
					Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_BIND_SERVICE"}},
				},
				Env: []corev1.EnvVar{{Name: "LD_LIBRARY_PATH", Value: "/usr/local/nvidia/lib64"}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "nvidia-install-dir-host", MountPath: "/usr/local/nvidia", ReadOnly: true},
					{Name: "sys", MountPath: "/hostsysfs"},
					{Name: "proc-sys", MountPath: "/hostprocsysfs"},
				},
			}},
			Containers: []corev1.Container{node},
			Volumes: []corev1.Volume{
				hostPathVolume("nvidia-install-dir-host", "/home/kubernetes/bin/nvidia"),
				hostPathVolume("sys", "/sys"),
				hostPathVolume("proc-sys", "/proc/sys"),
				hostPathVolume("aperture-devices", "/dev/aperture_devices"),
				{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
			},
		},
	}
}

func hostPathVolume(name, path string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
}

func batchJobTemplate(labels map[string]string, pod corev1.PodTemplateSpec) batchv1.JobTemplateSpec {
	return batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       batchv1.JobSpec{Template: pod},
	}
}
