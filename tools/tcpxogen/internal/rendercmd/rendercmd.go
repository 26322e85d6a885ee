// Package rendercmd implements `tcpxogen render`: the shipped runtime and
// component manifests on stdout, and the goldens `go generate` maintains.
// It links the generated constants, so it is kept apart from extract (which
// must run when they are missing or broken).
package rendercmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/access"
	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/internal/kubeconfig"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/pipeline"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/tools/internal/clusterflags"
	"github.com/tcpxogen/tcpxogen/validators/cluster"
)

// Commands returns the render command set.
func Commands() cli.Commands {
	return cli.Commands{"render": {Summary: "render the shipped runtime (render runtime), the NCCL benchmark for a cluster (render benchmark), the installer components (render components), the admission policies (render policy), a fabric's Helm chart (render chart) or kustomize base (render kustomize), the goldens (render goldens) or the RBAC a cluster command needs (render rbac)", Run: run}}
}

var subcommands = map[string]func(context.Context, []string, cli.Streams) error{
	"runtime":    renderRuntime,
	"benchmark":  renderBenchmark,
	"components": renderComponents,
	"goldens":    renderGoldens,
	"policy":     renderPolicy,
	"rbac":       renderRBAC,
	"chart":      renderChart,
	"kustomize":  renderKustomize,
}

func run(ctx context.Context, args []string, s cli.Streams) error {
	if len(args) == 0 {
		fmt.Fprintln(s.Err, "Usage: tcpxogen render runtime|benchmark|components|policy|chart|kustomize|goldens|rbac [flags]")
		return cli.BadInput("name what to render: runtime, benchmark, components, policy, chart, kustomize, goldens or rbac")
	}
	if args[0] == "--help" || args[0] == "-h" {
		fmt.Fprintln(s.Out, "Usage: tcpxogen render runtime|benchmark|components|policy|chart|kustomize|goldens|rbac [flags]\n\nRun `tcpxogen render runtime --help` (or benchmark, components, policy, chart, kustomize, goldens, rbac) for the flags.")
		return nil
	}
	sub, ok := subcommands[args[0]]
	if !ok {
		return cli.BadInput("render %q: want runtime, benchmark, components, policy, chart, kustomize, goldens or rbac", args[0])
	}
	return sub(ctx, args[1:], s)
}

