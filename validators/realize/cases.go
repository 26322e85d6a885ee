package realize

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"

	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// The matrix's table: every case (a TrainJob shape, the runtime it is
// realized on, and what each trainer version is expected to make of it),
// and the behaviour recorded per trainer version that the expectations
// read. Running the table is matrix.go's; the assertions the expectations
// use are check.go's.

// Behavior is what a trainer version is known to do with the inputs the
// matrix exercises. Expectations read it instead of comparing version
// strings, so a new version is added by recording its behaviour once.
type Behavior struct {
	// ResourcesPerNodeMerges: spec.trainer.resourcesPerNode is merged into
	// the node container's resources key by key (v2.3.0). Otherwise it
	// replaces them wholesale whenever it sets limits or requests (v2.2.0).
	ResourcesPerNodeMerges bool
	// RuntimeSnapshot: the controller stores the runtime in a
	// <trainjob>-runtime-snapshot ConfigMap on first build (v2.3.0).
	RuntimeSnapshot bool
	// ContainerPatchResources: a runtimePatches container patch can carry
	// resources. No recorded version's ContainerPatch has the field.
	ContainerPatchResources bool
	// SnapshotBreaksRebuild: the runtime snapshot is stored without
	// apiVersion and kind, so every build after the first (any later
	// reconcile, e.g. on unsuspend) fails its own GVK check
	// (kubeflow/trainer#3921, fixed after v2.3.0 by #3922).
	SnapshotBreaksRebuild bool
	// TorchEnvInjection: the runtime's mlPolicy.torch.envInjection names
	// further containers the torch plugin upserts PET_* into (v2.3.0).
	TorchEnvInjection bool
}

// knownBehaviors records, per trainer version, the behaviour the matrix
// was checked against (by reading that version's source and by running the
// matrix). An unlisted version fails every case with an explicit message.
var knownBehaviors = map[string]Behavior{
	"v2.2.0": {},
	"v2.3.0": {ResourcesPerNodeMerges: true, RuntimeSnapshot: true, SnapshotBreaksRebuild: true, TorchEnvInjection: true},
}

// BehaviorOf returns the recorded behaviour of a trainer version.
func BehaviorOf(version string) (Behavior, bool) {
	b, ok := knownBehaviors[version]
	return b, ok
}

// ErrUnsupported marks a case the linked trainer cannot express (the API
// field it needs does not exist there). The row says so; nothing is faked.
var ErrUnsupported = errors.New("not supported on this trainer version")

// Case is one named row of the matrix.
type Case struct {
	// Name identifies the case in test names and report rows.
	Name string
	// Summary says in one line what the case does.
	Summary string
	// Runtime builds the runtime to realize; nil means ShippedRuntime.
	Runtime func() (client.Object, error)
	// TrainJob turns the bare TrainJob (BareTrainJob: runtimeRef only) into
	// the case's input; nil leaves it bare. It returns an error wrapping
	// ErrUnsupported when the linked trainer API cannot express the input.
	TrainJob func(job *trainer.TrainJob) error
	// Supported says whether a trainer with the given behaviour can express
	// the case; nil means always. A case that turns out unsupported where
	// it should be, or the reverse, is a failure.
	Supported func(b Behavior) bool
	// Expect checks an outcome against o.Behavior.
	Expect func(c *Check, o *Outcome)
}

