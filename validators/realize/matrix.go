package realize

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// The compatibility matrix: what of a TCPXO runtime's wiring survives each
// way a user can shape a TrainJob, on the linked trainer version. One table
// (Cases) drives both the tests, which check each case against the
// behaviour recorded for the version, and the compat command, which writes
// the rows docs/trainer-compat.md is built from.

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

// Outcome is a realized case.
type Outcome struct {
	Version  string
	Behavior Behavior
	// Runtime and TrainJob are the inputs as given (before defaulting).
	Runtime  client.Object
	TrainJob *trainer.TrainJob
	Result   *Result
	// RuntimeWiring and Wiring are the node replicated job's wiring in the
	// runtime and in the realized JobSet; Changes is their wiring.Diff.
	RuntimeWiring wiring.Wiring
	Wiring        wiring.Wiring
	Changes       []wiring.Change
	// Launch is the launch verdict (JudgeLaunch) of the realized JobSet.
	Launch Launch
}

// NodeJob returns the realized JobSet's node replicated job.
func (o *Outcome) NodeJob() *jobsetv1alpha2.ReplicatedJob {
	for i := range o.Result.JobSet.Spec.ReplicatedJobs {
		if o.Result.JobSet.Spec.ReplicatedJobs[i].Name == constants.Node {
			return &o.Result.JobSet.Spec.ReplicatedJobs[i]
		}
	}
	return nil
}

// NodeEnv returns the rendered value of an env var of the realized node
// container (see wiring.EnvValue) and whether it is set.
func (o *Outcome) NodeEnv(name string) (string, bool) {
	for i := range o.Wiring.NodeEnv {
		if o.Wiring.NodeEnv[i].Name == name {
			return wiring.EnvValue(&o.Wiring.NodeEnv[i]), true
		}
	}
	return "", false
}

