// Package validate is the performance validator run against a live
// cluster, driven by a recipe; `tcpxogen validate` is its command.
//
// It decides, checks and prints a plan before it changes anything:
//
//  1. the trainer lifecycle policy (docs/design.md, "Recipe-driven validation
//     policy") from the recipe and what is on the cluster: use, reuse,
//     install-and-tear-down, or refuse;
//  2. the GPU pool: the machine type decides the fabric, so the GPU nodes
//     of the recipe's machine type (A3 Mega for TCPXO; A3 Ultra or A4, as
//     the gIB recipe's accelerator names, for gIB) must be one homogeneous
//     pool of it attached to the recipe's GPU-NIC networks, with enough
//     nodes for the benchmark, and pass check cluster's checks; GPU nodes
//     of another machine type only are refused, naming both;
//  3. the shipped runtime: the deployed torch-distributed-tcpxo (gIB:
//     torch-distributed-rdma-<machine type>) must agree with what the
//     recipe's mapping renders (recipe → deployed → rendered), or the
//     result could not be called evidence about what ships;
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
package validate

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/evidence"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
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

// Options are what a run is asked to do; AddFlags binds them to the
// command's flags, whose names the messages use.
type Options struct {
	Recipe, Kubeconfig, KubeContext, Namespace string
	Image, TrainerManifests, Out               string
	// Root is the repository root holding bom/; empty finds it upwards
	// from the working directory.
	Root    string
	Nodes   int
	Timeout time.Duration
	DryRun  bool
	// SignKey is the private key file the results are signed with
	// (evidence.sigstore.json); empty signs nothing.
	SignKey string
	// AllowMutableTags signs a run even when an image ran by a mutable
	// tag only, recording so in the predicate.
	AllowMutableTags bool
	// Fabric is the fabric validated (internal/fabric), which the recipe
	// must be for.
	Fabric string
}

// AddFlags binds o to fs with the defaults. The validator owns what its
// options mean; the command owns its name and exit codes.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Recipe, "recipe", "", "recipe of the cluster: criteria, declared components, GPU-NIC mapping and the busbw floor (required)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fs.StringVar(&o.KubeContext, "context", "", "kubeconfig context (default: the current context)")
	fs.StringVar(&o.Namespace, "namespace", DefaultNamespace, "namespace the benchmark TrainingRuntime and TrainJob are created in; it must exist")
	fs.StringVar(&o.Image, "benchmark-image", "", "override the benchmark image (default: the pinned installer image, with --fabric gib the pinned diagnostic image, each carrying the MPI build of nccl-tests and sshd); pinned as repo:tag@sha256:<64 hex>, with the perf binary and sshd where the default image has them")
	fs.IntVar(&o.Nodes, "nodes", int(benchmark.DefaultNumNodes), "GPU nodes the benchmark spans (at least 2)")
	fs.StringVar(&o.TrainerManifests, "trainer-manifests", "", "the pinned Kubeflow Trainer's install manifests, used only when the policy installs the trainer (the recipe does not declare it and the cluster has none); default: rendered offline from the trainer's and JobSet's Go modules")
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "bound on the live run: trainer install, benchmark and waiting for it (teardown has its own bound)")
	fs.StringVar(&o.Out, "out", ".", "directory for the report, the chart and the launcher log")
	fs.StringVar(&o.Root, "root", "", "repository root holding bom/ (default: found upwards from the working directory)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "print the plan and stop; only reads the cluster (with --fabric gib it also prints the derived benchmark TrainingRuntime and TrainJob)")
	fs.StringVar(&o.Fabric, "fabric", fabric.Default, "the fabric the recipe is for: tcpxo, or gib (GPUDirect-RDMA with NCCL/gIB on A3 Ultra or A4, a recipe with fabric: gib, whose criteria.accelerator names the machine type; its benchmark is all_gather_perf or all_reduce_perf, as the recipe's floor names, from the pinned diagnostic image)")
	fs.StringVar(&o.SignKey, "sign-key", "", "`FILE`: an unencrypted ECDSA P-256 or Ed25519 private key (PEM, as openssl genpkey writes it), read before anything else (also with --dry-run); also write "+evidence.BundleFile+", a Sigstore bundle signing the report, chart and log with the images the benchmark ran (by digest) and the deployed runtime's digest, which `tcpxogen verify` checks with the public key alone")
	fs.BoolVar(&o.AllowMutableTags, "allow-mutable-tags", false, "with --sign-key, sign even when a benchmark container ran an image known only by a mutable tag (no sha256 digest in its imageID); the evidence records it (mutableTagsAllowed, tagOnlyImages). Without it such a run writes its report but no bundle, and exits 1")
}

