package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/internal/evidence"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/validators/cluster"
	"github.com/tcpxogen/tcpxogen/validators/performance/agreement"
	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
	"github.com/tcpxogen/tcpxogen/validators/performance/lifecycle"
	"github.com/tcpxogen/tcpxogen/validators/performance/pool"
	"github.com/tcpxogen/tcpxogen/validators/performance/report"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

// ctrCRD is the CRD whose defaults the agreement check applies.
const ctrCRD = "clustertrainingruntimes.trainer.kubeflow.org"

// preflightResult is what preflight found and decided.
type preflightResult struct {
	host        string
	state       lifecycle.TrainerState
	findings    []string
	trainerPlan lifecycle.Plan

	gpuNodes int
	// gateFailed: the GPU nodes are not a pool of the recipe's fabric and
	// machine type, so check cluster's checks are not run on them.
	gateFailed bool

	// deployed is the deployed shipped runtime; nil when there is none.
	deployed *trainer.ClusterTrainingRuntime
	// diffs are the agreement check's differences.
	diffs []string
	// applyShipped is the install row: the cluster has no trainer, so no
	// shipped runtime can be deployed; the run applies the rendered one
	// once the trainer is ready, reads it back, checks agreement and
	// derives from what the server stored.
	applyShipped bool

	bench    *trainer.TrainingRuntime
	trainJob *trainer.TrainJob

	sections []section
	problems []problem
}

// section is one part of the printed plan.
type section struct {
	title string
	lines []string
}

// problem is one reason the run is refused.
type problem struct {
	part string // the plan section it belongs to
	what string // what is wrong, and how to fix it
}

func (v *validation) section(title string, lines ...string) *section {
	v.sections = append(v.sections, section{title: title, lines: lines})
	return &v.sections[len(v.sections)-1]
}

func (v *validation) refuse(part, format string, a ...any) {
	v.problems = append(v.problems, problem{part: part, what: fmt.Sprintf(format, a...)})
}

// preflight reads the cluster and builds the plan. It never writes. Problems
// with the cluster are collected (all of them, so one run shows everything
// to fix); an error is returned only when the cluster cannot be read or the
// run cannot go on at all.
func (v *validation) preflight(ctx context.Context, cl *Clients) error {
	v.host = cl.Host
	if err := v.checkTrainer(ctx, cl); err != nil {
		return err
	}
	if err := v.checkPool(ctx, cl); err != nil {
		return err
	}
	if err := v.checkCluster(ctx, cl); err != nil {
		return err
	}
	if err := v.checkNamespace(ctx, cl); err != nil {
		return err
	}
	source, err := v.checkShipped(ctx, cl)
	if err != nil {
		return err
	}
	v.planBenchmark(source)
	return nil
}

func (v *validation) checkTrainer(ctx context.Context, cl *Clients) error {
	state, findings, err := lifecycle.Observe(ctx, cl.cluster())
	if err != nil {
		return fmt.Errorf("observing Kubeflow Trainer on %s: %w", cl.Host, err)
	}
	v.state, v.findings = state, findings
	d := lifecycle.Decide(v.rec.DeclaresTrainer(), state)
	source := v.opts.TrainerManifests
	if d.Install && v.trainerObjs == nil {
		// No --trainer-manifests: the pinned release, rendered from the
		// modules this binary links; the file stays as an override.
		b := v.in.BOM
		objs, err := renderPinnedTrainer(b)
		if err != nil {
			return badInput("the recipe does not declare Kubeflow Trainer and the cluster has none, so validate installs the pinned trainer %s for the benchmark (and removes it afterwards), but rendering it from its Go module failed: %w; pass its manifests with --trainer-manifests FILE, rendered with: %s",
				b.Trainer.Version, err, kustomizeHint(b))
		}
		v.trainerObjs, source = objs, renderedTrainer
	}
	v.trainerPlan, err = lifecycle.NewPlan(d, func() ([]*unstructured.Unstructured, error) { return v.trainerObjs, nil })
	if err != nil {
		return fmt.Errorf("planning the trainer install: %w", err)
	}
	if d.Install {
		if err := grantInstall(cl, v.opts.Namespace, v.trainerPlan.Install); err != nil {
			return err
		}
	}
	lines := strings.Split(strings.TrimRight(v.trainerPlan.String(), "\n"), "\n")
	s := v.section(lines[0], lines[1:]...)
	if d.Install {
		s.lines = append(s.lines, fmt.Sprintf("  the pinned trainer %s, from %s", v.in.BOM.Trainer.Version, source))
	}
	s.lines = append(s.lines, fmt.Sprintf("  observed: the trainer is %s", state))
	for _, f := range findings {
		s.lines = append(s.lines, "    "+f)
	}
	if d.Failed() {
		v.refuse("trainer lifecycle", "%s: %s %s", d.Action, d.Explanation, d.Remedy)
	}
	return nil
}

