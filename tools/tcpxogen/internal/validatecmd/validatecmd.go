// Package validatecmd implements `tcpxogen validate`: the performance
// validator run against a live cluster, driven by a recipe.
//
// It decides, checks and prints a plan before it changes anything:
//
//  1. the trainer lifecycle policy (docs/design.md, "Recipe-driven validation
//     policy") from the recipe and what is on the cluster: use, reuse,
//     install-and-tear-down, or refuse;
//  2. the GPU pool: every GPU node one homogeneous A3 Mega pool attached to
//     the recipe's GPU-NIC networks, with enough nodes for the benchmark;
//  3. the shipped runtime: the deployed torch-distributed-tcpxo must agree
//     with what the recipe's mapping renders (recipe → deployed → rendered),
//     or the result could not be called evidence about what ships;
//  4. the benchmark: a namespaced MPI TrainingRuntime derived from the
//     deployed runtime, and a TrainJob referencing it; the bandwidth floor;
//     the result's runtimeSource.
//
// With --dry-run it stops there, having only read. Otherwise it carries the
// plan out (lifecycle.Plan.Run installs and tears down the trainer when the
// policy says so), waits for the TrainJob, judges the launcher's log with
// package busbw and writes the CTRF report and chart with package report.
// Everything it creates is deleted afterwards, in reverse order, even when
// the run fails or is interrupted.
//
// Exit status: 0 the plan is sound (dry run) or the benchmark passed; 1 the
// plan was refused, or the benchmark ran and failed; 2 bad input (the recipe,
// a flag, the trainer manifests, the kubeconfig).
package validatecmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
	"github.com/tcpxogen/tcpxogen/validators/performance/derive"
	"github.com/tcpxogen/tcpxogen/validators/performance/recipe"
)

// Defaults of the flags.
const (
	DefaultNamespace = "default"
	DefaultTimeout   = 45 * time.Minute
)

// RunLabel is stamped on every object a run creates for the benchmark (the
// derived TrainingRuntime, the TrainJob, and in the install row the shipped
// runtime), with the run's ID as its value, so that leftovers of a run killed
// before its cleanup can be found: kubectl get trainingruntimes,trainjobs -A
// -l tcpxogen.dev/validation-run.
const RunLabel = "tcpxogen.dev/validation-run"

// Commands returns the validate command.
func Commands() cli.Commands {
	return commands(connect)
}

func commands(c connectFunc) cli.Commands {
	return cli.Commands{"validate": {
		Summary: "validate NCCL bus bandwidth on a live cluster as a recipe declares it (--dry-run prints the plan only)",
		Run:     command{connect: c}.run,
	}}
}

// command is validate with its way of reaching a cluster, which tests
// replace.
type command struct {
	connect connectFunc
}

type options struct {
	recipe, kubeconfig, kubeContext, namespace string
	image, trainerManifests, out, root         string
	nodes                                      int
	timeout                                    time.Duration
	dryRun                                     bool
}

