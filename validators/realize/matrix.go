package realize

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
//
// The matrix is filed by idea, so each can be read (and changed) alone:
// this file runs it (RunCase, Matrix, RowOf) and turns an outcome into its
// row; cases.go holds the table (Cases, with the behaviour each trainer
// version is recorded to have) and hazard_cases.go its v2.3.0 hazard rows;
// check.go the Check a case's expectations report through, which stands in
// for testing.T so the compat command can run them too; report.go the
// report a run writes.

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
		if j.What == EnvRule || j.What == CapabilityRule || !j.LosesFabric() {
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
