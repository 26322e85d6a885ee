package realize

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"

	"github.com/tcpxogen/tcpxogen/internal/compat"
	"github.com/tcpxogen/tcpxogen/internal/launch"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
)

// The launch verdict: whether torchrun, started in the realized node
// container, would run the job the TrainJob describes. The wiring can be
// intact while the launch is wrong (more ranks than GPUs, or no rendezvous
// at all), and nothing errors until the job runs.

// masterEnv are the rendezvous variables the torch plugin leaves out when
// the trainer command is torchtune's entrypoint: torchtune gets the
// rendezvous endpoint as a command-line argument instead.
var masterEnv = []string{constants.TorchEnvMasterAddr, constants.TorchEnvMasterPort}

// The launch checks, as LaunchProblem.Check names them.
const (
	LaunchRendezvous = "rendezvous"
	LaunchProcesses  = "processes per node"
	LaunchNodes      = "node count"
)

// Upstream references a launch problem cites. Each was read on GitHub when
// recorded; the status is as of then.

// Launch is the launch verdict for one realized TrainJob on one trainer
// version; LaunchProblem is one failed check of it. Both are declared in
// internal/compat because the compatibility report carries the verdict
// (Row.Launch) and the report's reader must not link this package.
type (
	Launch        = compat.Launch
	LaunchProblem = compat.LaunchProblem
)

// JudgeLaunch judges the launch of job (as given, before defaulting) on
// runtime, from the JobSet the trainer realized for it: the rendezvous
// variables the torch plugin injects, processes per node against the GPUs
// the node container gets, and the node count the job asks for against the
// one the JobSet runs.
func JudgeLaunch(runtime client.Object, job *trainer.TrainJob, js *jobsetv1alpha2.JobSet) (Launch, error) {
	policy, err := mlPolicy(runtime)
	if err != nil {
		return Launch{}, err
	}
	if policy == nil || policy.Torch == nil {
		return Launch{Summary: "not judged: the runtime has no torch policy, and the launch checks are torchrun's"}, nil
	}
	if job == nil {
		return Launch{}, fmt.Errorf("TrainJob is nil")
	}
	rj := replicatedJob(js, constants.Node)
	if rj == nil {
		return Launch{}, fmt.Errorf("JobSet %s has no replicated job %q", js.Name, constants.Node)
	}
	var node *corev1.Container
	for i := range rj.Template.Spec.Template.Spec.Containers {
		if c := &rj.Template.Spec.Template.Spec.Containers[i]; c.Name == constants.Node {
			node = c
		}
	}
	if node == nil {
		return Launch{}, fmt.Errorf("JobSet %s: replicated job %q has no %q container", js.Name, constants.Node, constants.Node)
	}
	env := map[string]string{}
	for i := range node.Env {
		env[node.Env[i].Name] = wiring.EnvValue(&node.Env[i])
	}
	j := launchJudge{job: job, env: env, gpus: gpuLimit(node)}
	var l Launch
	l.Judged = true
	j.rendezvous(&l)
	j.processes(&l)
	j.nodes(&l, policy, rj)
	l.Summary = launchSummary(l)
	return l, nil
}

type launchJudge struct {
	job  *trainer.TrainJob
	env  map[string]string
	gpus int64 // the node container's nvidia.com/gpu limit; 0 without one
}

func (j launchJudge) torchtune() bool {
	return j.job.Spec.Trainer != nil && slices.Equal(j.job.Spec.Trainer.Command, constants.TorchTuneEntrypoint)
}

