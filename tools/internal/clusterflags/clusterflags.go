// Package clusterflags holds what every tcpxogen command that reads a
// cluster shares: the connection flags, the guarded clients they build, and
// the RBAC paragraph of a read-only command's --help.
package clusterflags

import (
	"errors"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tcpxogen/tcpxogen/internal/access"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/kubeconfig"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/cluster"
)

// ConnectFlags are the flags of every command that reads the cluster.
type ConnectFlags struct {
	Kubeconfig, Context, Namespace, NodeSelector *string
	fs                                           *pflag.FlagSet
}

// Add declares --kubeconfig, --context, --namespace and
// --node-selector on fs.
func Add(fs *pflag.FlagSet) ConnectFlags {
	return ConnectFlags{
		Kubeconfig:   fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)"),
		Context:      fs.String("context", "", "kubeconfig context (default: the current context)"),
		Namespace:    fs.String("namespace", names.ComponentsNamespace, "the namespace the NCCL plugin installer runs in"),
		NodeSelector: fs.String("node-selector", cluster.DefaultNodeSelector, "label selector of the target GPU nodes, in any form kubectl get -l takes (a=b,c!=d, a in (x,y), !a)"),
		fs:           fs,
	}
}

// FabricFlag declares --fabric on fs for a command that reads a fabric's
// pool; Fabric looks its value up after parsing.
func FabricFlag(fs *pflag.FlagSet) *string {
	return fs.String("fabric", fabric.Default, "the fabric whose pool the target nodes must be: "+strings.Join(fabric.Names(), " or ")+" (tcpxo: GPUDirect-TCPXO on "+strings.Join(fabric.TCPXO.MachineTypeNames(), ", ")+"; gib: GPUDirect-RDMA with NCCL/gIB on "+strings.Join(fabric.GIB.MachineTypeNames(), " and ")+"); with gib, --node-selector defaults to "+cluster.NodeSelectorFor(fabric.GIB))
}

// Fabric looks up --fabric's value; an unknown fabric is bad input.
func Fabric(name string) (fabric.Fabric, error) {
	f, err := fabric.Lookup(name)
	if err != nil {
		return f, cli.BadInput("--fabric: %w", err)
	}
	return f, nil
}

// Selector is --node-selector's value, or fabric f's default when the flag
// was not given (cluster.NodeSelectorFor).
func (f ConnectFlags) Selector(fab fabric.Fabric) string {
	if f.fs != nil && !f.fs.Changed("node-selector") {
		return cluster.NodeSelectorFor(fab)
	}
	return *f.NodeSelector
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
