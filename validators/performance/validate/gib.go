package validate

import (
	"errors"
	"fmt"
	"io"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
	"github.com/tcpxogen/tcpxogen/validators/performance/recipe"
)

// collectiveOf is the collective a recipe's floor is on.
var collectiveOf = map[string]string{
	recipe.ConstraintAllGatherBW: benchmark.AllGather,
	recipe.ConstraintAllReduceBW: benchmark.AllReduce,
}

// dryRunGIB is validate --fabric gib --dry-run: it renders the gIB runtime
// of the recipe's machine type for its RDMA mapping, derives the benchmark
// from it exactly as render benchmark --fabric gib does (the collective the
// recipe's floor names, from the pinned diagnostic image), and prints the
// plan and the two objects. It reads no cluster: validate's live
// preflights (the trainer lifecycle, the GPU pool, check cluster, the
// deployed runtime's agreement, the pods' wiring) are TCPXO's so far, so a
// live gIB run is refused rather than half-checked.
func dryRunGIB(o Options, out io.Writer) error {
	switch {
	case o.Recipe == "":
		return badInput("--recipe is required: give the recipe file of the cluster being validated (fabric: gib)")
	case !o.DryRun:
		return badInput("--fabric gib runs with --dry-run only: validate's live checks (GPU pool, check cluster, the deployed runtime, the pods' wiring) are TCPXO's so far; add --dry-run to derive and print the benchmark, and run it with kubectl apply (tcpxogen render benchmark --fabric gib prints the same objects)")
	case o.SignKey != "" || o.AllowMutableTags:
		return badInput("--sign-key and --allow-mutable-tags sign a live run's results; --fabric gib runs no benchmark (--dry-run): drop them")
	case o.Kubeconfig != "" || o.KubeContext != "" || o.TrainerManifests != "":
		return badInput("--kubeconfig, --context and --trainer-manifests are for a live run; --fabric gib --dry-run reads no cluster: drop them")
	case o.Nodes < 2 || o.Nodes > 1<<15:
		return badInput("--nodes %d: the benchmark spans at least 2 GPU nodes (on one node NCCL never uses the GPU NICs)", o.Nodes)
	}
	rec, err := recipe.Load(o.Recipe)
	if err != nil {
		return badInput("%w", err)
	}
	if rec.FabricName() != fabric.GIB.Name {
		return badInput("recipe %s is for fabric %s, not gib: drop --fabric gib, or write a gIB recipe (fabric: gib, configuration.gke.rdmaInterfaces)", o.Recipe, rec.FabricName())
	}
	floor, err := floorOf(rec)
	if err != nil {
		return badInput("recipe %s: %w", o.Recipe, err)
	}
	root, err := bom.ResolveRoot(o.Root)
	if err != nil {
		return badInput("%w", err)
	}
	in, err := shipped.LoadInputs(root)
	if err != nil {
		return badInput("%w", err)
	}
	mt := rec.MachineType()
	rendered, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: rec.Interfaces(), MachineType: mt})
	if err != nil {
		return badInput("recipe %s: its configuration does not render %s: %w", o.Recipe, fabric.GIB.RuntimeFor(mt), err)
	}
	runID, err := newRunID()
	if err != nil {
		return err
	}
	collective := collectiveOf[rec.FloorConstraint()]
	params := benchmark.GIBParamsFor(in.GIB, mt, collective)
	params.Namespace, params.Name, params.NumNodes = o.Namespace, fabric.GIB.BenchmarkFor(mt)+"-"+runID, int32(o.Nodes)
	if o.Image != "" {
		params.Image = o.Image
	}
	bench, err := benchmark.Derive(rendered, params)
	switch {
	case errors.Is(err, benchmark.ErrParams):
		return badInput("benchmark (--benchmark-image, --namespace, --nodes): %w", err)
	case err != nil:
		return fmt.Errorf("the %s rendered from the recipe cannot be benchmarked, which is a bug in tcpxogen: %w", rendered.Name, err)
	}
	if diffs := benchmark.WiringEqual(rendered, bench); len(diffs) > 0 {
		return fmt.Errorf("the derived benchmark's wiring differs from %s, which is a bug in tcpxogen's derivation; please report it:\n    %s", rendered.Name, strings.Join(diffs, "\n    "))
	}
	bench.Labels[RunLabel] = runID
	tj := trainJobFor(bench, runID)
	return writeGIBPlan(out, o, rec, rendered, bench, tj, floor, runID)
}