// Other returns the realized object of the given kind and name, or nil.
func (o *Outcome) Other(kind, name string) *unstructured.Unstructured {
	for _, u := range o.Result.Others {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

// Check collects expectation failures. Tests report them with t.Error; the
// compat command records them in the row and fails.
type Check struct {
	failures []string
}

// Errorf records a failure.
func (c *Check) Errorf(format string, args ...any) {
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

// Failures returns what failed, in order.
func (c *Check) Failures() []string { return c.failures }

// BareTrainJobName is the name of every matrix TrainJob.
const BareTrainJobName = "tcpxo-job"

// BareTrainJob is the smallest TrainJob for runtime: a name and a
// runtimeRef naming the runtime (kind only when it is not the
// ClusterTrainingRuntime the CRD defaults to).
func BareTrainJob(runtime client.Object) *trainer.TrainJob {
	job := &trainer.TrainJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.SchemeGroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: BareTrainJobName, Namespace: DefaultNamespace},
		Spec:       trainer.TrainJobSpec{RuntimeRef: trainer.RuntimeRef{Name: runtime.GetName()}},
	}
	if _, ok := runtime.(*trainer.TrainingRuntime); ok {
		job.Namespace = runtime.GetNamespace()
		job.Spec.RuntimeRef.Kind = ptr.To(trainer.TrainingRuntimeKind)
	}
	return job
}

// ShippedRuntime is the runtime the matrix realizes by default: the real
// torch-distributed-tcpxo from the builders, so the compatibility report
// describes what ships, not a fixture.
func ShippedRuntime() (client.Object, error) { return shipped.Runtime() }

// ShippedBenchmark is the NCCL benchmark as committed
// (runtimes.GoldenBenchmark): derived from the shipped runtime by package
// derive, and held equal to that derivation by the coupling check. It is
// read rather than derived because derive's own proof realizes through this
// package.
func ShippedBenchmark() (*trainer.TrainingRuntime, error) {
	root, err := bom.ResolveRoot("")
	if err != nil {
		return nil, err
	}
	data, err := inputfile.Read(filepath.Join(root, filepath.FromSlash(runtimes.GoldenBenchmark)), inputfile.Spec{What: "benchmark golden", Max: inputfile.MaxSource})
	if err != nil {
		return nil, fmt.Errorf("reading the benchmark: %w", err)
	}
	var rt trainer.TrainingRuntime
	if err := yaml.UnmarshalStrict(data, &rt); err != nil {
		return nil, fmt.Errorf("%s: %w", runtimes.GoldenBenchmark, err)
	}
	return &rt, nil
}

// RunCase realizes one case. An input the linked trainer cannot express
// yields an error wrapping ErrUnsupported.
func RunCase(ctx context.Context, c Case) (*Outcome, error) {
	build := c.Runtime
	if build == nil {
		build = ShippedRuntime
	}
	rt, err := build()
	if err != nil {
		return nil, fmt.Errorf("case %s: building the runtime: %w", c.Name, err)
	}
	job := BareTrainJob(rt)
	if c.TrainJob != nil {
		if err := c.TrainJob(job); err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
	}
	res, err := Realize(ctx, rt, job)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	o := &Outcome{Version: res.TrainerVersion, Runtime: rt, TrainJob: job, Result: res}
	o.Behavior, _ = BehaviorOf(o.Version)
	rtPod, err := wiring.RuntimePodTemplate(rt, constants.Node)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	jsPod, err := wiring.JobSetPodTemplate(res.JobSet, constants.Node)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	o.RuntimeWiring = wiring.Of(rtPod, constants.Node)
	o.Wiring = wiring.Of(jsPod, constants.Node)
	o.Changes = wiring.Diff(o.RuntimeWiring, o.Wiring)
	if o.Launch, err = JudgeLaunch(rt, job, res.JobSet); err != nil {
		return nil, fmt.Errorf("case %s: judging the launch: %w", c.Name, err)
	}
	return o, nil
}

// Evaluate runs the case's expectations for the outcome's trainer version.
func Evaluate(c Case, o *Outcome) []string {
	if _, ok := BehaviorOf(o.Version); !ok {
		return []string{fmt.Sprintf("no behaviour recorded for trainer %s: review the matrix against it and add it to knownBehaviors", o.Version)}
	}
	var chk Check
	if c.Expect != nil {
		c.Expect(&chk, o)
	}
	return chk.Failures()
}

// Row is one case's line in the compatibility report.
type Row struct {
	Case           string `json:"case"`
	Summary        string `json:"summary"`
	TrainerVersion string `json:"trainerVersion"`
	// Supported is false when the linked trainer cannot express the case;
	// Note then says why.
	Supported bool   `json:"supported"`
	Note      string `json:"note,omitempty"`
	// Survives says, per wiring category, whether everything the runtime
	// set reaches the realized node pod unchanged.
	Survives map[string]bool `json:"survives,omitempty"`
	// LosesFabric lists the categories in which a change loses the fabric
	// by Judge; a change the fabric rule set allows is in Changes only.
	LosesFabric []string `json:"losesFabric,omitempty"`
	// Changes lists what was lost or changed; Added what the trainer or
	// the TrainJob added. Both in wiring.Diff order.
	Changes []string `json:"changes,omitempty"`
	Added   []string `json:"added,omitempty"`
	// Observed records values a reader of the report needs: node count,
	// the torchrun env, GPU resources, the MPI hostfile.
	Observed map[string]string `json:"observed,omitempty"`
	// Launch is the launch verdict of the realized TrainJob.
	Launch *Launch `json:"launch,omitempty"`
	// LaunchKey is the TrainJob's LaunchKey, for cases realized against
	// the shipped runtime only: the cases with one key share one verdict
	// (TestLaunchKeyDecidesLaunch).
	LaunchKey string `json:"launchKey,omitempty"`
	// Objects lists every realized object as Kind/name.
	Objects []string `json:"objects,omitempty"`
	// Unexpected lists expectation failures: realized behaviour that does
	// not match what is recorded for this trainer version.
	Unexpected []string `json:"unexpected,omitempty"`
}

// SurvivalCategories are the keys of Row.Survives.
var SurvivalCategories = []string{"annotations", "sidecars", "volumes", "node container", "node env", "node mounts", "node capabilities", "node resources", "gpu limit", "gpu request"}

// Matrix runs every case of Cases on the linked trainer and returns one row
// per case, in table order. A case that fails to realize or misses its
// expectations still yields a row (with Unexpected set), so one surprise
// does not hide the others; the error is for failures of the harness.
func Matrix(ctx context.Context) ([]Row, error) {
	var rows []Row
	for _, c := range Cases() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rows = append(rows, RowOf(ctx, c))
	}
	return rows, nil
}

