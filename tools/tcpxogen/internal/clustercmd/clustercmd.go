// Package clustercmd is `tcpxogen discover` and `tcpxogen check cluster`:
// the flags and output of the GPU-NIC discovery and the cluster check, which
// are package validators/cluster.
//
// Exit status: 0 the mapping was discovered; 1 the cluster's nodes or
// networks do not give one mapping (named); 2 bad input (a flag, the
// kubeconfig).
package clustercmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/internal/access"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/tools/internal/clusterflags"
	"github.com/tcpxogen/tcpxogen/validators/cluster"
	"github.com/tcpxogen/tcpxogen/validators/performance/recipe"
)

// Commands returns the discover command.
func Commands() cli.Commands {
	return cli.Commands{"discover": {
		Summary: "read the GPU-NIC networks from the A3 Mega nodes (--fabric gib: the RDMA networks from the A3 Ultra / A4 nodes), in host-NIC order (-o interfaces|values|yaml)",
		Run:     discover,
	}}
}

func discover(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("discover", "discover [--fabric tcpxo|gib] [--kubeconfig F] [--context C] [--node-selector SEL] [-o interfaces|values|yaml]\n\n"+poolHelp+"\n\n"+clusterflags.ReadOnlyHelp(access.Discover), s)
	cf := clusterflags.Add(fs)
	fabricName := clusterflags.FabricFlag(fs)
	format := fs.StringP("output", "o", "interfaces", "interfaces (the --interfaces value of render runtime), values (the --values file of render runtime: tcpxoInterfaces, with --fabric gib rdmaInterfaces) or yaml (the mapping and each node's NICs)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch *format {
	case "interfaces", "values", "yaml":
	default:
		return cli.BadInput("-o %q: use interfaces, values or yaml", *format)
	}
	fab, err := clusterflags.Fabric(*fabricName)
	if err != nil {
		return err
	}
	c, err := cf.Connect(access.Discover)
	if err != nil {
		return err
	}
	found, err := cluster.RunDiscover(ctx, c, fab, cf.Selector(fab))
	if err != nil {
		return err
	}
	switch *format {
	case "interfaces":
		_, err = fmt.Fprintln(s.Out, found.Interfaces)
	case "values":
		_, err = fmt.Fprint(s.Out, found.Mapping.ValuesYAML())
	case "yaml":
		var data []byte
		if data, err = json.Marshal(found); err == nil {
			if data, err = yaml.JSONToYAML(data); err == nil {
				_, err = s.Out.Write(data)
			}
		}
	}
	return err
}

// poolHelp is what discover and check cluster judge first.
const poolHelp = "The target nodes' machine type (node.kubernetes.io/instance-type) decides the fabric, before anything else is judged: a node without the label, a pool mixing machine types, A3 High or A3 Edge (GPUDirect-TCPX, which no fabric here serves), a machine type of another fabric than --fabric, and a managed DRANET pool (cloud.google.com/gke-networking-dra-driver=true: DRANET and Device-type multi-networking exclude each other on the same NICs) are refused (exit 1)."

// errFailed carries check cluster's exit status once its findings are
// printed.
var errFailed = errors.New("the cluster check failed")

// CheckCommands returns `check cluster`, for `check` to dispatch to (main
// hands it over: commands never import each other).
func CheckCommands() cli.Commands {
	return cli.Commands{"cluster": {Summary: "check the GPU nodes' NIC topology, networks, installer and GKE version, and list the TrainJobs still on other wiring than the deployed runtime", Run: CheckCluster}}
}

// CheckCluster is `tcpxogen check cluster`, dispatched by `check`.
func CheckCluster(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("check cluster", "check cluster [--fabric tcpxo|gib] [--kubeconfig F] [--context C] [--recipe FILE] [--node-selector SEL] [--namespace NS] [-v]\n\n"+poolHelp+"\n\n"+clusterflags.ReadOnlyHelp(access.CheckCluster), s)
	cf := clusterflags.Add(fs)
	fabricName := clusterflags.FabricFlag(fs)
	recipePath := fs.String("recipe", "", "recipe whose GPU-NIC mapping every node must carry (default: the nodes must agree among themselves)")
	root := fs.String("root", "", "repository root whose bom/ to check against (default: the BOM built into the binary)")
	verbose := fs.BoolP("verbose", "v", false, "print every finding, the passing ones too")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	fab, err := clusterflags.Fabric(*fabricName)
	if err != nil {
		return err
	}
	in, err := shipped.InputsAt(*root)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	want := cluster.ExpectFor(in, fab)
	if *recipePath != "" {
		r, err := recipe.Load(*recipePath)
		if err != nil {
			return cli.BadInput("--recipe: %w", err)
		}
		if r.FabricName() != fab.Name {
			return cli.BadInput("--recipe %s is for fabric %s, not --fabric %s: run check cluster --fabric %s, or give the %s recipe", *recipePath, r.FabricName(), fab.Name, r.FabricName(), fab.Name)
		}
		want.Mapping, want.RecipeMachine = r.Interfaces(), r.MachineType()
	}
	c, err := cf.Connect(access.CheckCluster)
	if err != nil {
		return err
	}
	findings, err := cluster.RunCheckCluster(ctx, c, fab, cf.Selector(fab), *cf.Namespace, want)
	if err != nil {
		return err
	}
	counts := map[cluster.Level]int{}
	for _, f := range findings {
		counts[f.Level]++
		if *verbose || f.Level != cluster.OK {
			if _, err := fmt.Fprintln(s.Out, f); err != nil {
				return err
			}
		}
	}
	verdict := "PASS"
	if cluster.Failed(findings) {
		verdict = "FAIL"
	}
	if _, err := fmt.Fprintf(s.Out, "check cluster: %s (%d failed, %d warnings, %d ok)\n", verdict, counts[cluster.Fail], counts[cluster.Warn], counts[cluster.OK]); err != nil {
		return err
	}
	if verdict == "FAIL" {
		return errFailed
	}
	return nil
}