// writeGIBPlan prints the gIB dry run: what was derived, from what, how it
// is judged, and the objects themselves.
func writeGIBPlan(w io.Writer, o Options, rec *recipe.Recipe, rendered *trainer.ClusterTrainingRuntime, bench *trainer.TrainingRuntime, tj *trainer.TrainJob, floor busbw.Floor, runID string) error {
	c := rec.Criteria
	mpi := bench.Spec.MLPolicy.MPI
	launcher := container(bench, constants.Launcher, constants.Node)
	perf := benchmark.Perf(collectiveOf[rec.FloorConstraint()])
	op, gbps := rec.Floor()
	lines := []string{
		fmt.Sprintf("validate plan: recipe %s (%s, %s, %s, %s), fabric gib on %s, run %s", o.Recipe, c.Service, c.Accelerator, c.Intent, c.Platform, rec.MachineType(), runID),
		"",
		"cluster: not read",
		"  --fabric gib --dry-run derives the benchmark from the recipe alone; validate's live checks (trainer lifecycle, GPU pool, check cluster, the deployed runtime's agreement, the pods' wiring) are TCPXO's so far",
		"",
		"benchmark: derived",
		fmt.Sprintf("  TrainingRuntime %s/%s, derived from %s rendered for the recipe's %s (%s)", bench.Namespace, bench.Name, rendered.Name, "configuration.gke.rdmaInterfaces", rec.Interfaces()),
		fmt.Sprintf("    image %s; %d nodes × %d ranks (one per GPU); %s %s..%s over MPI, sshd on port %s; wiring equal to the shipped runtime",
			launcher.Image, *bench.Spec.MLPolicy.NumNodes, *mpi.NumProcPerNode, perf, argAfter(launcher.Args, "-b"), argAfter(launcher.Args, "-e"), argAfter(container(bench, constants.Node, runtimes.NodeContainer).Args, "-p")),
		fmt.Sprintf("  TrainJob %s/%s referencing it; the result is the %s pod's log", tj.Namespace, tj.Name, constants.Launcher),
		fmt.Sprintf("  floor: %s %s %s GB/s (recipe); passes at >= %s GB/s (%g × declared)", rec.FloorConstraint(), op, busbw.FormatGBps(gbps), busbw.FormatGBps(floor.Threshold()), busbw.PassFraction),
		fmt.Sprintf("  judge it with: tcpxogen nccl-report --fabric gib --floor '%s %s' --log FILE", op, busbw.FormatGBps(gbps)),
		"",
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	data, err := runtimes.Encode(runtimes.FormatYAML, []string{
		fmt.Sprintf("The NCCL %s benchmark validate --fabric gib derived for recipe %s, and the TrainJob that runs it.", perf, o.Recipe),
	}, bench, tj)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	fmt.Fprintln(w, "\ndry run: nothing was created, changed or deleted")
	return nil
}

// argAfter is the argument after flag in argv, "" when there is none.
func argAfter(argv []string, flag string) string {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == flag {
			return argv[i+1]
		}
	}
	return ""
}

// container is the container named name of bench's replicated job job;
// the zero container when there is none (Derive always makes both).
func container(bench *trainer.TrainingRuntime, job, name string) corev1.Container {
	for _, rj := range bench.Spec.Template.Spec.ReplicatedJobs {
		if rj.Name != job {
			continue
		}
		for _, c := range rj.Template.Spec.Template.Spec.Containers {
			if c.Name == name {
				return c
			}
		}
	}
	return corev1.Container{}
}