// InputError marks a rejection of the user's input (a flag, the recipe,
// the trainer manifests, the kubeconfig): only the user can fix it, and the
// command exits 2 for it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func badInput(format string, a ...any) error { return &InputError{fmt.Errorf(format, a...)} }

// ConnectFunc builds the clients from --kubeconfig and --context; Connect
// is the real one, tests pass fakes.
type ConnectFunc func(kubeconfig, kubeContext string) (*Clients, error)

// Run validates as o asks: it checks the input, connects, decides the plan
// and prints it to out, and, unless o.DryRun or the plan is refused, carries
// it out (progress to errOut). The error is an *InputError for bad input.
func Run(ctx context.Context, o Options, connect ConnectFunc, out, errOut io.Writer) (err error) {
	f, err := fabric.Lookup(cmp.Or(o.Fabric, fabric.Default))
	if err != nil {
		return badInput("--fabric: %w", err)
	}
	v, err := prepare(o, f)
	if err != nil {
		return err
	}
	cl, err := connect(o.Kubeconfig, o.KubeContext)
	if err != nil {
		return err
	}
	// Whatever the API server refused is named in RBAC terms, with the
	// role that grants it, whichever step it broke.
	defer func() { err = cl.Guard.Explain(err) }()
	if err := bindAccess(cl, o.Namespace); err != nil {
		return badInput("--namespace: %w", err)
	}
	if err := reachable(cl); err != nil {
		return err
	}
	if err := v.preflight(ctx, cl); err != nil {
		return err
	}
	if err := v.writePlan(out); err != nil {
		return err
	}
	if err := v.refusal(); err != nil {
		return err
	}
	if o.DryRun {
		return nil
	}
	return v.execute(ctx, cl, streams{Out: out, Err: errOut})
}

// streams are where a live run reports: the plan and summary to Out,
// progress to Err.
type streams struct{ Out, Err io.Writer }

// prepare does everything that needs no cluster: flags, recipe, the render
// of the shipped runtime from the recipe's mapping, the benchmark parameters
// (checked by deriving from that render, so the rules are derive's own) and
// the trainer manifests. All of it is bad input when wrong, and it is
// reported before anything is read from a cluster.
func prepare(o Options, f fabric.Fabric) (*validation, error) {
	if o.Recipe == "" {
		return nil, badInput("--recipe is required: give the recipe file of the cluster being validated")
	}
	if o.Timeout <= 0 {
		return nil, badInput("--timeout %s: give a positive duration, e.g. 45m", o.Timeout)
	}
	// The key is read first: an unusable key is bad input, reported
	// before the cluster is contacted.
	var key *evidence.PrivateKey
	if o.SignKey != "" {
		k, err := evidence.LoadPrivateKey("--sign-key", o.SignKey)
		if err != nil {
			return nil, &InputError{err}
		}
		key = k
	}
	if o.Nodes < 2 || o.Nodes > 1<<15 {
		return nil, badInput("--nodes %d: the benchmark spans at least 2 GPU nodes (on one node NCCL never uses the GPU NICs)", o.Nodes)
	}
	rec, err := recipe.Load(o.Recipe)
	if err != nil {
		return nil, badInput("%w", err)
	}
	if rec.FabricName() != f.Name {
		return nil, badInput("recipe %s is for fabric %s, not --fabric %s: run validate --fabric %s, or give a %s recipe", o.Recipe, rec.FabricName(), f.Name, rec.FabricName(), f.Name)
	}
	floor, err := floorOf(rec)
	if err != nil {
		return nil, badInput("recipe %s: %w", o.Recipe, err)
	}
	root, err := bom.ResolveRoot(o.Root)
	if err != nil {
		return nil, badInput("%w", err)
	}
	in, err := shipped.LoadInputs(root)
	if err != nil {
		return nil, badInput("%w", err)
	}
	mt, facts := f.MachineTypes[0], in.Facts
	if f.Name == fabric.GIB.Name {
		// The recipe's criteria.accelerator names the machine type
		// (recipe.Load refuses a gIB recipe whose accelerator names none).
		m, ok := f.MachineType(rec.MachineType())
		if !ok {
			return nil, badInput("recipe %s: criteria.accelerator %s names no %s machine type (%s)", o.Recipe, rec.Criteria.Accelerator, f.Name, strings.Join(f.MachineTypeNames(), ", "))
		}
		mt, facts = m, in.GIB
	}
	v := &validation{opts: o, rec: rec, in: in, fab: f, mt: mt, facts: facts, floor: floor, key: key}
	rendered, err := v.render(rec.Interfaces())
	if err != nil {
		return nil, badInput("recipe %s: its configuration does not render %s: %w", o.Recipe, v.runtimeName(), err)
	}
	v.rendered = rendered
	if v.runID, err = newRunID(); err != nil {
		return nil, err
	}
	// The benchmark runs from the pinned image that carries nccl-tests'
	// MPI build, as Google's own samples do: TCPXO's installer image
	// (all_reduce), gIB's diagnostic image (the collective the recipe's
	// floor names); --benchmark-image replaces only the image.
	params := benchmark.ParamsFor(facts)
	if f.Name == fabric.GIB.Name {
		params = benchmark.GIBParamsFor(facts, mt.Name, collectiveOf[rec.FloorConstraint()])
	}
	params.Namespace, params.Name, params.NumNodes = o.Namespace, params.Fabric.Benchmark+"-"+benchSuffix(f, mt)+v.runID, int32(o.Nodes)
	if o.Image != "" {
		params.Image = o.Image
	}
	if _, err := benchmark.Derive(rendered, params); err != nil {
		if errors.Is(err, benchmark.ErrParams) {
			return nil, badInput("benchmark (--benchmark-image, --namespace, --nodes): %w", err)
		}
		return nil, fmt.Errorf("the %s rendered from the recipe cannot be benchmarked, which is a bug in tcpxogen: %w", v.runtimeName(), err)
	}
	v.params = params
	if !o.DryRun {
		if err := writableDir(o.Out); err != nil {
			return nil, badInput("--out: %w", err)
		}
	}
	if o.TrainerManifests != "" {
		if v.trainerObjs, err = loadTrainerManifests(o.TrainerManifests, in.BOM); err != nil {
			return nil, badInput("%w", err)
		}
	}
	return v, nil
}