// checkPool judges the GPU nodes of the recipe's machine type (the nodes
// the shipped runtime's node selector sends the benchmark to) as one
// homogeneous pool of it. The machine type decides the fabric, so it is
// judged first (cluster.CheckPool, as check cluster does): when no GPU node
// is of the recipe's machine type, the GPU nodes there are are judged as a
// pool of the run's fabric, and the refusal names both (A3 Ultra nodes for
// a TCPXO recipe, A3 Mega nodes for a gIB one, A3 High or A3 Edge for
// either, the other gIB machine type than the recipe's). GPU nodes of other
// machine types beside the pool are not the benchmark's and are left out.
func (v *validation) checkPool(ctx context.Context, cl *Clients) error {
	nodes, err := cl.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return readError("Nodes", nodesResource, "list", err)
	}
	sel := v.poolSelector()
	var gpus, selected []corev1.Node
	for _, n := range nodes.Items {
		if !pool.IsGPUNode(&n) {
			continue
		}
		gpus = append(gpus, n)
		if sel.Matches(labels.Set(n.Labels)) {
			selected = append(selected, n)
		}
	}
	if err := v.gatePool(gpus, selected); err != nil {
		v.gateFailed = true
		v.section("GPU pool: FAILED", "  "+indent(err.Error(), "  "))
		v.refuse("GPU pool", "%s", err)
		return nil
	}
	want := pool.For(v.mt, v.fab).WithMapping(v.rec.Interfaces())
	judged := selected
	if len(selected) == 0 {
		judged = nodes.Items // CheckNodes says what the GPU nodes there are lack
	}
	if err := pool.CheckNodes(judged, want); err != nil {
		v.section("GPU pool: FAILED", "  "+indent(err.Error(), "  "))
		v.refuse("GPU pool", "%s", err)
		return nil
	}
	v.gpuNodes = len(selected)
	s := v.section("GPU pool: ok",
		fmt.Sprintf("  %d GPU nodes, all %s with %d GPUs and the recipe's %d GPU-NIC networks (%s)",
			v.gpuNodes, want.Accelerator, want.GPUs, len(want.GPUNICNetworks), strings.Join(want.GPUNICNetworks, ", ")))
	if others := len(gpus) - len(selected); others > 0 {
		s.lines = append(s.lines, fmt.Sprintf("  %d GPU node(s) of other machine types left out: the benchmark's pods select %s", others, sel))
	}
	if v.gpuNodes < v.opts.Nodes {
		s.title = "GPU pool: FAILED"
		v.refuse("GPU pool", "the benchmark spans --nodes %d GPU nodes but the pool has %d: pass --nodes %d or scale the %s node pool up", v.opts.Nodes, v.gpuNodes, v.gpuNodes, v.mt.Name)
	}
	return nil
}

// poolSelector selects the nodes of the recipe's machine type by their
// accelerator label, as the fabric's shipped runtime and check cluster's
// default --node-selector do (for TCPXO, cluster.DefaultNodeSelector).
func (v *validation) poolSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{fabric.AcceleratorLabel: v.mt.Accelerator})
}

