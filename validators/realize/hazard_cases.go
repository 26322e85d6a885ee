package realize

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"

	"github.com/tcpxogen/tcpxogen/internal/launch"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// hazardCases are the matrix rows of the hazards trainer v2.3.0 brought
// (see hazards.go and the launch check's processes verdict): the
// process-count collapse of a memory-only resourcesPerNode and the form
// that restates the GPUs, runtime patches of the tcpxo-daemon sidecar, and
// mlPolicy.torch.envInjection. Every case runs on both versions; what
// differs is recorded in Behavior.
func hazardCases() []Case {
	daemon := names.DaemonContainer
	return []Case{
		{
			Name:    "resources-memory-only",
			Summary: "spec.trainer.resourcesPerNode with memory 64Gi only",
			TrainJob: func(job *trainer.TrainJob) error {
				rl := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Gi")}
				job.Spec.Trainer = &trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{Limits: rl, Requests: rl.DeepCopy()}}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				if o.Behavior.ResourcesPerNodeMerges {
					// The pod keeps 8 GPUs, the torch plugin counts none in
					// the override and no cpu either: max(1, 0) processes
					// (kubeflow/trainer PR 3974).
					expectChanges(c, o)
					expectGPUs(c, o, "8", "8")
				} else {
					expectChanges(c, o,
						wiring.Change{What: wiring.ResourceLost, Path: "limits " + gpuResource, From: "8"},
						wiring.Change{What: wiring.ResourceLost, Path: "requests " + gpuResource, From: "8"})
					expectGPUs(c, o, "", "")
				}
				expectEnv(c, o, map[string]string{constants.TorchEnvNumProcPerNode: "1"})
				expectLaunch(c, o, LaunchProcesses)
			},
		},
		{
			Name:    "resources-memory-gpu-8",
			Summary: "spec.trainer.resourcesPerNode with memory 64Gi and nvidia.com/gpu 8 (the GPUs restated)",
			TrainJob: func(job *trainer.TrainJob) error {
				rl := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Gi"), gpuResource: resource.MustParse("8")}
				job.Spec.Trainer = &trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{Limits: rl, Requests: rl.DeepCopy()}}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o)
				expectGPUs(c, o, "8", "8")
				expectEnv(c, o, map[string]string{constants.TorchEnvNumProcPerNode: "auto"})
				expectAddedPath(c, o, wiring.ResourceAdded, "limits memory")
				expectLaunch(c, o)
			},
		},
		{
			Name:     "runtime-patch-daemon-capabilities",
			Summary:  "spec.runtimePatches sets the tcpxo-daemon's securityContext without NET_ADMIN",
			TrainJob: daemonPatch(`"securityContext":{"capabilities":{"add":["NET_BIND_SERVICE"]}}`),
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o, wiring.Change{What: wiring.CapabilityLost, Path: "initContainer " + daemon + " capability NET_ADMIN"})
				expectLaunch(c, o)
			},
		},
		{
			Name:     "runtime-patch-daemon-mount",
			Summary:  "spec.runtimePatches mounts the host /sys over the tcpxo-daemon's plugin libraries (/usr/local/nvidia)",
			TrainJob: daemonPatch(`"volumeMounts":[{"name":"sys","mountPath":"/usr/local/nvidia"}]`),
			Expect: func(c *Check, o *Outcome) {
				// Mounts merge by mount path: a patch can add one, or put
				// another volume where the runtime mounts one.
				expectChanges(c, o, wiring.Change{What: wiring.MountChanged, Path: "initContainer " + daemon + " mount /usr/local/nvidia", From: "libraries (ro)", To: "sys (ro)"})
				expectLaunch(c, o)
			},
		},
		{
			Name:     "runtime-patch-daemon-env",
			Summary:  "spec.runtimePatches overrides the tcpxo-daemon's LD_LIBRARY_PATH",
			TrainJob: daemonPatch(`"env":[{"name":"LD_LIBRARY_PATH","value":"/usr/lib"}]`),
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o, wiring.Change{What: wiring.EnvOverridden, Path: "initContainer " + daemon + " env LD_LIBRARY_PATH", From: "/usr/local/nvidia/lib64", To: "/usr/lib"})
				expectLaunch(c, o)
			},
		},
		{
			Name:      "envinjection-daemon",
			Summary:   "runtime's mlPolicy.torch.envInjection names the tcpxo-daemon; TrainJob with spec.trainer: {}",
			Runtime:   envInjectionRuntime(daemon),
			Supported: func(b Behavior) bool { return b.TorchEnvInjection },
			TrainJob: func(job *trainer.TrainJob) error {
				job.Spec.Trainer = &trainer.Trainer{}
				return nil
			},
			Expect: func(c *Check, o *Outcome) {
				expectChanges(c, o)
				for _, name := range launch.RendezvousEnv {
					expectAddedPath(c, o, wiring.EnvAdded, "initContainer "+daemon+" env "+name)
				}
				expectLaunch(c, o)
			},
		},
	}
}

// daemonPatch returns a TrainJob builder whose runtime patch sets fields
// (a JSON object's members) on the tcpxo-daemon init container of the node
// replicated job, with spec.trainer: {} so the launch is judged on its own.
func daemonPatch(fields string) func(job *trainer.TrainJob) error {
	return func(job *trainer.TrainJob) error {
		job.Spec.Trainer = &trainer.Trainer{}
		return patchSpecJSON(job, fmt.Sprintf(`{"runtimePatches":[{"manager":"tcpxogen.dev/realize-matrix","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[
			{"name":%q,"template":{"spec":{"template":{"spec":{"initContainers":[{"name":%q,%s}]}}}}}]}}}}]}`, constants.Node, names.DaemonContainer, fields))
	}
}

// envInjectionRuntime returns the shipped runtime whose torch policy names
// container of the node job in envInjection, decoded strictly: a trainer
// whose API has no envInjection reports ErrUnsupported.
func envInjectionRuntime(container string) func() (client.Object, error) {
	return func() (client.Object, error) {
		rt, err := shipped.Runtime()
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(rt)
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, err
		}
		spec, _ := obj["spec"].(map[string]any)
		policy, _ := spec["mlPolicy"].(map[string]any)
		if policy == nil {
			return nil, fmt.Errorf("the shipped runtime has no mlPolicy")
		}
		policy["torch"] = map[string]any{"envInjection": map[string]any{"targets": []any{
			map[string]any{"jobName": constants.Node, "containerNames": []any{container}},
		}}}
		raw, err = json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var out trainer.ClusterTrainingRuntime
		if err := dec.Decode(&out); err != nil {
			if strings.Contains(err.Error(), "unknown field") {
				return nil, fmt.Errorf("%w: trainer %s's runtime API has no mlPolicy.torch.envInjection (%v)", ErrUnsupported, TrainerVersion(), err)
			}
			return nil, err
		}
		return &out, nil
	}
}