// Cases returns the matrix, freshly built (cases hold closures over
// runtimes; nothing is shared between calls).
func Cases() []Case {
	return append([]Case{
		{
			Name:    "bare",
			Summary: "TrainJob with runtimeRef only",
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o)
				expectNodes(c, o, 2)
				// The torch plugin injects PET_* only when spec.trainer is
				// set (both versions): a bare TrainJob gets no torchrun env.
				expectEnvUnset(c, o, constants.TorchEnvNumNodes, constants.TorchEnvNumProcPerNode, constants.TorchEnvMasterAddr)
				expectGPUs(c, o, "8", "8")
				expectSnapshot(c, o)
				// So torchrun has no rendezvous (kubeflow/trainer#4076).
				expectLaunch(c, o, LaunchRendezvous)
			},
		},
		{
			Name:    "trainer-empty",
			Summary: "spec.trainer present but empty",
			TrainJob: func(job *trainer.TrainJob) error {
				job.Spec.Trainer = &trainer.Trainer{}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o)
				expectNodes(c, o, 2)
				expectEnv(c, o, map[string]string{
					constants.TorchEnvNumNodes:       "2",
					constants.TorchEnvNumProcPerNode: "auto",
					constants.TorchEnvNodeRank:       "fieldRef:" + constants.JobCompletionIndexFieldPath,
					constants.TorchEnvMasterAddr:     fmt.Sprintf("%s-%s-0-0.%s", BareTrainJobName, constants.Node, BareTrainJobName),
					constants.TorchEnvMasterPort:     fmt.Sprint(constants.ContainerTrainerPort),
				})
				expectGPUs(c, o, "8", "8")
				expectLaunch(c, o)
			},
		},
		{
			Name:    "num-nodes-4",
			Summary: "spec.trainer.numNodes: 4",
			TrainJob: func(job *trainer.TrainJob) error {
				job.Spec.Trainer = &trainer.Trainer{NumNodes: ptr.To[int32](4)}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o)
				expectNodes(c, o, 4)
				expectEnv(c, o, map[string]string{constants.TorchEnvNumNodes: "4", constants.TorchEnvNumProcPerNode: "auto"})
				expectGPUs(c, o, "8", "8")
				expectLaunch(c, o)
			},
		},
		{
			Name:    "env-add",
			Summary: "spec.trainer.env adds a variable",
			TrainJob: func(job *trainer.TrainJob) error {
				job.Spec.Trainer = &trainer.Trainer{Env: []corev1.EnvVar{{Name: "TCPXO_MATRIX_EXTRA", Value: "1"}}}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o)
				expectEnv(c, o, map[string]string{"TCPXO_MATRIX_EXTRA": "1"})
				expectAdded(c, o, wiring.Change{What: wiring.EnvAdded, Path: "env TCPXO_MATRIX_EXTRA", To: "1"})
				expectLaunch(c, o)
			},
		},
		{
			Name:    "env-override-nccl",
			Summary: "spec.trainer.env overrides NCCL_DEBUG=INFO",
			TrainJob: func(job *trainer.TrainJob) error {
				job.Spec.Trainer = &trainer.Trainer{Env: []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}}}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o, wiring.Change{What: wiring.EnvOverridden, Path: "env NCCL_DEBUG", From: "WARN", To: "INFO"})
				expectEnvCount(c, o, "NCCL_DEBUG", 1)
				expectLaunch(c, o)
			},
		},
		{
			Name:    "resources-gpu-8",
			Summary: "spec.trainer.resourcesPerNode.limits: nvidia.com/gpu 8",
			TrainJob: func(job *trainer.TrainJob) error {
				job.Spec.Trainer = &trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{
					Limits: corev1.ResourceList{gpuResource: resource.MustParse("8")},
				}}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				if o.Behavior.ResourcesPerNodeMerges {
					expectChanges(c, o)
					expectGPUs(c, o, "8", "8")
				} else {
					// Wholesale replacement drops the runtime's GPU request.
					// The API server defaults an extended resource's request
					// to its limit on pod creation, so GPUs are unaffected;
					// a runtime's cpu/memory requests would be gone for good.
					expectChanges(c, o, wiring.Change{What: wiring.ResourceLost, Path: "requests " + gpuResource, From: "8"})
					expectGPUs(c, o, "8", "")
				}
				expectEnv(c, o, map[string]string{constants.TorchEnvNumProcPerNode: "auto"})
				expectLaunch(c, o)
			},
		},
		{
			Name:    "resources-cpu-memory",
			Summary: "spec.trainer.resourcesPerNode with cpu 16 / memory 64Gi only",
			TrainJob: func(job *trainer.TrainJob) error {
				rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi")}
				job.Spec.Trainer = &trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{Limits: rl, Requests: rl.DeepCopy()}}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				if o.Behavior.ResourcesPerNodeMerges {
					expectChanges(c, o)
					expectGPUs(c, o, "8", "8")
				} else {
					expectChanges(c, o,
						wiring.Change{What: wiring.ResourceLost, Path: "limits " + gpuResource, From: "8"},
						wiring.Change{What: wiring.ResourceLost, Path: "requests " + gpuResource, From: "8"})
					expectGPUs(c, o, "", "")
				}
				// The torch plugin counts GPUs in resourcesPerNode alone, not
				// in the merged result: without a GPU there it sizes torchrun
				// by CPUs, even where the pod still gets 8 GPUs (v2.3.0).
				expectEnv(c, o, map[string]string{constants.TorchEnvNumProcPerNode: "16"})
				for _, p := range []string{"limits cpu", "limits memory", "requests cpu", "requests memory"} {
					expectAddedPath(c, o, wiring.ResourceAdded, p)
				}
				// 16 processes on 8 GPUs (v2.3.0, kubeflow/trainer#3974) or
				// on none (v2.2.0).
				expectLaunch(c, o, LaunchProcesses)
			},
		},
		{
			Name:    "resources-cpu-memory-nproc-8",
			Summary: "resources-cpu-memory plus spec.trainer.numProcPerNode: 8",
			TrainJob: func(job *trainer.TrainJob) error {
				rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi")}
				job.Spec.Trainer = &trainer.Trainer{NumProcPerNode: ptr.To[int32](8), ResourcesPerNode: &corev1.ResourceRequirements{Limits: rl, Requests: rl.DeepCopy()}}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				expectEnv(c, o, map[string]string{constants.TorchEnvNumProcPerNode: "8"})
				if o.Behavior.ResourcesPerNodeMerges {
					// The fix the launch check proposes for v2.3.0.
					expectChanges(c, o)
					expectGPUs(c, o, "8", "8")
					expectLaunch(c, o)
				} else {
					// v2.2.0 still replaces the resources: numProcPerNode
					// cannot bring the GPUs back.
					expectChanges(c, o,
						wiring.Change{What: wiring.ResourceLost, Path: "limits " + gpuResource, From: "8"},
						wiring.Change{What: wiring.ResourceLost, Path: "requests " + gpuResource, From: "8"})
					expectGPUs(c, o, "", "")
					expectLaunch(c, o, LaunchProcesses)
				}
			},
		},
		{
			Name:    "resources-all-nproc-8",
			Summary: "spec.trainer.resourcesPerNode with cpu 16 / memory 64Gi / nvidia.com/gpu 8, numProcPerNode: 8",
			TrainJob: func(job *trainer.TrainJob) error {
				rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"), gpuResource: resource.MustParse("8")}
				job.Spec.Trainer = &trainer.Trainer{NumProcPerNode: ptr.To[int32](8), ResourcesPerNode: &corev1.ResourceRequirements{Limits: rl, Requests: rl.DeepCopy()}}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o)
				expectGPUs(c, o, "8", "8")
				expectEnv(c, o, map[string]string{constants.TorchEnvNumProcPerNode: "8"})
				expectLaunch(c, o)
			},
		},
		{
			Name:    "num-proc-per-node-4",
			Summary: "spec.trainer.numProcPerNode: 4 on the runtime's 8 GPUs",
			TrainJob: func(job *trainer.TrainJob) error {
				job.Spec.Trainer = &trainer.Trainer{NumProcPerNode: ptr.To[int32](4)}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o)
				expectGPUs(c, o, "8", "8")
				expectEnv(c, o, map[string]string{constants.TorchEnvNumProcPerNode: "4"})
				expectLaunch(c, o, LaunchProcesses)
			},
		},
		{
			Name:    "runtime-patch-volume-mount",
			Summary: "spec.runtimePatches adds a volume and mounts it in the node container",
			TrainJob: func(job *trainer.TrainJob) error {
				return patchSpecJSON(job, `{"runtimePatches":[{"manager":"tcpxogen.dev/realize-matrix","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[
					{"name":"node","template":{"spec":{"template":{"spec":{
						"volumes":[{"name":"scratch","emptyDir":{}}],
						"containers":[{"name":"node","volumeMounts":[{"name":"scratch","mountPath":"/scratch"}]}]}}}}}]}}}}]}`)
			},
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o)
				expectAdded(c, o,
					wiring.Change{What: wiring.VolumeAdded, Path: "volume scratch", To: "emptyDir"},
					wiring.Change{What: wiring.MountAdded, Path: "mount /scratch", To: "scratch"})
				expectGPUs(c, o, "8", "8")
				// No spec.trainer: the bare shape's missing rendezvous.
				expectLaunch(c, o, LaunchRendezvous)
			},
		},
		{
			Name:    "runtime-patch-resources",
			Summary: "spec.runtimePatches sets resources on the node container",
			TrainJob: func(job *trainer.TrainJob) error {
				return patchSpecJSON(job, `{"runtimePatches":[{"manager":"tcpxogen.dev/realize-matrix","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[
					{"name":"node","template":{"spec":{"template":{"spec":{
						"containers":[{"name":"node","resources":{"limits":{"cpu":"16"}}}]}}}}}]}}}}]}`)
			},
			Supported: func(b Behavior) bool { return b.ContainerPatchResources },
		},
		{
			Name:    "resources-with-claims",
			Summary: "runtime node container uses a DRA claim; resourcesPerNode sets nvidia.com/gpu 8",
			Runtime: func() (client.Object, error) {
				rt, err := shipped.Runtime()
				if err != nil {
					return nil, err
				}
				pod := &rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template
				pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To("a3-mega-gpus")}}
				pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpus"}}
				return rt, nil
			},
			TrainJob: func(job *trainer.TrainJob) error {
				gpus := corev1.ResourceList{gpuResource: resource.MustParse("8")}
				job.Spec.Trainer = &trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{Limits: gpus, Requests: gpus.DeepCopy()}}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				// Both versions: v2.2.0 replaces resources with
				// resourcesPerNode (no claims), v2.3.0 merges limits and
				// requests only. The pod-level claim stays, unreferenced.
				expectChanges(c, o, wiring.Change{What: wiring.ResourceLost, Path: "claims gpus"})
				expectGPUs(c, o, "8", "8")
				pod, err := wiring.JobSetPodTemplate(o.Result.JobSet, constants.Node)
				if err != nil || len(pod.Spec.ResourceClaims) != 1 {
					c.Errorf("pod-level resourceClaims should survive unreferenced; got %v (%v)", pod, err)
				}
				expectLaunch(c, o)
			},
		},
		{
			Name:    "mpi-openmpi",
			Summary: "namespaced MPI TrainingRuntime (OpenMPI launcher + TCPXO nodes), bare TrainJob",
			Runtime: func() (client.Object, error) { return ShippedBenchmark() },
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o)
				expectNodes(c, o, 2)
				expectGPUs(c, o, "8", "8")
				// The MPI policy's mount path is the CRD default; the SSH
				// volume and mount are the plugin's additions.
				expectAddedPath(c, o, wiring.VolumeAdded, "volume "+constants.MPISSHAuthVolumeName)
				expectAdded(c, o, wiring.Change{What: wiring.MountAdded, Path: "mount /root/.ssh", To: constants.MPISSHAuthVolumeName})

				hf := o.Other("ConfigMap", BareTrainJobName+constants.MPIHostfileConfigMapSuffix)
				if hf == nil {
					c.Errorf("no hostfile ConfigMap")
				} else {
					got, _, _ := unstructured.NestedString(hf.Object, "data", constants.MPIHostfileName)
					// numProcPerNode defaults to 1, and the plugin then
					// takes the slot count from the node's 8 GPUs.
					want := fmt.Sprintf("%[1]s-node-0-0.%[1]s slots=8\n%[1]s-node-0-1.%[1]s slots=8\n", BareTrainJobName)
					if got != want {
						c.Errorf("hostfile = %q, want %q", got, want)
					}
				}
				sec := o.Other("Secret", BareTrainJobName+constants.MPISSHAuthSecretSuffix)
				if sec == nil {
					c.Errorf("no SSH auth Secret")
				} else {
					data, _, _ := unstructured.NestedStringMap(sec.Object, "data")
					if len(data) != 2 || data[corev1.SSHAuthPrivateKey] == "" || data[constants.MPISSHPublicKey] == "" {
						c.Errorf("SSH Secret keys = %v, want %s and %s", slices.Sorted(maps.Keys(data)), corev1.SSHAuthPrivateKey, constants.MPISSHPublicKey)
					}
					for k, v := range data {
						if dec, err := decodeBase64(v); err != nil || dec != RedactedValue {
							c.Errorf("SSH Secret %s not redacted", k)
						}
					}
				}
				expectSnapshot(c, o)
				if o.Launch.Judged {
					c.Errorf("launch judged on an MPI runtime: %s", o.Launch.Summary)
				}
			},
		},
	}, hazardCases()...)
}

// patchSpecJSON merges a JSON fragment into job.Spec, strictly: a field the
// linked trainer's TrainJobSpec does not have wraps ErrUnsupported. Cases
// build version-dependent inputs this way so the table compiles against
// every trainer version and reports, rather than hides, what one lacks.
func patchSpecJSON(job *trainer.TrainJob, fragment string) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(fragment)))
	dec.DisallowUnknownFields()
	spec := job.Spec.DeepCopy()
	if err := dec.Decode(spec); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			return fmt.Errorf("%w: trainer %s's TrainJob API has no such field (%v); the API server would prune it, or reject it under fieldValidation=Strict, so it never reaches the runtime framework", ErrUnsupported, TrainerVersion(), err)
		}
		return fmt.Errorf("decoding TrainJob spec fragment: %w", err)
	}
	job.Spec = *spec
	return nil
}

// expectLaunch requires the launch to be judged and exactly the checks
func decodeBase64(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}