// gatePool is the machine-type gate: the selected nodes must be a pool of
// the run's fabric (cluster.CheckPool: one machine type, labelled, not
// DRANET) of the recipe's machine type; with none selected, the GPU nodes
// there are say what the cluster is instead, naming both.
func (v *validation) gatePool(gpus, selected []corev1.Node) error {
	judged := selected
	if len(selected) == 0 {
		if len(gpus) == 0 {
			return nil // pool.CheckNodes names it: no GPU nodes
		}
		judged = gpus
	}
	mt, err := cluster.CheckPool(judged, v.fab)
	if err != nil {
		// CheckPool speaks check cluster's flags; validate's pool is the
		// one the recipe's machine type selects.
		return fmt.Errorf("the recipe is for %s (%s, --fabric %s), but: %w (validate benchmarks the GPU nodes labelled %s)", v.mt.Name, v.fab.Title, v.fab.Name, err, v.poolSelector())
	}
	if mt.Name != v.mt.Name {
		return fmt.Errorf("the recipe is for %s (%s), but the GPU nodes (%d) are %s: %s selects %s nodes, so it would not run here; give the %s pool's recipe (criteria.accelerator %s), or add a %s node pool",
			v.mt.Name, v.mt.Accelerator, len(judged), mt.Name, v.runtimeName(), v.mt.Name, mt.Name, mt.GPU, v.mt.Name)
	}
	return nil
}

func (v *validation) checkNamespace(ctx context.Context, cl *Clients) error {
	ns := v.opts.Namespace
	_, err := cl.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		v.section("namespace: FAILED", fmt.Sprintf("  %s does not exist", ns))
		v.refuse("namespace", "namespace %s does not exist: create it (kubectl create namespace %s) or pass --namespace with an existing one", ns, ns)
	case err != nil:
		return readError("Namespace "+ns, namespacesResource, "get", err)
	default:
		v.section("namespace: ok", fmt.Sprintf("  %s exists; the benchmark's objects are created there", ns))
	}
	return nil
}

// checkShipped finds the runtime the benchmark is derived from and checks
// recipe → deployed → rendered agreement. It returns nil when there is none
// to derive from.
func (v *validation) checkShipped(ctx context.Context, cl *Clients) (*trainer.ClusterTrainingRuntime, error) {
	title := "shipped runtime: ClusterTrainingRuntime " + v.runtimeName()
	if v.trainerPlan.Decision.Install {
		// Nothing can be deployed where the trainer's CRDs are not.
		v.applyShipped = true
		v.section(title+": to be applied",
			"  not deployed: the cluster has no trainer, so there is nothing to read; after installing the trainer the run",
			"  applies it as the recipe's mapping renders it ("+v.rec.Interfaces().String()+"),",
			"  reads it back, checks that it agrees with the render, and derives the benchmark from what the server stored")
		return v.rendered, nil
	}
	deployed, err := deployedRuntime(ctx, cl, v.runtimeName())
	if err != nil {
		return nil, err
	}
	if deployed == nil {
		v.section(title+": FAILED", "  not deployed")
		v.refuse("shipped runtime", "ClusterTrainingRuntime %s is not deployed, so there is no shipped runtime to benchmark: render it from the recipe's mapping and apply it: %s | kubectl apply -f -",
			v.runtimeName(), v.renderCommand())
		return nil, nil
	}
	v.deployed = deployed
	sv, err := clusterValidator(ctx, cl)
	if err != nil {
		return nil, err
	}
	v.diffs, err = agreement.Compare(sv, deployed, v.rendered)
	if err != nil {
		return nil, fmt.Errorf("comparing the deployed %s with the render: %w", v.runtimeName(), err)
	}
	if len(v.diffs) > 0 {
		s := v.section(title+": FAILED", fmt.Sprintf("  deployed, but differs from what the recipe's mapping renders in %d place(s):", len(v.diffs)))
		for _, d := range v.diffs {
			s.lines = append(s.lines, "    "+d)
		}
		v.refuse("shipped runtime", "the deployed ClusterTrainingRuntime %s does not agree with what the recipe's mapping renders, so a benchmark derived from it would not be evidence about what ships:\n    %s\n  re-render it from the recipe and replace the deployed one (%s | kubectl replace -f -), or fix the recipe if the cluster is right",
			v.runtimeName(), strings.Join(v.diffs, "\n    "), v.renderCommand())
		return nil, nil
	}
	v.section(title+": ok", "  deployed, and agrees with what the recipe's mapping renders (the spec and the labels and annotations it sets; server fields and CRD defaults ignored)")
	return deployed, nil
}