// RowOf runs one case and renders its row.
func RowOf(ctx context.Context, c Case) Row {
	row := Row{Case: c.Name, Summary: c.Summary, TrainerVersion: TrainerVersion(), Supported: true}
	b, known := BehaviorOf(row.TrainerVersion)
	expressible := c.Supported == nil || c.Supported(b)
	o, err := RunCase(ctx, c)
	if errors.Is(err, ErrUnsupported) {
		row.Supported = false
		row.Note = strings.TrimPrefix(err.Error(), "case "+c.Name+": ")
		if !known {
			row.Unexpected = []string{fmt.Sprintf("no behaviour recorded for trainer %s: review the matrix against it and add it to knownBehaviors", row.TrainerVersion)}
		} else if expressible {
			row.Unexpected = []string{"the trainer cannot express this case, but its recorded behaviour says it can"}
		}
		return row
	}
	if err != nil {
		row.Unexpected = []string{"realization failed: " + err.Error()}
		return row
	}
	row.Survives = survival(o)
	row.LosesFabric = losesFabric(o)
	for _, ch := range o.Changes {
		if ch.IsAddition() {
			row.Added = append(row.Added, ch.String())
		} else {
			row.Changes = append(row.Changes, ch.String())
		}
	}
	row.Observed = observe(o)
	row.Launch = &o.Launch
	if c.Runtime == nil {
		if row.LaunchKey, err = LaunchKey(o.TrainJob); err != nil {
			row.Unexpected = append(row.Unexpected, "launch key: "+err.Error())
		}
	}
	row.Objects = append(row.Objects, "JobSet/"+o.Result.JobSet.Name)
	for _, u := range o.Result.Others {
		row.Objects = append(row.Objects, u.GetKind()+"/"+u.GetName())
	}
	if known && !expressible {
		row.Unexpected = append(row.Unexpected, "the case realized, but the recorded behaviour says the trainer cannot express it: record what it does now")
	}
	row.Unexpected = append(row.Unexpected, Evaluate(c, o)...)
	return row
}

func survival(o *Outcome) map[string]bool {
	s := make(map[string]bool, len(SurvivalCategories))
	for _, k := range SurvivalCategories {
		s[k] = true
	}
	for _, ch := range o.Changes {
		for _, k := range categories(ch) {
			s[k] = false
		}
	}
	return s
}

// losesFabric lists, in SurvivalCategories order, the categories in which a
// change the TrainJob made loses the fabric by the one fabric decision,
// Judge, with the guest config rules of the runtime's profile. A change the
// fabric rule set allows (NCCL_DEBUG, say) is in Changes but not here, and
// neither is a rule the case's runtime itself does not meet.
func losesFabric(o *Outcome) []string {
	lost := map[string]bool{}
	for _, j := range Judge(o.RuntimeWiring, o.Wiring, runtimes.RulesFor(shipped.Facts(), o.RuntimeWiring.NodeEnv)) {
		if j.What == EnvRule || !j.LosesFabric() {
			continue
		}
		for _, k := range categories(j.Change) {
			lost[k] = true
		}
	}
	var out []string
	for _, k := range SurvivalCategories {
		if lost[k] {
			out = append(out, k)
		}
	}
	return out
}