// floorOf turns the recipe's bandwidth constraint (nccl-all-reduce-bw, or
// for gIB nccl-all-gather-bw) into the floor busbw judges with. busbw passes a run at >= 0.9 × the declared value for
// both ">=" and ">": the 10% allowance for run-to-run variance dwarfs the
// difference between the two at the boundary.
func floorOf(rec *recipe.Recipe) (busbw.Floor, error) {
	_, gbps := rec.Floor()
	f, err := busbw.ParseFloor(strconv.FormatFloat(gbps, 'f', -1, 64))
	if err != nil {
		return busbw.Floor{}, fmt.Errorf("constraint %s: %w", rec.FloorConstraint(), err)
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
	opts     Options
	rec      *recipe.Recipe
	in       *runtimes.Inputs
	rendered *trainer.ClusterTrainingRuntime
	// fab is the fabric validated and mt the machine type its pool must
	// be (TCPXO's one; the gIB recipe's); facts are the fabric's pinned
	// image facts (in.Facts or in.GIB).
	fab    fabric.Fabric
	mt     fabric.MachineType
	facts  facts.Facts
	floor  busbw.Floor
	runID  string
	params benchmark.Params
	// key signs the results (--sign-key); nil signs nothing.
	key *evidence.PrivateKey
	// trainerObjs are the --trainer-manifests objects, in apply order.
	trainerObjs []*unstructured.Unstructured
	// left is the cleanup record: what the run created and has not yet
	// deleted, printed if a second signal ends it.
	left ledger

	preflightResult
}

// runtimeName is the shipped ClusterTrainingRuntime of the run's fabric and
// machine type: torch-distributed-tcpxo, torch-distributed-rdma-<mt>.
func (v *validation) runtimeName() string { return v.fab.ShippedRuntime(v.mt.Name) }

// render renders the fabric's shipped runtime for mapping m, as render
// runtime does.
func (v *validation) render(m interfaces.Mapping) (*trainer.ClusterTrainingRuntime, error) {
	if v.fab.Name == fabric.GIB.Name {
		return runtimes.RDMARuntime(v.in, runtimes.RDMAOptions{Interfaces: m, MachineType: v.mt.Name})
	}
	return runtimes.TorchRuntime(v.in, runtimes.Options{Interfaces: m})
}

// renderCommand is the render runtime command line that renders the
// shipped runtime from the recipe's mapping, for remedies.
func (v *validation) renderCommand() string {
	if v.fab.Name == fabric.GIB.Name {
		return fmt.Sprintf("tcpxogen render runtime --fabric %s --machine-type %s --interfaces %s", v.fab.Name, v.mt.Name, v.rec.Interfaces())
	}
	return "tcpxogen render runtime --interfaces " + v.rec.Interfaces().String()
}

// benchSuffix is what the benchmark's name carries between the fabric's
// benchmark name and the run ID: gIB's machine type (nccl-tests-rdma-<mt>-,
// as render benchmark names it), nothing for TCPXO.
func benchSuffix(f fabric.Fabric, mt fabric.MachineType) string {
	if f.RuntimePerMachineType {
		return mt.Name + "-"
	}
	return ""
}