func (c command) run(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("validate", "validate --recipe FILE [--benchmark-image REF] [--kubeconfig F] [--context C] [--namespace NS] [--nodes N] [--trainer-manifests FILE] [--timeout D] [--out DIR] [--dry-run]", s)
	var o options
	fs.StringVar(&o.recipe, "recipe", "", "recipe of the cluster: criteria, declared components, GPU-NIC mapping and the busbw floor (required)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fs.StringVar(&o.kubeContext, "context", "", "kubeconfig context (default: the current context)")
	fs.StringVar(&o.namespace, "namespace", DefaultNamespace, "namespace the benchmark TrainingRuntime and TrainJob are created in; it must exist")
	fs.StringVar(&o.image, "benchmark-image", "", "override the benchmark image (default: the pinned installer image, which carries the MPI build of nccl-tests and sshd); pinned as repo:tag@sha256:<64 hex>, with all_reduce_perf and sshd where the installer image has them")
	fs.IntVar(&o.nodes, "nodes", int(derive.DefaultNumNodes), "GPU nodes the benchmark spans (at least 2)")
	fs.StringVar(&o.trainerManifests, "trainer-manifests", "", "the pinned Kubeflow Trainer's install manifests, needed only when the policy installs the trainer (the recipe does not declare it and the cluster has none)")
	fs.DurationVar(&o.timeout, "timeout", DefaultTimeout, "bound on the live run: trainer install, benchmark and waiting for it (teardown has its own bound)")
	fs.StringVar(&o.out, "out", ".", "directory for the report, the chart and the launcher log")
	fs.StringVar(&o.root, "root", "", "repository root holding bom/ (default: found upwards from the working directory)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the plan and stop; only reads the cluster")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	v, err := prepare(o)
	if err != nil {
		return err
	}
	cl, err := c.connect(o.kubeconfig, o.kubeContext)
	if err != nil {
		return err
	}
	if err := reachable(cl); err != nil {
		return err
	}
	if err := v.preflight(ctx, cl); err != nil {
		return err
	}
	v.writePlan(s.Out)
	if err := v.refusal(); err != nil {
		return err
	}
	if o.dryRun {
		return nil
	}
	return v.execute(ctx, cl, s)
}

// prepare does everything that needs no cluster: flags, recipe, the render
// of the shipped runtime from the recipe's mapping, the benchmark parameters
// (checked by deriving from that render, so the rules are derive's own) and
// the trainer manifests. All of it is bad input when wrong, and it is
// reported before anything is read from a cluster.
func prepare(o options) (*validation, error) {
	if o.recipe == "" {
		return nil, cli.BadInput("--recipe is required: give the recipe file of the cluster being validated")
	}
	if o.timeout <= 0 {
		return nil, cli.BadInput("--timeout %s: give a positive duration, e.g. 45m", o.timeout)
	}
	if o.nodes < 2 || o.nodes > 1<<15 {
		return nil, cli.BadInput("--nodes %d: the benchmark spans at least 2 GPU nodes (on one node NCCL never uses the GPU NICs)", o.nodes)
	}
	rec, err := recipe.Load(o.recipe)
	if err != nil {
		return nil, cli.BadInput("%w", err)
	}
	floor, err := floorOf(rec)
	if err != nil {
		return nil, cli.BadInput("recipe %s: %w", o.recipe, err)
	}
	root, err := cli.RepoRoot(o.root)
	if err != nil {
		return nil, cli.BadInput("%w", err)
	}
	in, err := runtimes.LoadInputs(root)
	if err != nil {
		return nil, cli.BadInput("%w", err)
	}
	rendered, err := runtimes.TorchRuntime(in, runtimes.Options{Interfaces: rec.Interfaces()})
	if err != nil {
		return nil, cli.BadInput("recipe %s: its configuration does not render %s: %w", o.recipe, runtimes.RuntimeName, err)
	}
	runID, err := newRunID()
	if err != nil {
		return nil, err
	}
	// The benchmark runs from the pinned installer image, as Google's own
	// nccl-tests samples do; --benchmark-image replaces only the image.
	params := derive.ParamsFor(in.Pins)
	params.Namespace, params.Name, params.NumNodes = o.namespace, "nccl-tests-tcpxo-"+runID, int32(o.nodes)
	if o.image != "" {
		params.Image = o.image
	}
	if _, err := derive.Derive(rendered, params); err != nil {
		if errors.Is(err, derive.ErrParams) {
			return nil, cli.BadInput("benchmark (--benchmark-image, --namespace, --nodes): %w", err)
		}
		return nil, fmt.Errorf("the %s rendered from the recipe cannot be benchmarked, which is a bug in tcpxogen: %w", runtimes.RuntimeName, err)
	}
	if !o.dryRun {
		if err := writableDir(o.out); err != nil {
			return nil, cli.BadInput("--out: %w", err)
		}
	}
	v := &validation{opts: o, rec: rec, in: in, rendered: rendered, floor: floor, runID: runID, params: params}
	if o.trainerManifests != "" {
		if v.trainerObjs, err = loadTrainerManifests(o.trainerManifests, in.BOM); err != nil {
			return nil, cli.BadInput("%w", err)
		}
	}
	return v, nil
}

// floorOf turns the recipe's nccl-all-reduce-bw constraint into the floor
// busbw judges with. busbw passes a run at >= 0.9 × the declared value for
// both ">=" and ">": the 10% allowance for run-to-run variance dwarfs the
// difference between the two at the boundary.
func floorOf(rec *recipe.Recipe) (busbw.Floor, error) {
	_, gbps := rec.Floor()
	f, err := busbw.ParseFloor(strconv.FormatFloat(gbps, 'f', -1, 64))
	if err != nil {
		return busbw.Floor{}, fmt.Errorf("constraint %s: %w", recipe.ConstraintAllReduceBW, err)
	}
	return f, nil
}

// writableDir makes sure the results can be written before a run of tens of
// minutes, rather than failing to save them at its end.
func writableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w; give a directory the results can be written to", err)
	}
	f, err := os.CreateTemp(dir, ".tcpxogen-validate-*")
	if err != nil {
		return fmt.Errorf("%s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// newRunID names one run's objects; random so that two runs (or a run and
// the leftovers of an interrupted one) never collide.
func newRunID() (string, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a run ID: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// validation is one run: its inputs, what preflight found, and the plan.
type validation struct {
	opts     options
	rec      *recipe.Recipe
	in       *runtimes.Inputs
	rendered *trainer.ClusterTrainingRuntime
	floor    busbw.Floor
	runID    string
	params   derive.Params
	// trainerObjs are the --trainer-manifests objects, in apply order.
	trainerObjs []*unstructured.Unstructured

	preflightResult
}