func renderRuntime(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("render runtime", "render runtime (--interfaces eth1=NET,...,eth8=NET | --values FILE | --from-cluster [--kubeconfig F] [--context C]) [--node-selector k=v[,k=v]]... [--toleration key[=value]:Effect]... [--worker-image REF] [--profile default|simple] [-o yaml|json]\n"+
		"       render runtime --fabric gib --machine-type a3-ultragpu-8g|a4-highgpu-8g (--interfaces eth2=NET,...,eth9=NET[,eth1=NET] | --values FILE | --from-cluster [--kubeconfig F] [--context C]) [--node-selector k=v]... [--toleration key[=value]:Effect]... [--worker-image REF] [-o yaml|json]\n\n"+
		"--from-cluster reads the mapping as tcpxogen discover does, from the nodes the runtime selects (with --fabric gib, the nodes of --machine-type, narrowed by --node-selector). "+clusterflags.ReadOnlyHelp(access.Discover)+"\n\n"+
		"--fabric gib renders the GPUDirect-RDMA (NCCL/gIB) runtime of one machine type, "+fabric.GIB.RuntimeFor("<machine type>")+": gIB's env differs per machine type (its tuner config), so each machine type has its own runtime.", s)
	fabricName := fabricFlag(fs)
	machineType := fs.String("machine-type", "", "with --fabric gib (required): the machine type the runtime is for: "+strings.Join(fabric.GIB.MachineTypeNames(), " or "))
	root := fs.String("root", "", "repository root whose bom/ to read (default: the checkout around the working directory, else the inputs built into tcpxogen)")
	ifaces := fs.String("interfaces", "", "GPU-NIC to GKE Network mapping: eth1=<network>,...,eth8=<network> (required unless --values or --from-cluster)")
	values := fs.String("values", "", "YAML file with tcpxoInterfaces: [{interfaceName, network}, ...]")
	fromCluster := fs.Bool("from-cluster", false, "discover the mapping from the cluster's A3 Mega nodes (with --fabric gib, the --machine-type nodes' RDMA networks; tcpxogen discover) and render for it")
	kubeconfigPath := fs.String("kubeconfig", "", "with --from-cluster: kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	kubeContext := fs.String("context", "", "with --from-cluster: kubeconfig context (default: the current context)")
	selectors := fs.StringArray("node-selector", nil, nodeSelectorHelp)
	tolerations := fs.StringArray("toleration", nil, "toleration key[=value]:Effect (repeatable)")
	worker := fs.String("worker-image", "", "worker image, pinned by digest (default: the BOM's worker image); it must be built for "+cudaNote(shipped.Facts()))
	profile := fs.String("profile", runtimes.ProfileDefault, "NCCL profile: default or simple")
	format := fs.StringP("output", "o", "yaml", "output format: yaml or json")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if !*fromCluster && (*kubeconfigPath != "" || *kubeContext != "") {
		return cli.BadInput("--kubeconfig and --context are for --from-cluster; render reads no cluster without it")
	}
	f, err := fabric.Lookup(*fabricName)
	if err != nil {
		return cli.BadInput("--fabric: %w", err)
	}
	if *fromCluster && (*ifaces != "" || *values != "") {
		return cli.BadInput("give the mapping once: --from-cluster discovers it, so drop --interfaces and --values")
	}
	if f.Name == fabric.GIB.Name {
		if fs.Changed("profile") {
			return cli.BadInput("--profile is TCPXO's (the installer's default and simple profiles); the gIB env is the machine type's: drop --profile")
		}
		opts, err := rdmaOptions(*machineType, *ifaces, *values, *selectors, *tolerations, *fromCluster)
		if err != nil {
			return err
		}
		if *fromCluster {
			// The runtime's own nodes: the machine type's, narrowed by
			// --node-selector.
			sel := map[string]string{fabric.InstanceTypeLabel: opts.MachineType}
			maps.Copy(sel, opts.NodeSelector)
			found, err := discoverMapping(ctx, f, *kubeconfigPath, *kubeContext, sel)
			if err != nil {
				return err
			}
			opts.Interfaces = found.Mapping
			fmt.Fprintf(s.Err, "render: --from-cluster: %s, read from %d nodes\n", found.Interfaces, len(found.Nodes))
		}
		return renderRDMARuntime(s, *root, opts, *worker, *format)
	}
	if *machineType != "" {
		return cli.BadInput("--machine-type is for --fabric gib; the TCPXO runtime serves a3-megagpu-8g only")
	}
	opts, err := runtimeOptions(*ifaces, *values, *selectors, *tolerations, *fromCluster)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	opts.WorkerImage, opts.Profile = *worker, *profile
	if *fromCluster {
		found, err := discoverMapping(ctx, fabric.TCPXO, *kubeconfigPath, *kubeContext, opts.NodeSelector)
		if err != nil {
			return err
		}
		opts.Interfaces = found.Mapping
		fmt.Fprintf(s.Err, "render: --from-cluster: %s, read from %d nodes\n", found.Interfaces, len(found.Nodes))
	}
	in, err := inputs(*root)
	if err != nil {
		return err
	}
	rt, err := runtimes.TorchRuntime(in, opts)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	if *worker != "" {
		// render does not pull the image, so it cannot check; it says what
		// the image must be, because a mismatch fails only on the node.
		fmt.Fprintf(s.Err, "render: --worker-image %s must be built for %s\n", *worker, cudaNote(in.Facts))
	}
	return write(s, runtimes.Format(*format), nil, rt)
}

// renderBenchmark prints the NCCL benchmark derived from the runtime
// rendered for the cluster's mapping, and the TrainJob that runs it: what
// validate would run, for users who run it themselves.
func renderBenchmark(_ context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("render benchmark", "render benchmark (--interfaces eth1=NET,...,eth8=NET | --values FILE) [--namespace NS] [--nodes N] [--node-selector k=v[,k=v]]... [--toleration key[=value]:Effect]... [--profile default|simple] [--benchmark-image REF] [-o yaml|json]\n"+
		"       render benchmark --fabric gib --machine-type a3-ultragpu-8g|a4-highgpu-8g (--interfaces eth2=NET,...,eth9=NET[,eth1=NET] | --values FILE) [--collective all_gather|all_reduce] [--namespace NS] [--nodes N] [--node-selector k=v]... [--toleration key[=value]:Effect]... [--benchmark-image REF] [-o yaml|json]\n\n"+
		"--fabric gib derives "+fabric.GIB.BenchmarkFor("<machine type>")+" from "+fabric.GIB.RuntimeFor("<machine type>")+" rendered for the mapping and machine type, run from the pinned gIB diagnostic image (its MPI build of nccl-tests, sshd on the port its sshd_config sets), all_gather by default: the collective of Google's NCCL test and of its published busbw.", s)
	fabricName := fabricFlag(fs)
	machineType := fs.String("machine-type", "", "with --fabric gib (required): the machine type the benchmark runs on: "+strings.Join(fabric.GIB.MachineTypeNames(), " or "))
	collective := fs.String("collective", "", "the nccl-tests collective: "+benchmark.AllGather+" or "+benchmark.AllReduce+" with --fabric gib (default "+benchmark.GIB.Collectives[0]+"); "+benchmark.AllReduce+" only for tcpxo")
	root := fs.String("root", "", "repository root whose bom/ to read (default: the checkout around the working directory, else the inputs built into tcpxogen)")
	ifaces := fs.String("interfaces", "", "GPU-NIC to GKE Network mapping: eth1=<network>,...,eth8=<network>; with --fabric gib eth2=<network>,...,eth9=<network>[,eth1=<network>] (required unless --values)")
	values := fs.String("values", "", "YAML file with tcpxoInterfaces: [{interfaceName, network}, ...] (with --fabric gib, rdmaInterfaces:)")
	selectors := fs.StringArray("node-selector", nil, nodeSelectorHelp)
	tolerations := fs.StringArray("toleration", nil, "toleration key[=value]:Effect (repeatable)")
	profile := fs.String("profile", runtimes.ProfileDefault, "NCCL profile: default or simple")
	namespace := fs.String("namespace", "default", "namespace of the benchmark TrainingRuntime and its TrainJob; it must exist")
	nodes := fs.Int("nodes", int(benchmark.DefaultNumNodes), "GPU nodes the benchmark spans (at least 2)")
	image := fs.String("benchmark-image", "", "override the benchmark image (default: the pinned installer image, which carries the MPI build of nccl-tests and sshd; with --fabric gib the pinned diagnostic image); pinned as repo:tag@sha256:<64 hex>")
	format := fs.StringP("output", "o", "yaml", "output format: yaml or json")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	f, err := fabric.Lookup(*fabricName)
	if err != nil {
		return cli.BadInput("--fabric: %w", err)
	}
	if *nodes < 2 || *nodes > 1<<15 {
		return cli.BadInput("--nodes %d: the benchmark spans at least 2 GPU nodes (on one node NCCL never uses the GPU NICs)", *nodes)
	}
	o := benchmark.Overrides{Namespace: *namespace, NumNodes: int32(*nodes), Image: *image, Collective: *collective}
	if f.Name == fabric.GIB.Name {
		if fs.Changed("profile") {
			return cli.BadInput("--profile is TCPXO's (the installer's default and simple profiles); the gIB env is the machine type's: drop --profile")
		}
		return renderGIBBenchmark(s, *root, *machineType, *ifaces, *values, *selectors, *tolerations, *format, o)
	}
	if *machineType != "" {
		return cli.BadInput("--machine-type is for --fabric gib; the TCPXO benchmark runs on a3-megagpu-8g only")
	}
	if *collective != "" && *collective != benchmark.AllReduce {
		return cli.BadInput("--collective %s: the TCPXO benchmark runs %s only (the installer image's MPI build); %s is for --fabric gib", excerpt.Quote(*collective), benchmark.AllReduce, benchmark.AllGather)
	}
	opts, err := runtimeOptions(*ifaces, *values, *selectors, *tolerations, false)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	opts.Profile = *profile
	in, err := inputs(*root)
	if err != nil {
		return err
	}
	bench, err := benchmark.ForCluster(in, opts, o)
	switch {
	case errors.Is(err, benchmark.ErrShipped):
		// The runtime tcpxogen rendered cannot be benchmarked: not the user's input.
		return fmt.Errorf("the %s rendered for this mapping cannot be benchmarked, which is a bug in tcpxogen: %w", names.Runtime, err)
	case err != nil:
		return cli.BadInput("%w", err)
	}
	fmt.Fprintf(s.Err, "render benchmark: apply both objects in namespace %s; the result is the launcher pod's log (tcpxogen nccl-report --log FILE judges it)\n", *namespace)
	return write(s, runtimes.Format(*format), []string{
		fmt.Sprintf("NCCL all_reduce_perf benchmark derived from %s for NCCL plugin installer %s,", names.Runtime, in.Facts.PluginVersion),
		"rendered by tcpxogen render benchmark for this cluster's GPU-NIC networks, and the TrainJob that runs it.",
	}, bench, benchmark.TrainJob(bench))
}

func renderComponents(_ context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("render components", "render components [--fabric tcpxo|gib] [-o yaml|json]\n\nTCPXO's components are the installer DaemonSet and the NRI device injector; gIB's the nccl-rdma-installer DaemonSet.", s)
	fabricName := fabricFlag(fs)
	root := fs.String("root", "", "repository root whose bom/ to read (default: the checkout around the working directory, else the inputs built into tcpxogen)")
	format := fs.StringP("output", "o", "yaml", "output format: yaml or json")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	f, err := fabric.Lookup(*fabricName)
	if err != nil {
		return cli.BadInput("--fabric: %w", err)
	}
	in, err := inputs(*root)
	if err != nil {
		return err
	}
	components := runtimes.Components
	if f.Name == fabric.GIB.Name {
		components = runtimes.RDMAComponents
	}
	var objs []any
	for _, ds := range components(in) {
		objs = append(objs, ds)
	}
	return write(s, runtimes.Format(*format), nil, objs...)
}

// renderGoldens rewrites the committed manifests, all or nothing.
func renderGoldens(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("render goldens", "render goldens [--root DIR]", s)
	root := fs.String("root", "", "repository root (default: found upwards from the working directory)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	r, err := bom.ResolveRoot(*root)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	res, err := pipeline.Regenerate(ctx, r, cli.DefaultCacheDir(), nil)
	if err != nil {
		return err
	}
	files, changed := res.Files, res.Paths
	fmt.Fprintf(s.Err, "render goldens: %d files, %d changed\n", len(files), len(changed))
	return nil
}

// fabricFlag declares --fabric; commands Lookup its value after parsing,
// so an unknown fabric is refused with the list of fabrics.
func fabricFlag(fs *pflag.FlagSet) *string {
	return fs.String("fabric", fabric.Default, "the fabric: "+strings.Join(fabric.Names(), " or ")+" (tcpxo: GPUDirect-TCPXO on A3 Mega; gib: GPUDirect-RDMA with NCCL/gIB on A3 Ultra and A4)")
}

// renderRDMARuntime renders the gIB runtime for one machine type.
func renderRDMARuntime(s cli.Streams, root string, opts runtimes.RDMAOptions, worker, format string) error {
	opts.WorkerImage = worker
	in, err := inputs(root)
	if err != nil {
		return err
	}
	rt, err := runtimes.RDMARuntime(in, opts)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	return write(s, runtimes.Format(format), nil, rt)
}

// renderGIBBenchmark prints the gIB benchmark derived from the gIB runtime
// rendered for the mapping and machine type, and the TrainJob that runs it.
func renderGIBBenchmark(s cli.Streams, root, machineType, ifaces, values string, selectors, tolerations []string, format string, o benchmark.Overrides) error {
	opts, err := rdmaOptions(machineType, ifaces, values, selectors, tolerations, false)
	if err != nil {
		return err
	}
	if o.Collective != "" && !slices.Contains(benchmark.GIB.Collectives, o.Collective) {
		return cli.BadInput("--collective %s: the gIB benchmark runs %s", excerpt.Quote(o.Collective), strings.Join(benchmark.GIB.Collectives, " or "))
	}
	in, err := inputs(root)
	if err != nil {
		return err
	}
	bench, err := benchmark.ForClusterGIB(in, opts, o)
	switch {
	case errors.Is(err, benchmark.ErrShipped):
		return fmt.Errorf("the %s rendered for this mapping cannot be benchmarked, which is a bug in tcpxogen: %w", fabric.GIB.RuntimeFor(machineType), err)
	case err != nil:
		return cli.BadInput("%w", err)
	}
	collective := cmp.Or(o.Collective, benchmark.GIB.Collectives[0])
	fmt.Fprintf(s.Err, "render benchmark: apply both objects in namespace %s; the result is the launcher pod's log (tcpxogen nccl-report --fabric gib --log FILE judges it)\n", o.Namespace)
	return write(s, runtimes.Format(format), []string{
		fmt.Sprintf("NCCL %s benchmark derived from %s for the NCCL/gIB installer %s,", benchmark.Perf(collective), fabric.GIB.RuntimeFor(machineType), in.GIB.PluginVersion),
		"rendered by tcpxogen render benchmark --fabric gib for this cluster's RDMA networks, and the TrainJob that runs it.",
	}, bench, benchmark.TrainJob(bench))
}

// rdmaOptions reads the gIB render flags: the machine type and the
// mapping, required (unless fromCluster: discovered once the flags are
// read), and the node selection.
func rdmaOptions(machineType, ifaces, values string, selectors, tolerations []string, fromCluster bool) (runtimes.RDMAOptions, error) {
	if machineType == "" {
		return runtimes.RDMAOptions{}, cli.BadInput("--machine-type is required with --fabric gib: one of %s (gIB's env differs per machine type)", strings.Join(fabric.GIB.MachineTypeNames(), ", "))
	}
	opts := runtimes.RDMAOptions{MachineType: machineType}
	var err error
	switch {
	case ifaces != "" && values != "":
		return opts, cli.BadInput("give the mapping once: --interfaces or --values, not both")
	case fromCluster:
	case values != "":
		data, rerr := inputfile.Read(values, inputfile.Spec{What: "--values", Max: inputfile.MaxData})
		if rerr != nil {
			return opts, cli.BadInput("%w", rerr)
		}
		if opts.Interfaces, err = interfaces.RDMA.ParseYAML(data); err != nil {
			return opts, cli.BadInput("%s: %w", values, err)
		}
	default:
		if opts.Interfaces, err = interfaces.RDMA.Parse(ifaces); err != nil {
			return opts, cli.BadInput("--interfaces: %w", err)
		}
	}
	if opts.NodeSelector, err = parseSelectors(selectors); err != nil {
		return opts, cli.BadInput("%w", err)
	}
	if opts.Tolerations, err = parseTolerations(tolerations); err != nil {
		return opts, cli.BadInput("%w", err)
	}
	return opts, nil
}

// inputs loads the reviewed inputs of --root, else of the enclosing
// checkout, else the ones built into the binary: rendering the runtime for a
// cluster needs nothing a checkout adds.
func inputs(root string) (*runtimes.Inputs, error) {
	in, err := shipped.InputsAt(root)
	if err != nil {
		return nil, cli.BadInput("%w", err)
	}
	return in, nil
}

func write(s cli.Streams, format runtimes.Format, header []string, objs ...any) error {
	data, err := runtimes.Encode(format, header, objs...)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	_, err = s.Out.Write(data)
	return err
}

// runtimeOptions reads the render flags; with fromCluster the mapping is
// left to discovery.
func runtimeOptions(ifaces, values string, selectors, tolerations []string, fromCluster bool) (runtimes.Options, error) {
	var opts runtimes.Options
	var err error
	switch {
	case ifaces != "" && values != "":
		return opts, fmt.Errorf("give the mapping once: --interfaces or --values, not both")
	case fromCluster:
		// Discovered once the flags are read.
	case values != "":
		data, rerr := inputfile.Read(values, inputfile.Spec{What: "--values", Max: inputfile.MaxData})
		if rerr != nil {
			return opts, rerr
		}
		if opts.Interfaces, err = interfaces.ParseYAML(data); err != nil {
			return opts, fmt.Errorf("%s: %w", values, err)
		}
	default:
		opts.Interfaces, err = interfaces.Parse(ifaces)
	}
	if err != nil {
		return opts, err
	}
	if opts.NodeSelector, err = parseSelectors(selectors); err != nil {
		return opts, err
	}
	opts.Tolerations, err = parseTolerations(tolerations)
	return opts, err
}

// nodeSelectorHelp documents render's --node-selector, which shares its
// name with discover's and check cluster's label selector.
const nodeSelectorHelp = "node selector: key=value terms, comma-separated or repeated (a=b,c=d); the label selector discover and check cluster take, its equality terms only: the runtime's nodeSelector matches labels by equality, so set-based terms (a!=b, a in (x,y), a notin (x), a, !a) are refused (default cloud.google.com/gke-accelerator=nvidia-h100-mega-80gb)"

// parseSelectors reads --node-selector: each value holds one or more
// equality terms of a label selector (key=value or key==value, spaces
// around them allowed), comma-separated, as discover's and check
// cluster's --node-selector take them; repeated flags add terms. A
// runtime's nodeSelector is a map of labels a node must carry, so it
// expresses equality only, and a set-based term is refused by name rather
// than read as something else.
func parseSelectors(in []string) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, arg := range in {
		for _, term := range selectorTerms(arg) {
			k, v, err := equalityTerm(arg, term)
			if err != nil {
				return nil, err
			}
			if err := labelProblems("--node-selector", arg, k, v); err != nil {
				return nil, err
			}
			if prev, dup := out[k]; dup && prev != v {
				return nil, fmt.Errorf("--node-selector %s: key %s is already selected with value %s; a node has one value per label", excerpt.Quote(arg), excerpt.Quote(k), excerpt.Quote(prev))
			}
			out[k] = v
		}
	}
	return out, nil
}

// selectorTerms splits a label selector at the commas between its terms;
// a comma inside a set's parentheses (a in (x,y)) separates values, not
// terms.
func selectorTerms(sel string) []string {
	var terms []string
	depth, start := 0, 0
	for i, r := range sel {
		switch r {
		case '(':
			depth++
		case ')':
			depth = max(depth-1, 0)
		case ',':
			if depth == 0 {
				terms = append(terms, sel[start:i])
				start = i + 1
			}
		}
	}
	return append(terms, sel[start:])
}

// setTerm matches the set-based terms of a label selector's grammar that
// are not told by a leading '!' or an operator character: key in (...) and
// key notin (...).
var setTerm = regexp.MustCompile(`^\S+\s+(in|notin)\s*\(`)

// equalityTerm reads one term of arg as key=value (or key==value), naming
// a set-based term as such.
func equalityTerm(arg, term string) (key, value string, err error) {
	t := strings.TrimSpace(term)
	setBased := func(what string) error {
		return fmt.Errorf("--node-selector %s: %s is a set-based term (%s), but the runtime's nodeSelector matches labels by equality only: give key=value terms, e.g. a=b,c=d (discover and check cluster take any label selector)", excerpt.Quote(arg), excerpt.Quote(t), what)
	}
	switch {
	case strings.HasPrefix(t, "!"):
		return "", "", setBased("the label is absent")
	case strings.Contains(t, "!="):
		return "", "", setBased("not equal")
	case setTerm.MatchString(t):
		if setTerm.FindStringSubmatch(t)[1] == "in" {
			return "", "", setBased("one of a set")
		}
		return "", "", setBased("none of a set")
	case !strings.Contains(t, "=") && strings.ContainsAny(t, "<>"):
		return "", "", setBased("a numeric comparison")
	case !strings.Contains(t, "=") && t != "" && !strings.ContainsAny(t, " \t"):
		return "", "", setBased("the label exists")
	}
	k, v, ok := strings.Cut(t, "==")
	if !ok {
		k, v, ok = strings.Cut(t, "=")
	}
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if !ok || k == "" {
		return "", "", fmt.Errorf("--node-selector %s: want key=value", excerpt.Quote(arg))
	}
	return k, v, nil
}

// labelProblems checks a label key and value with the API server's own
// rules, so a selector or toleration it would reject is refused here,
// before anything is printed, rather than at apply time.
func labelProblems(flag, arg, key, value string) error {
	var problems []string
	for _, p := range validation.IsQualifiedName(key) {
		problems = append(problems, "key "+excerpt.Quote(key)+": "+p)
	}
	for _, p := range validation.IsValidLabelValue(value) {
		problems = append(problems, "value "+excerpt.Quote(value)+": "+p)
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s %s: %s", flag, excerpt.Quote(arg), strings.Join(problems, "; "))
}

var effects = map[string]corev1.TaintEffect{
	"NoSchedule":       corev1.TaintEffectNoSchedule,
	"PreferNoSchedule": corev1.TaintEffectPreferNoSchedule,
	"NoExecute":        corev1.TaintEffectNoExecute,
}

// parseTolerations reads kubectl-taint-shaped tolerations: key=value:Effect
// (operator Equal) or key:Effect (operator Exists).
func parseTolerations(in []string) ([]corev1.Toleration, error) {
	var out []corev1.Toleration
	for _, t := range in {
		// The effect follows the last ':': a qualified key has none, but a
		// wrong one should be named as a bad key, not a bad effect.
		i := strings.LastIndex(t, ":")
		if i < 0 {
			return nil, fmt.Errorf("--toleration %s: want key[=value]:Effect with Effect one of NoSchedule, PreferNoSchedule, NoExecute", excerpt.Quote(t))
		}
		kv, eff := t[:i], t[i+1:]
		effect, known := effects[eff]
		if !known || kv == "" {
			return nil, fmt.Errorf("--toleration %s: want key[=value]:Effect with Effect one of NoSchedule, PreferNoSchedule, NoExecute", excerpt.Quote(t))
		}
		tol := corev1.Toleration{Key: kv, Operator: corev1.TolerationOpExists, Effect: effect}
		if k, v, hasValue := strings.Cut(kv, "="); hasValue {
			tol.Key, tol.Value, tol.Operator = k, v, corev1.TolerationOpEqual
		}
		// The API server validates a toleration's key as a label key and
		// its value as a label value (core validation of tolerations).
		if err := labelProblems("--toleration", t, tol.Key, tol.Value); err != nil {
			return nil, err
		}
		out = append(out, tol)
	}
	return out, nil
}

// cudaNote names what a worker image must be built for and why: the CUDA
// major a needed libcudart of the plugin libraries names, or none.
func cudaNote(p facts.Facts) string {
	b, err := bom.PluginCUDABinding(p.PluginLibraries)
	if err != nil {
		return fmt.Sprintf("(unknown: %v)", err)
	}
	return b.Need("") + " for installer " + p.PluginVersion
}

// discoverMapping reads the mapping from the nodes the runtime will select
// (its node selector as a label selector; the A3 Mega accelerator label by
// default), exactly as discover does, under discover's permissions.
func discoverMapping(ctx context.Context, f fabric.Fabric, kubeconfigPath, kubeContext string, nodeSelector map[string]string) (cluster.Found, error) {
	c, err := cluster.Connect(access.Discover, kubeconfigPath, kubeContext, "")
	if _, bad := errors.AsType[*kubeconfig.InputError](err); bad {
		return cluster.Found{}, cli.BadInput("--from-cluster: %w", err)
	}
	if err != nil {
		return cluster.Found{}, fmt.Errorf("--from-cluster: %w", err)
	}
	selector := cluster.DefaultNodeSelector
	if len(nodeSelector) > 0 {
		selector = labels.SelectorFromSet(nodeSelector).String()
	}
	found, err := cluster.RunDiscover(ctx, c, f, selector)
	if err != nil {
		return found, fmt.Errorf("--from-cluster: %w; nothing rendered", err)
	}
	return found, nil
}
