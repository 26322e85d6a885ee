package runtimes

import (
	"fmt"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/names"
)

// RefRow is one element of the wiring, for the generated reference table in
// the user guide: it is read off the built runtime, so the documentation
// lists exactly what ships.
type RefRow struct {
	Kind  string // annotation, sidecar, volume, mount, capability, resource, env
	Name  string
	Value string
	Why   string
}

// why explains each element the builders add; env is explained from its
// source (the profile, or a reviewed override and its reason).
var why = map[string]string{
	"annotation/" + AnnotationDefaultInterface: "keeps eth0, the pod network, as the default route; GPU NICs carry only NCCL traffic",
	"annotation/" + AnnotationInterfaces:       "attaches eth1..eth8 to this cluster's Device-type GKE Networks; without it the pod has only eth0 and NCCL silently uses TCP",
	"annotation/" + AnnotationDaemonDevices:    "asks the NRI device injector to give the daemon the GPUs and dmabuf_import_helper without privileged mode",
	"sidecar/" + names.DaemonContainer:         "the RxDM receive-datapath daemon the FasTrak plugin talks to; a native sidecar (restartPolicy Always) so it starts first and lives with the worker; its startup probe fails a bad node fast",
	"volume/" + volLibraries:                   "the host directory the installer DaemonSet fills with the NCCL plugin and NCCL core",
	"volume/" + volSys:                         "the daemon reads NIC and PCI topology from the host's /sys",
	"volume/" + volProcSys:                     "the daemon tunes network sysctls through the host's /proc/sys",
	"volume/" + volAperture:                    "LLCM device files for non-privileged pods (see NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY)",
	"volume/" + volShm:                         "a memory-backed /dev/shm large enough for NCCL's shared-memory transport",
	"capability/NET_ADMIN":                     "the daemon configures the GPU NICs' flow steering",
	"capability/NET_BIND_SERVICE":              "the daemon binds its control ports",
	"capability/IPC_LOCK":                      "NCCL pins host memory for GPUDirect buffers",
	"resource/" + string(GPUResource):          "all eight GPUs: TCPXO pairs each GPU with one GPU NIC, and torchrun starts one process per GPU",
}

// Reference lists the wiring of rt's node pod with the reason for each
// element. overrides explains env variables that differ from the profile.
func Reference(rt *trainer.ClusterTrainingRuntime, overrides *bom.Overrides, pluginVersion string) ([]RefRow, error) {
	jobs := rt.Spec.Template.Spec.ReplicatedJobs
	i := slices.IndexFunc(jobs, func(j jobsetv1alpha2.ReplicatedJob) bool { return j.Name == NodeContainer })
	if i < 0 {
		return nil, fmt.Errorf("%s has no %q replicated job", rt.Name, NodeContainer)
	}
	pod := jobs[i].Template.Spec.Template
	var rows []RefRow
	add := func(kind, name, value string) {
		rows = append(rows, RefRow{Kind: kind, Name: name, Value: value, Why: why[kind+"/"+name]})
	}
	for _, k := range slices.Sorted(mapKeys(pod.Annotations)) {
		add("annotation", k, summarize(pod.Annotations[k]))
	}
	for _, c := range pod.Spec.InitContainers {
		add("sidecar", c.Name, fmt.Sprintf("%s %s", c.Image, strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")))
	}
	for _, v := range pod.Spec.Volumes {
		add("volume", v.Name, volumeSource(v))
	}
	node := pod.Spec.Containers[slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == NodeContainer })]
	for _, c := range append(pod.Spec.InitContainers, node) {
		if c.SecurityContext != nil && c.SecurityContext.Capabilities != nil {
			for _, cp := range c.SecurityContext.Capabilities.Add {
				add("capability", string(cp), c.Name)
			}
		}
	}
	names := make([]string, 0, len(node.Resources.Limits))
	for name := range node.Resources.Limits {
		names = append(names, string(name))
	}
	slices.Sort(names)
	for _, name := range names {
		q := node.Resources.Limits[corev1.ResourceName(name)]
		add("resource", name, q.String()+" (limits and requests)")
	}
	reasons := map[string]string{
		EnvLibDir: "the profile's input, not one of its exports: Google's README (NCCL configs) has workloads set it and " +
			"`source ${NCCL_LIB_DIR}/nccl-env-profile.sh`; NCCL itself does not read it",
	}
	for _, ov := range overrides.Overrides {
		reasons[ov.Name] = fmt.Sprintf("reviewed override (%s): %s", ov.Action, ov.Reason)
	}
	for _, e := range node.Env {
		w, ok := reasons[e.Name]
		if !ok {
			w = "exported by the installer's nccl-env-profile.sh (" + pluginVersion + ")"
		}
		rows = append(rows, RefRow{Kind: "env", Name: e.Name, Value: e.Value, Why: w})
	}
	return rows, nil
}

func volumeSource(v corev1.Volume) string {
	switch {
	case v.HostPath != nil:
		return "hostPath " + v.HostPath.Path
	case v.EmptyDir != nil:
		return "emptyDir medium " + string(v.EmptyDir.Medium)
	}
	return "other"
}

// summarize keeps long annotation values readable in a table.
func summarize(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Namespaced returns rt as a namespaced TrainingRuntime: the starting point
// for a team that needs its own image or launcher but must keep the wiring.
func Namespaced(rt *trainer.ClusterTrainingRuntime, namespace, name string) *trainer.TrainingRuntime {
	out := &trainer.TrainingRuntime{TypeMeta: rt.TypeMeta, ObjectMeta: *rt.ObjectMeta.DeepCopy(), Spec: *rt.Spec.DeepCopy()}
	out.Kind = trainer.TrainingRuntimeKind
	out.Namespace, out.Name = namespace, name
	return out
}