// categories names the SurvivalCategories a lost or changed element belongs
// to; an addition belongs to none.
func categories(ch wiring.Change) []string {
	if ch.IsAddition() {
		return nil
	}
	// wiring.Diff reports a sidecar's env, mounts, capabilities and resources
	// under its own path; they belong to the sidecar, not the node.
	if strings.HasPrefix(ch.Path, "initContainer ") {
		return []string{"sidecars"}
	}
	switch ch.What {
	case wiring.AnnotationLost, wiring.AnnotationChanged:
		return []string{"annotations"}
	case wiring.InitContainerLost, wiring.InitContainerChanged:
		return []string{"sidecars"}
	case wiring.VolumeLost, wiring.VolumeChanged:
		return []string{"volumes"}
	case wiring.NodeContainerLost:
		return []string{"node container"}
	case wiring.EnvLost, wiring.EnvOverridden, wiring.EnvReordered:
		return []string{"node env"}
	case wiring.MountLost, wiring.MountChanged:
		return []string{"node mounts"}
	case wiring.CapabilityLost:
		return []string{"node capabilities"}
	case wiring.ResourceLost, wiring.ResourceChanged:
		switch ch.Path {
		case "limits " + gpuResource:
			return []string{"node resources", "gpu limit"}
		case "requests " + gpuResource:
			return []string{"node resources", "gpu request"}
		}
		return []string{"node resources"}
	}
	return nil
}

const gpuResource = "nvidia.com/gpu"

func observe(o *Outcome) map[string]string {
	m := map[string]string{}
	if nj := o.NodeJob(); nj != nil {
		if p := nj.Template.Spec.Parallelism; p != nil {
			m["node parallelism"] = fmt.Sprint(*p)
		}
		if p := nj.Template.Spec.Completions; p != nil {
			m["node completions"] = fmt.Sprint(*p)
		}
	}
	for _, name := range []string{constants.TorchEnvNumNodes, constants.TorchEnvNumProcPerNode} {
		if v, ok := o.NodeEnv(name); ok {
			m["env "+name] = v
		} else {
			m["env "+name] = "<unset>"
		}
	}
	for kind, list := range map[string]corev1.ResourceList{"limits": o.Wiring.NodeResources.Limits, "requests": o.Wiring.NodeResources.Requests} {
		if q, ok := list[gpuResource]; ok {
			m[kind+" "+gpuResource] = q.String()
		} else {
			m[kind+" "+gpuResource] = "<unset>"
		}
	}
	if cm := o.Other("ConfigMap", BareTrainJobName+constants.MPIHostfileConfigMapSuffix); cm != nil {
		hf, _, _ := unstructured.NestedString(cm.Object, "data", constants.MPIHostfileName)
		m["mpi hostfile"] = hf
	}
	return m
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
// failing to fail.
func expectLaunch(c *Check, o *Outcome, failing ...string) {
	if !o.Launch.Judged {
		c.Errorf("launch not judged: %s", o.Launch.Summary)
		return
	}
	var got []string
	for _, p := range o.Launch.Problems {
		got = append(got, p.Check)
	}
	if !slices.Equal(got, failing) {
		c.Errorf("launch checks failing = %q, want %q (%s)", got, failing, o.Launch.Summary)
	}
}

// expectChanges requires the non-addition changes to be exactly want.
func expectChanges(c *Check, o *Outcome, want ...wiring.Change) {
	got := map[wiring.Change]bool{}
	for _, ch := range o.Changes {
		if !ch.IsAddition() {
			got[ch] = true
		}
	}
	for _, w := range want {
		if !got[w] {
			c.Errorf("missing change %q", w)
		}
		delete(got, w)
	}
	for _, ch := range o.Changes {
		if got[ch] {
			c.Errorf("unexpected change %q", ch)
		}
	}
}

func expectAdded(c *Check, o *Outcome, want ...wiring.Change) {
	for _, w := range want {
		found := false
		for _, ch := range o.Changes {
			found = found || ch == w
		}
		if !found {
			c.Errorf("missing addition %q", w)
		}
	}
}

func expectAddedPath(c *Check, o *Outcome, what, path string) {
	for _, ch := range o.Changes {
		if ch.What == what && ch.Path == path {
			return
		}
	}
	c.Errorf("missing %s %s", what, path)
}

func expectNodes(c *Check, o *Outcome, n int32) {
	nj := o.NodeJob()
	if nj == nil {
		c.Errorf("realized JobSet has no %s replicated job", constants.Node)
		return
	}
	if p := ptr.Deref(nj.Template.Spec.Parallelism, -1); p != n {
		c.Errorf("node parallelism = %d, want %d", p, n)
	}
	if p := ptr.Deref(nj.Template.Spec.Completions, -1); p != n {
		c.Errorf("node completions = %d, want %d", p, n)
	}
}

func expectEnv(c *Check, o *Outcome, want map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(want)) {
		got, ok := o.NodeEnv(k)
		if !ok {
			c.Errorf("node env %s unset, want %q", k, want[k])
		} else if got != want[k] {
			c.Errorf("node env %s = %q, want %q", k, got, want[k])
		}
	}
}