func (j launchJudge) rendezvous(l *Launch) {
	var missing []string
	for _, name := range launch.RendezvousEnv {
		if j.torchtune() && slices.Contains(masterEnv, name) {
			continue
		}
		if _, ok := j.env[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		if j.torchtune() {
			l.Notes = append(l.Notes, "the torch plugin set PET_NNODES, PET_NPROC_PER_NODE and PET_NODE_RANK; torchtune gets the rendezvous endpoint as an argument")
		} else {
			l.Notes = append(l.Notes, "the torch plugin set "+strings.Join(launch.RendezvousEnv, ", "))
		}
		return
	}
	p := LaunchProblem{
		Check:   LaunchRendezvous,
		Problem: fmt.Sprintf("the node container has no %s: torchrun cannot form a rendezvous, every node would train alone", strings.Join(missing, ", ")),
	}
	if j.job.Spec.Trainer == nil {
		p.Cause = "the TrainJob has no spec.trainer, and the torch plugin injects the rendezvous variables only when it is set"
		p.Upstream = launch.UpstreamNoTrainer
		p.Fix = "add `spec.trainer: {}` (an empty trainer is enough; the runtime supplies the rest)"
	} else {
		p.Cause = "the trainer's torch plugin did not inject them into the node container"
		p.Fix = "make sure the runtime's node replicated job carries the label trainer.kubeflow.org/trainjob-ancestor-step: trainer and a container named node"
	}
	l.Problems = append(l.Problems, p)
}

func (j launchJudge) processes(l *Launch) {
	nproc, ok := j.env[constants.TorchEnvNumProcPerNode]
	if !ok {
		return // reported by the rendezvous check
	}
	gpus := fmt.Sprintf("nvidia.com/gpu: %d", j.gpus)
	if j.gpus == 0 {
		gpus = "no nvidia.com/gpu"
	}
	if nproc == "auto" {
		if j.gpus > 0 {
			l.Notes = append(l.Notes, fmt.Sprintf("PET_NPROC_PER_NODE=auto: torchrun starts one process per visible GPU, %d here (%s)", j.gpus, gpus))
			return
		}
		cause, upstream := j.gpuLossCause()
		l.Problems = append(l.Problems, LaunchProblem{
			Check:    LaunchProcesses,
			Problem:  "PET_NPROC_PER_NODE=auto on a node container with no nvidia.com/gpu: torchrun would start one process per host CPU, and no GPU",
			Cause:    cause,
			Upstream: upstream,
			Fix:      "keep the runtime's nvidia.com/gpu: 8: drop spec.trainer.resourcesPerNode, or restate nvidia.com/gpu: \"8\" in its limits and requests",
		})
		return
	}
	n, err := strconv.ParseInt(nproc, 10, 32)
	if err != nil || n < 1 {
		l.Problems = append(l.Problems, LaunchProblem{
			Check:   LaunchProcesses,
			Problem: fmt.Sprintf("PET_NPROC_PER_NODE=%q is neither a positive number nor auto", nproc),
			Fix:     "remove spec.trainer.numProcPerNode (auto starts one process per GPU) or set it to the GPU count",
		})
		return
	}
	if n == j.gpus {
		l.Notes = append(l.Notes, fmt.Sprintf("PET_NPROC_PER_NODE=%d: one process per GPU (%s)", n, gpus))
		return
	}
	started := fmt.Sprintf("%d processes for %d GPUs", n, j.gpus)
	if j.gpus == 0 {
		started = fmt.Sprintf("%d processes and no GPU", n)
	}
	p := LaunchProblem{
		Check:   LaunchProcesses,
		Problem: fmt.Sprintf("PET_NPROC_PER_NODE=%d on a node container with %s: torchrun would start %s", n, gpus, started),
	}
	tr := j.job.Spec.Trainer
	switch {
	case tr != nil && tr.NumProcPerNode != nil:
		p.Cause = fmt.Sprintf("spec.trainer.numProcPerNode is %d", *tr.NumProcPerNode)
		if j.gpus == 0 {
			cause, upstream := j.gpuLossCause()
			p.Cause += ", but " + cause
			p.Upstream = upstream
			p.Fix = "keep the runtime's GPUs first: drop spec.trainer.resourcesPerNode, or restate nvidia.com/gpu: \"8\" in its limits and requests"
		} else {
			p.Fix = fmt.Sprintf("set spec.trainer.numProcPerNode to %d, or remove it (auto starts one process per GPU)", j.gpus)
		}
	case tr != nil && tr.ResourcesPerNode != nil && j.gpus > 0:
		// The pod keeps the runtime's GPUs (v2.3.0 merges resourcesPerNode
		// into them), but the torch plugin counts only the override.
		p.Cause = fmt.Sprintf("spec.trainer.resourcesPerNode has no GPU, so the torch plugin sizes torchrun from its cpu (%d), while the node container keeps the runtime's %d GPUs", n, j.gpus)
		if !hasCPU(tr.ResourcesPerNode) {
			// The process-count collapse: a memory-only override counts
			// neither GPUs nor CPUs, and the plugin starts max(1, 0).
			p.Cause = fmt.Sprintf("spec.trainer.resourcesPerNode sets neither a GPU nor cpu (a memory-only override), so the torch plugin starts one process per node, while the node container keeps the runtime's %d GPUs", j.gpus)
		}
		p.Upstream = launch.UpstreamRawOverride
		p.Fix = fmt.Sprintf("restate the GPUs in spec.trainer.resourcesPerNode (nvidia.com/gpu: \"%d\" in its limits and requests), or set spec.trainer.numProcPerNode: %d, or drop the override", j.gpus, j.gpus)
	case tr != nil && tr.ResourcesPerNode != nil:
		cause, upstream := j.gpuLossCause()
		p.Cause = fmt.Sprintf("the torch plugin sizes torchrun from the cpu of spec.trainer.resourcesPerNode (%d) when it has no GPU; and %s", n, cause)
		if !hasCPU(tr.ResourcesPerNode) {
			p.Cause = "the torch plugin starts one process per node when spec.trainer.resourcesPerNode sets neither a GPU nor cpu (a memory-only override); and " + cause
		}
		p.Upstream = upstream
		p.Fix = "drop the GPU-less spec.trainer.resourcesPerNode, or restate nvidia.com/gpu: \"8\" in its limits and requests; numProcPerNode alone does not bring the GPUs back"
	default:
		p.Cause = "the runtime's node container resources give the torch plugin no GPU to count"
		p.Fix = "set spec.trainer.numProcPerNode to the GPU count"
	}
	l.Problems = append(l.Problems, p)
}

// hasCPU reports whether a resourcesPerNode sets cpu, which is what the
// torch plugin counts when it finds no GPU there.
func hasCPU(r *corev1.ResourceRequirements) bool {
	_, limit := r.Limits[corev1.ResourceCPU]
	_, request := r.Requests[corev1.ResourceCPU]
	return limit || request
}

// gpuLossCause explains a node container without GPUs, and names the
// upstream reference. The shipped runtime gives the node container
// nvidia.com/gpu: 8, so a TrainJob override is what takes them away.
func (j launchJudge) gpuLossCause() (cause, upstream string) {
	if tr := j.job.Spec.Trainer; tr != nil && tr.ResourcesPerNode != nil {
		return "spec.trainer.resourcesPerNode has no nvidia.com/gpu and replaced the node container's resources, so no GPU reaches it", launch.UpstreamReplace
	}
	return "the node container has no nvidia.com/gpu limit", ""
}

func (j launchJudge) nodes(l *Launch, policy *trainer.MLPolicy, rj *jobsetv1alpha2.ReplicatedJob) {
	// The trainer's own defaulting: the runtime's mlPolicy.numNodes, 1 when
	// unset, and the TrainJob's spec.trainer.numNodes over both.
	want, from := ptr.Deref(policy.NumNodes, 1), "the runtime's mlPolicy.numNodes"
	if tr := j.job.Spec.Trainer; tr != nil && tr.NumNodes != nil {
		want, from = *tr.NumNodes, "spec.trainer.numNodes"
	}
	parallelism := ptr.Deref(rj.Template.Spec.Parallelism, 1)
	realized := int64(rj.Replicas) * int64(parallelism)
	var wrong []string
	if realized != int64(want) {
		wrong = append(wrong, fmt.Sprintf("the JobSet runs %d × %d node pods", rj.Replicas, parallelism))
	}
	if v, ok := j.env[constants.TorchEnvNumNodes]; ok && v != strconv.Itoa(int(want)) {
		wrong = append(wrong, fmt.Sprintf("PET_NNODES=%s", v))
	}
	if len(wrong) == 0 {
		l.Notes = append(l.Notes, fmt.Sprintf("%d node(s), from %s: the JobSet runs %d × %d node pods", want, from, rj.Replicas, parallelism))
		return
	}
	l.Problems = append(l.Problems, LaunchProblem{
		Check:   LaunchNodes,
		Problem: fmt.Sprintf("%s asks for %d node(s), but %s", from, want, strings.Join(wrong, " and ")),
		Fix:     "report this: the trainer sizes both from the same count, so tcpxogen's expectation is out of date",
	})
}

func launchSummary(l Launch) string {
	if l.OK() {
		return "launch ok"
	}
	checks := make([]string, len(l.Problems))
	for i, p := range l.Problems {
		checks[i] = p.Check
	}
	return "launch fails: " + strings.Join(checks, ", ")
}

// gpuLimit is the node container's nvidia.com/gpu limit: what the device
// plugin allocates (the API server defaults an extended resource's request
// to its limit, and rejects a request without one).
func gpuLimit(c *corev1.Container) int64 {
	q, ok := c.Resources.Limits[gpuResource]
	if !ok {
		return 0
	}
	return q.Value()
}

func mlPolicy(runtime client.Object) (*trainer.MLPolicy, error) {
	switch rt := runtime.(type) {
	case *trainer.ClusterTrainingRuntime:
		if rt != nil {
			return rt.Spec.MLPolicy, nil
		}
	case *trainer.TrainingRuntime:
		if rt != nil {
			return rt.Spec.MLPolicy, nil
		}
	default:
		return nil, fmt.Errorf("runtime must be a *ClusterTrainingRuntime or *TrainingRuntime, got %T", runtime)
	}
	return nil, fmt.Errorf("runtime is nil")
}

func replicatedJob(js *jobsetv1alpha2.JobSet, name string) *jobsetv1alpha2.ReplicatedJob {
	if js == nil {
		return nil
	}
	for i := range js.Spec.ReplicatedJobs {
		if js.Spec.ReplicatedJobs[i].Name == name {
			return &js.Spec.ReplicatedJobs[i]
		}
	}
	return nil
}

// LaunchKey describes, canonically, the parts of a TrainJob that decide
// its launch on the shipped runtime: two TrainJobs with the same key get
// the same launch verdict on a given trainer version. The compatibility
// page and the matrix report carry it per case.
//
// Read from the torch plugin and the resourcesPerNode handling of every
// recorded version: the key keeps whether spec.trainer is set (PET_* are
// injected only then), numProcPerNode, whether the command is torchtune's
// (no PET_MASTER_*), the cpu and GPU entries of resourcesPerNode's limits
// and requests and whether each list is set (the plugin counts any resource
// whose name contains "gpu", then cpu; v2.2.0 replaces the node resources
// when either list is set), and what of runtimePatches can reach the launch
// (launchPatches). It leaves out what reaches neither the process count nor
// the GPUs: numNodes (PET_NNODES and the JobSet's parallelism come from
// one count), memory and other resources, image, args and env (the torch
// webhook rejects PET_* there). TestLaunchKeyDecidesLaunch holds every
// recorded matrix to this.
func LaunchKey(job *trainer.TrainJob) (string, error) {
	if job == nil {
		return "", fmt.Errorf("TrainJob is nil")
	}
	var parts []string
	tr := job.Spec.Trainer
	if tr == nil {
		parts = append(parts, "no spec.trainer")
	} else {
		parts = append(parts, "spec.trainer")
		if tr.NumProcPerNode != nil {
			parts = append(parts, fmt.Sprintf("numProcPerNode %d", *tr.NumProcPerNode))
		}
		if slices.Equal(tr.Command, constants.TorchTuneEntrypoint) {
			parts = append(parts, "torchtune")
		}
		if r := tr.ResourcesPerNode; r != nil {
			parts = append(parts, "resourcesPerNode limits "+launchResources(r.Limits)+" requests "+launchResources(r.Requests))
		}
	}
	patches, err := launchPatches(job.Spec.RuntimePatches)
	if err != nil {
		return "", err
	}
	return strings.Join(append(parts, patches...), "; "), nil
}

// launchPatches renders what of spec.runtimePatches can reach the launch:
// a replicated job's template metadata (its labels tell the trainer which
// job is the trainer's) and PET_* env a container patch sets. Volumes,
// mounts, scheduling and security settings reach neither the process count
// nor the GPUs.
func launchPatches(patches []trainer.RuntimePatch) ([]string, error) {
	var parts []string
	for i, rp := range patches {
		if rp.TrainingRuntimeSpec == nil || rp.TrainingRuntimeSpec.Template == nil || rp.TrainingRuntimeSpec.Template.Spec == nil {
			continue
		}
		for _, rj := range rp.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs {
			if rj.Template == nil {
				continue
			}
			if m := rj.Template.Metadata; m != nil {
				raw, err := json.Marshal(m)
				if err != nil {
					return nil, fmt.Errorf("encoding spec.runtimePatches[%d] replicated job %s metadata: %w", i, rj.Name, err)
				}
				parts = append(parts, fmt.Sprintf("runtimePatches[%d] job %s metadata %s", i, rj.Name, raw))
			}
			if rj.Template.Spec == nil || rj.Template.Spec.Template == nil || rj.Template.Spec.Template.Spec == nil {
				continue
			}
			pod := rj.Template.Spec.Template.Spec
			for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
				for k := range c.Env {
					if strings.HasPrefix(c.Env[k].Name, "PET_") {
						parts = append(parts, fmt.Sprintf("runtimePatches[%d] job %s container %s env %s=%s", i, rj.Name, c.Name, c.Env[k].Name, wiring.EnvValue(&c.Env[k])))
					}
				}
			}
		}
	}
	return parts, nil
}

// launchResources renders the entries of a resource list that reach the
// torch plugin's process count, sorted; "unset" for a nil list, which
// v2.2.0 treats differently from an empty one.
func launchResources(l corev1.ResourceList) string {
	if l == nil {
		return "unset"
	}
	var kept []string
	for _, name := range slices.Sorted(maps.Keys(l)) {
		if name == corev1.ResourceCPU || strings.Contains(strings.ToLower(string(name)), "gpu") {
			q := l[name]
			kept = append(kept, string(name)+"="+q.String())
		}
	}
	return "{" + strings.Join(kept, ",") + "}"
}