// clusterValidator defaults with the cluster's own ClusterTrainingRuntime
// CRD: the server defaulted the deployed object with it, so defaulting the
// render with the same CRD compares like with like, whichever trainer
// release the cluster runs. It also keeps validate independent of a Go
// module cache on the machine it runs on.
func clusterValidator(ctx context.Context, cl *Clients) (*schema.Validator, error) {
	crd, err := cl.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, ctrCRD, metav1.GetOptions{})
	if err != nil {
		return nil, readError("CustomResourceDefinition "+ctrCRD, crdsResource, "get", err)
	}
	// Typed clients drop apiVersion and kind on decode.
	crd.APIVersion, crd.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
	data, err := json.Marshal(crd)
	if err != nil {
		return nil, fmt.Errorf("encoding CustomResourceDefinition %s: %w", ctrCRD, err)
	}
	sv, err := schema.New(data)
	if err != nil {
		return nil, fmt.Errorf("loading the cluster's CustomResourceDefinition %s: %w", ctrCRD, err)
	}
	return sv, nil
}

// planBenchmark derives the benchmark from source (nil when there is none to
// derive from) and describes the run.
func (v *validation) planBenchmark(source *trainer.ClusterTrainingRuntime) {
	s := v.section("benchmark: planned")
	switch {
	case v.trainerPlan.Decision.Failed():
		s.title = "benchmark: not planned"
		s.lines = append(s.lines, "  the trainer lifecycle policy refuses the run (see above)")
		return
	case source == nil:
		s.title = "benchmark: not planned"
		s.lines = append(s.lines, "  there is no agreeing shipped runtime to derive it from (see above)")
		return
	}
	bench, err := benchmark.Derive(source, v.params)
	if err != nil {
		s.title = "benchmark: FAILED"
		s.lines = append(s.lines, "  "+err.Error())
		v.refuse("benchmark", "deriving the benchmark from %s: %v", v.runtimeName(), err)
		return
	}
	if diffs := benchmark.WiringEqual(source, bench); len(diffs) > 0 {
		// Derive's own guarantee failed: a bug, but the run must not
		// measure a runtime whose wiring is not the shipped one.
		s.title = "benchmark: FAILED"
		v.refuse("benchmark", "the derived benchmark's wiring differs from %s, which is a bug in tcpxogen's derivation; please report it:\n    %s", v.runtimeName(), strings.Join(diffs, "\n    "))
		return
	}
	bench.Labels[RunLabel] = v.runID
	v.bench = bench
	v.trainJob = trainJobFor(bench, v.runID)

	from := "the deployed " + v.runtimeName()
	if v.applyShipped {
		from = v.runtimeName() + " as the run will apply it (derived again from what the server stores)"
	}
	mpi := bench.Spec.MLPolicy.MPI
	launcher := container(bench, constants.Launcher, constants.Node)
	created := []string{
		fmt.Sprintf("TrainJob %s/%s", v.trainJob.Namespace, v.trainJob.Name),
		fmt.Sprintf("TrainingRuntime %s/%s", bench.Namespace, bench.Name),
	}
	if v.applyShipped {
		created = append(created, "ClusterTrainingRuntime "+v.runtimeName())
	}
	afterwards := strings.Join(created, ", ")
	switch {
	case v.trainerPlan.Decision.TearDown:
		afterwards += ", then the trainer objects it installed (above), in reverse order"
	default:
		afterwards += "; nothing of the trainer"
	}
	s.lines = append(s.lines,
		fmt.Sprintf("  would create TrainingRuntime %s/%s, derived from %s", bench.Namespace, bench.Name, from),
		fmt.Sprintf("    image %s; %d nodes × %d ranks (one per GPU); %s %s..%s%s; wiring equal to the shipped runtime", v.params.Image, *bench.Spec.MLPolicy.NumNodes, ptr.Deref(mpi.NumProcPerNode, 0),
			benchmark.Perf(v.params.Collective), argAfter(launcher.Args, "-b"), argAfter(launcher.Args, "-e"), sshdText(v.fab, bench)),
		fmt.Sprintf("  would create TrainJob %s/%s referencing it, wait for it to finish (the whole run is bounded by --timeout %s), and read the %s pod's log", v.trainJob.Namespace, v.trainJob.Name, v.opts.Timeout, constants.Launcher),
		"  would delete afterwards, whatever the outcome: "+afterwards,
		fmt.Sprintf("  floor: %s %s GB/s (recipe); passes at >= %s GB/s (%g × declared)", v.rec.FloorConstraint(), floorText(v), busbw.FormatGBps(v.floor.Threshold()), busbw.PassFraction),
		"  runtimeSource: "+v.runtimeSourceText(),
		fmt.Sprintf("  report: %s, %s and %s in %s", report.File, report.ChartFile, LogFile, v.opts.Out),
	)
	if v.key != nil {
		s.lines = append(s.lines, fmt.Sprintf("  evidence: %s in %s, signed with the %s key %s; the images the benchmark pods ran must be digests (imageID)%s",
			evidence.BundleFile, v.opts.Out, v.key.Algorithm(), v.key.Public().Hint(), mutableText(v.opts.AllowMutableTags)))
	}
}

