package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// ErrNetworks is wrapped when the mapped networks' GKE objects are missing,
// of the wrong type or not ready.
var ErrNetworks = errors.New("the GPU-NIC networks are not ready")

// Found is discover's answer: the mapping and what it was read from.
type Found struct {
	Mapping interfaces.Mapping `json:"-"`
	// Interfaces is the mapping as render runtime --interfaces takes it.
	Interfaces string     `json:"interfaces"`
	Nodes      []NodeNICs `json:"nodes"`
}

// RunDiscover reads the target nodes (selector) and the GKE Network objects,
// and derives the one mapping they agree on. The nodes must first be a pool
// of fabric f (CheckPool). It refuses, naming nodes and values, whatever it
// would have to guess, and names each mapped network whose Network or
// GKENetworkParamSet is missing, not Device, or not Ready.
func RunDiscover(ctx context.Context, c *Clients, f fabric.Fabric, selector string) (Found, error) {
	nodes, _, err := ReadPool(ctx, c, f, selector)
	if err != nil {
		return Found{}, err
	}
	d, err := discover(nodes, wordsFor(f))
	if err != nil {
		return Found{Nodes: d.Nodes}, err
	}
	nets, err := ReadNetworks(ctx, c)
	if err != nil {
		return Found{}, err
	}
	found := Found{Mapping: d.Mapping, Interfaces: d.Mapping.String(), Nodes: d.Nodes}
	if problems := networkProblems(mappedNetworks(d.Mapping), nets); len(problems) > 0 {
		return found, fmt.Errorf("%w: the nodes carry %s, but\n  %s", ErrNetworks, found.Interfaces, strings.Join(problems, "\n  "))
	}
	return found, nil
}

// ReadPool reads the target nodes (selector) and what says whether managed
// DRANET serves them (ReadDRANET), and judges them as a pool of fabric f
// (CheckPoolWith). No nodes is not its to judge: it returns them and the
// zero MachineType.
func ReadPool(ctx context.Context, c *Clients, f fabric.Fabric, selector string) ([]corev1.Node, fabric.MachineType, error) {
	nodes, err := ReadNodes(ctx, c, selector)
	if err != nil || len(nodes) == 0 {
		return nodes, fabric.MachineType{}, err
	}
	dranet, err := ReadDRANET(ctx, c, nodes)
	if err != nil {
		return nil, fabric.MachineType{}, err
	}
	mt, err := CheckPoolWith(nodes, f, dranet)
	return nodes, mt, err
}

// RunCheck reads the target nodes (selector), judges them as a pool of
// fabric f (CheckPool: a refusal there is the error, and nothing else is
// judged), then reads the rest and judges it (Check) with want's fabric and
// machine type set from the pool. A recipe for another fabric or machine
// type than the pool's is refused (ErrPool) before anything else. A node
// the selector does not match is not read.
func RunCheck(ctx context.Context, c *Clients, f fabric.Fabric, selector, namespace string, want Expect) ([]Finding, State, error) {
	nodes, mt, err := ReadPool(ctx, c, f, selector)
	if err != nil {
		return nil, State{}, err
	}
	if err := recipeFits(want, f, mt); err != nil {
		return nil, State{}, err
	}
	want.Fabric, want.Machine = f, mt
	st, err := ReadState(ctx, c, f, mt, nodes, namespace)
	if err != nil {
		return nil, st, err
	}
	return Check(st, want), st, nil
}

// recipeFits refuses a recipe mapping of another fabric's layout, or one
// for another machine type than the pool's (RecipeMachine), naming both.
func recipeFits(want Expect, f fabric.Fabric, mt fabric.MachineType) error {
	if want.Mapping.IsZero() {
		return nil
	}
	if want.Mapping.Layout() != wordsFor(f).layout {
		return fmt.Errorf("%w: the recipe maps %s, a mapping of another fabric than --fabric %s (%s on %s): give this pool's recipe, or run with the recipe's fabric", ErrPool, want.Mapping, f.Name, f.Title, mt.Name)
	}
	if want.RecipeMachine != "" && want.RecipeMachine != mt.Name {
		return fmt.Errorf("%w: the recipe is for %s, but the target nodes are %s: its runtime (%s) selects %s nodes, so it would not run here; give the %s pool's recipe, or select the %s pool with --node-selector",
			ErrPool, want.RecipeMachine, mt.Name, f.RuntimeFor(want.RecipeMachine), want.RecipeMachine, mt.Name, want.RecipeMachine)
	}
	return nil
}

// RunCheckCluster is `check cluster`: RunCheck's checks (the ones validate
// runs too), and the TrainJobs of the pool's shipped runtime and benchmark
// judged against the deployed ones (CheckTrainJobs), which reads what
// validate's permissions do not grant: the TrainJobs of every namespace and
// their runtime snapshots.
func RunCheckCluster(ctx context.Context, c *Clients, f fabric.Fabric, selector, namespace string, want Expect) ([]Finding, error) {
	findings, st, err := RunCheck(ctx, c, f, selector, namespace, want)
	if err != nil {
		return nil, err
	}
	tj, err := ReadTrainJobs(ctx, c, ShippedRuntimesOf(f, st.Machine.Name), st.Runtime)
	if err != nil {
		return nil, err
	}
	return append(findings, CheckTrainJobs(tj)...), nil
}