func expectEnvUnset(c *Check, o *Outcome, names ...string) {
	for _, k := range names {
		if got, ok := o.NodeEnv(k); ok {
			c.Errorf("node env %s = %q, want unset", k, got)
		}
	}
}

// expectEnvCount guards against an upsert that appends instead of
// replacing: with duplicates the container's last value would win, whatever
// a by-name diff says.
func expectEnvCount(c *Check, o *Outcome, name string, n int) {
	count := 0
	for _, e := range o.Wiring.NodeEnv {
		if e.Name == name {
			count++
		}
	}
	if count != n {
		c.Errorf("node env %s appears %d times, want %d", name, count, n)
	}
}

// expectGPUs checks the node container's nvidia.com/gpu limit and request;
// "" means absent.
func expectGPUs(c *Check, o *Outcome, limit, request string) {
	for _, x := range []struct {
		kind string
		list corev1.ResourceList
		want string
	}{{"limits", o.Wiring.NodeResources.Limits, limit}, {"requests", o.Wiring.NodeResources.Requests, request}} {
		q, ok := x.list[gpuResource]
		switch {
		case x.want == "" && ok:
			c.Errorf("node %s %s = %s, want absent", x.kind, gpuResource, q.String())
		case x.want != "" && !ok:
			c.Errorf("node %s %s absent, want %s", x.kind, gpuResource, x.want)
		case x.want != "" && q.Cmp(resource.MustParse(x.want)) != 0:
			c.Errorf("node %s %s = %s, want %s", x.kind, gpuResource, q.String(), x.want)
		}
	}
}

// expectSnapshot checks the runtime snapshot ConfigMap is there exactly
// when the version writes one, and that it holds the runtime.
func expectSnapshot(c *Check, o *Outcome) {
	cm := o.Other("ConfigMap", BareTrainJobName+"-runtime-snapshot")
	switch {
	case o.Behavior.RuntimeSnapshot && cm == nil:
		c.Errorf("no %s-runtime-snapshot ConfigMap", BareTrainJobName)
	case !o.Behavior.RuntimeSnapshot && cm != nil:
		c.Errorf("unexpected runtime snapshot ConfigMap %s", cm.GetName())
	case cm != nil:
		data, _, _ := unstructured.NestedString(cm.Object, "data", "runtime")
		if !strings.Contains(data, "name: "+o.Runtime.GetName()) {
			c.Errorf("runtime snapshot does not hold runtime %s", o.Runtime.GetName())
		}
	}
}

func decodeBase64(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}

// Report is the compat command's output: one trainer version's matrix.
type Report struct {
	TrainerVersion string `json:"trainerVersion"`
	Rows           []Row  `json:"rows"`
}

// MarshalReport renders rows as the compat command writes them, and as the
// committed testdata/compat-<version>.json holds them: indented, without
// HTML escaping (values such as "<none>" and "->" stay readable), newline
// terminated. Same rows, same bytes.
func MarshalReport(rows []Row) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(Report{TrainerVersion: TrainerVersion(), Rows: rows}); err != nil {
		return nil, fmt.Errorf("encoding compat report: %w", err)
	}
	return buf.Bytes(), nil
}

// CompatReportPath is where the committed report for a trainer version
// lives, relative to this package's directory.
func CompatReportPath(version string) string {
	return "testdata/compat-" + version + ".json"
}