// sshdText is gIB's "over MPI, sshd on port N" (its dry run's wording,
// kept); nothing for TCPXO, whose line was written before.
func sshdText(f fabric.Fabric, bench *trainer.TrainingRuntime) string {
	if f.Name == fabric.TCPXO.Name {
		return ""
	}
	return " over MPI, sshd on port " + argAfter(container(bench, constants.Node, runtimes.NodeContainer).Args, "-p")
}

func floorText(v *validation) string {
	op, gbps := v.rec.Floor()
	return op + " " + busbw.FormatGBps(gbps)
}

// runtimeSourceText is the provenance the result will carry. It comes from
// lifecycle.Record, never written by hand, so the plan cannot claim more than
// the run would.
func (v *validation) runtimeSourceText() string {
	verified := v.deployed != nil && len(v.diffs) == 0
	if v.applyShipped {
		// The run applies the runtime, and only then can check agreement.
		verified = true
	}
	prov, err := lifecycle.Record(v.trainerPlan.Decision, lifecycle.Origin{Runtime: lifecycle.DerivedFromDeployed, AgreementVerified: verified})
	switch {
	case errors.Is(err, lifecycle.ErrPolicy):
		return "none: the trainer lifecycle policy refuses the run"
	case err != nil:
		return "none: " + err.Error()
	case v.applyShipped:
		return string(prov.RuntimeSource) + ", once the applied " + v.runtimeName() + " is read back and agrees with the render (checked before deriving)"
	}
	return string(prov.RuntimeSource)
}

// trainJobFor is derive's bare TrainJob for bench, labelled with the run.
func trainJobFor(bench *trainer.TrainingRuntime, runID string) *trainer.TrainJob {
	tj := benchmark.TrainJob(bench)
	tj.Labels = map[string]string{RunLabel: runID}
	return tj
}

// writePlan prints the plan (and, for a gIB dry run, the derived objects:
// printsObjects).
func (v *validation) writePlan(w io.Writer) error {
	c := v.rec.Criteria
	fmt.Fprintf(w, "validate plan: recipe %s (%s, %s, %s, %s), fabric %s on %s, on %s, run %s\n", v.opts.Recipe, c.Service, c.Accelerator, c.Intent, c.Platform, v.fab.Name, v.mt.Name, v.host, v.runID)
	for _, s := range v.sections {
		fmt.Fprintf(w, "\n%s\n", s.title)
		for _, l := range s.lines {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintln(w)
	if v.printsObjects() {
		if err := v.writeObjects(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	switch {
	case len(v.problems) > 0:
		fmt.Fprintf(w, "refused: %d problem(s); nothing was or would be created, changed or deleted\n", len(v.problems))
	case v.opts.DryRun:
		fmt.Fprintln(w, "dry run: nothing was created, changed or deleted")
	}
	return nil
}

// refusal returns the problems as one error (exit 1), each with its fix.
func (v *validation) refusal() error {
	if len(v.problems) == 0 {
		return nil
	}
	msgs := make([]string, len(v.problems))
	for i, p := range v.problems {
		msgs[i] = fmt.Sprintf("%d. %s: %s", i+1, p.part, p.what)
	}
	return fmt.Errorf("%w on %s, nothing was changed:\n%s", errRefused, v.host, strings.Join(msgs, "\n"))
}

// errRefused is wrapped by a refusal, so tests tell a refusal from a failure.
var errRefused = errors.New("validation refused")

func indent(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}

func mutableText(allowed bool) string {
	if allowed {
		return ", or tag-only images are recorded as such (--allow-mutable-tags)"
	}
	return ", or no evidence is signed"
}
