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

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/access"
	"github.com/tcpxogen/tcpxogen/internal/kubeconfig"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/cluster"
	"github.com/tcpxogen/tcpxogen/validators/performance/recipe"
)

// Commands returns the discover command.
func Commands() cli.Commands {
	return cli.Commands{"discover": {
		Summary: "read the GPU-NIC networks from the A3 Mega nodes, in host-NIC order (-o interfaces|values|yaml)",
		Run:     discover,
	}}
}

// ConnectFlags are the flags of every command that reads the cluster.
type ConnectFlags struct {
	Kubeconfig, Context, Namespace, NodeSelector *string
}

// AddConnectFlags declares --kubeconfig, --context, --namespace and
// --node-selector on fs.
func AddConnectFlags(fs *pflag.FlagSet) ConnectFlags {
	return ConnectFlags{
		Kubeconfig:   fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)"),
		Context:      fs.String("context", "", "kubeconfig context (default: the current context)"),
		Namespace:    fs.String("namespace", access.InstallerNamespace, "the namespace the NCCL plugin installer runs in"),
		NodeSelector: fs.String("node-selector", cluster.DefaultNodeSelector, "label selector of the target GPU nodes"),
	}
}

// Connect builds the guarded clients of list; configuration problems are
// bad input.
func (f ConnectFlags) Connect(list access.List) (*cluster.Clients, error) {
	c, err := cluster.Connect(list, *f.Kubeconfig, *f.Context, *f.Namespace)
	if _, bad := errors.AsType[*kubeconfig.InputError](err); bad {
		return nil, cli.BadInput("%w", err)
	}
	return c, err
}

// ReadOnlyHelp is the RBAC paragraph of a read-only command's --help: the
// permissions it needs, from the list its client is held to, and the
// command that prints them as a role.
func ReadOnlyHelp(l access.List) string {
	return "Read-only. RBAC: " + l.Needs() + ".\nAs a role: tcpxogen render rbac --for " + l.Command + " | kubectl apply -f -"
}

func discover(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("discover", "discover [--kubeconfig F] [--context C] [--node-selector SEL] [-o interfaces|values|yaml]\n\n"+ReadOnlyHelp(access.Discover), s)
	cf := AddConnectFlags(fs)
	format := fs.StringP("output", "o", "interfaces", "interfaces (the --interfaces value of render runtime), values (the --values file of render runtime) or yaml (the mapping and each node's NICs)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch *format {
	case "interfaces", "values", "yaml":
	default:
		return cli.BadInput("-o %q: use interfaces, values or yaml", *format)
	}
	c, err := cf.Connect(access.Discover)
	if err != nil {
		return err
	}
	found, err := cluster.RunDiscover(ctx, c, *cf.NodeSelector)
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

// errFailed carries check cluster's exit status once its findings are
// printed.
var errFailed = errors.New("the cluster check failed")

// CheckCluster is `tcpxogen check cluster`, dispatched by `check`.
func CheckCluster(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("check cluster", "check cluster [--kubeconfig F] [--context C] [--recipe FILE] [--node-selector SEL] [--namespace NS] [-v]\n\n"+ReadOnlyHelp(access.CheckCluster), s)
	cf := AddConnectFlags(fs)
	recipePath := fs.String("recipe", "", "recipe whose GPU-NIC mapping every node must carry (default: the nodes must agree among themselves)")
	root := fs.String("root", "", "repository root whose bom/ to check against (default: the BOM built into the binary)")
	verbose := fs.BoolP("verbose", "v", false, "print every finding, the passing ones too")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	b, rel, err := loadBOM(*root)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	want := cluster.Expect{BOM: b, Releases: rel}
	if *recipePath != "" {
		r, err := recipe.Load(*recipePath)
		if err != nil {
			return cli.BadInput("--recipe: %w", err)
		}
		want.Mapping = r.Interfaces()
	}
	c, err := cf.Connect(access.CheckCluster)
	if err != nil {
		return err
	}
	findings, err := cluster.RunCheck(ctx, c, *cf.NodeSelector, *cf.Namespace, want)
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

// loadBOM reads the BOM and release table of --root, else the ones built
// into the binary (what it was released with), as render runtime does.
func loadBOM(root string) (*bom.BOM, *bom.Releases, error) {
	load := runtimes.ShippedInputs
	if root != "" {
		load = func() (*runtimes.Inputs, error) {
			r, err := bom.ResolveRoot(root)
			if err != nil {
				return nil, err
			}
			return runtimes.LoadInputs(r)
		}
	}
	in, err := load()
	if err != nil {
		return nil, nil, err
	}
	return in.BOM, in.Releases, nil
}
