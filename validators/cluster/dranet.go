package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
)

// DRANETSlices are the target nodes on which managed DRANET's driver
// publishes devices, by node, with the driver; none where the cluster has
// no DRANETDeviceClass.
type DRANETSlices map[string]string

// ReadDRANET finds the target nodes managed DRANET serves by what the
// cluster itself says, not by a driver name tcpxogen would have to assume
// (Google publishes the DeviceClass, mrdma.google.com, but not its
// driver's name): the drivers DRANETDeviceClass's CEL selectors name
// (device.driver == "…", read with CEL's own parser), then, for each, its
// ResourceSlices (by the spec.driver field selector the API server serves)
// on the target nodes. A cluster without that DeviceClass has no DRANET
// driver to look for, and one that serves no resource.k8s.io/v1 (DRA is GA
// from Kubernetes 1.34) neither: both read as none.
func ReadDRANET(ctx context.Context, c *Clients, nodes []corev1.Node) (DRANETSlices, error) {
	dc, err := c.Kube.ResourceV1().DeviceClasses().Get(ctx, DRANETDeviceClass, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, c.Guard.Explain(fmt.Errorf("reading DeviceClass %s (managed DRANET's) on %s: %w", DRANETDeviceClass, c.Host, err))
	}
	out := DRANETSlices{}
	for _, driver := range selectedDrivers(dc) {
		list, err := c.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.driver", driver).String()})
		if err != nil {
			return nil, c.Guard.Explain(fmt.Errorf("listing driver %s's ResourceSlices on %s (managed DRANET's devices): %w", driver, c.Host, err))
		}
		for _, s := range list.Items {
			name := ptr.Deref(s.Spec.NodeName, "")
			// The driver is compared too: a client that ignores the field
			// selector must not turn another driver's devices into DRANET's.
			if s.Spec.Driver == driver && name != "" && slices.ContainsFunc(nodes, func(n corev1.Node) bool { return n.Name == name }) {
				out[name] = driver
			}
		}
	}
	return out, nil
}

// selectedDrivers are the drivers a DeviceClass's CEL selectors compare
// device.driver with (==), parsed with cel-go's parser; an expression that
// does not parse names none.
func selectedDrivers(dc *resourcev1.DeviceClass) []string {
	p, err := parser.NewParser(parser.Macros(parser.AllMacros...))
	if err != nil {
		return nil
	}
	var out []string
	for _, sel := range dc.Spec.Selectors {
		if sel.CEL == nil {
			continue
		}
		tree, errs := p.Parse(common.NewTextSource(sel.CEL.Expression))
		if errs != nil && len(errs.GetErrors()) > 0 {
			continue
		}
		ast.PreOrderVisit(ast.NavigateAST(tree), ast.NewExprVisitor(func(e ast.Expr) {
			if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != operators.Equals || len(e.AsCall().Args()) != 2 {
				return
			}
			args := e.AsCall().Args()
			for i := range 2 {
				if isDeviceDriver(args[i]) {
					if d, ok := stringLiteral(args[1-i]); ok && !slices.Contains(out, d) {
						out = append(out, d)
					}
				}
			}
		}))
	}
	return out
}

// isDeviceDriver tells whether e is device.driver, the driver of the
// device a DRA selector is evaluated for.
func isDeviceDriver(e ast.Expr) bool {
	if e.Kind() != ast.SelectKind || e.AsSelect().FieldName() != "driver" {
		return false
	}
	op := e.AsSelect().Operand()
	return op.Kind() == ast.IdentKind && op.AsIdent() == "device"
}

func stringLiteral(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// dranetError refuses, for fabric f, the nodes labelled for managed DRANET
// (labelled) and those its driver publishes devices on (bySlices); nil
// when there are none.
func dranetError(f fabric.Fabric, labelled []string, bySlices DRANETSlices) error {
	var what []string
	if len(labelled) > 0 {
		what = append(what, fmt.Sprintf("%s (%s) %s labelled %s=true", nodeCount(len(labelled)), listNodes(labelled), verb(len(labelled), "is", "are"), DRANETLabel))
	}
	if len(bySlices) > 0 {
		nodes, drivers := dranetNodes(bySlices)
		what = append(what, fmt.Sprintf("%s (%s) %s devices of %s, the driver DeviceClass %s selects, in ResourceSlices", nodeCount(len(nodes)), listNodes(nodes), verb(len(nodes), "publishes", "publish"), strings.Join(drivers, ", "), DRANETDeviceClass))
	}
	if len(what) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s: the node pool is set up for GKE's managed DRANET, which attaches the NICs to pods through ResourceClaims (DeviceClass %s). DRANET and Device-type multi-networking are mutually exclusive attachment modes on the same NICs (Google: do not use both on the same NICs), and --fabric %s's runtime attaches them through multi-network Device Networks, so its pods would get no fabric NICs there: use a node pool without DRANET for the multi-network runtimes (select it with --node-selector), or run DRANET-native workloads, which claim the NICs through %s ResourceClaims, on this one",
		ErrPool, strings.Join(what, "; "), DRANETDeviceClass, f.Name, DRANETDeviceClass)
}

// dranetNodes lists on's nodes and drivers, sorted.
func dranetNodes(on DRANETSlices) (nodes []string, drivers []string) {
	for n, d := range on {
		nodes = append(nodes, n)
		if !slices.Contains(drivers, d) {
			drivers = append(drivers, d)
		}
	}
	slices.Sort(nodes)
	slices.Sort(drivers)
	return nodes, drivers
}
