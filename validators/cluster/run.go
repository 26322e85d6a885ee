package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
// and derives the one mapping they agree on. It refuses, naming nodes and
// values, whatever it would have to guess, and names each mapped network
// whose Network or GKENetworkParamSet is missing, not Device, or not Ready.
func RunDiscover(ctx context.Context, c *Clients, selector string) (Found, error) {
	nodes, err := ReadNodes(ctx, c, selector)
	if err != nil {
		return Found{}, err
	}
	d, err := Discover(nodes)
	if err != nil {
		return Found{Nodes: d.Nodes}, err
	}
	nets, err := ReadNetworks(ctx, c)
	if err != nil {
		return Found{}, err
	}
	f := Found{Mapping: d.Mapping, Interfaces: d.Mapping.String(), Nodes: d.Nodes}
	var want []string
	for _, b := range d.Mapping.Bindings() {
		want = append(want, b.Network)
	}
	if problems := NetworkProblems(want, nets); len(problems) > 0 {
		return f, fmt.Errorf("%w: the nodes carry %s, but\n  %s", ErrNetworks, f.Interfaces, strings.Join(problems, "\n  "))
	}
	return f, nil
}

// RunCheck reads the cluster and judges it (Check); a node the selector
// does not match is not read.
func RunCheck(ctx context.Context, c *Clients, selector, namespace string, want Expect) ([]Finding, error) {
	st, err := ReadState(ctx, c, selector, namespace)
	if err != nil {
		return nil, err
	}
	return Check(st, want), nil
}

// RunCheckCluster is `check cluster`: RunCheck's checks (the ones validate
// runs too), and the TrainJobs of the shipped runtimes judged against the
// deployed runtimes (CheckTrainJobs), which reads what validate's
// permissions do not grant: the TrainJobs of every namespace and their
// runtime snapshots.
func RunCheckCluster(ctx context.Context, c *Clients, selector, namespace string, want Expect) ([]Finding, error) {
	st, err := ReadState(ctx, c, selector, namespace)
	if err != nil {
		return nil, err
	}
	tj, err := ReadTrainJobs(ctx, c, st.Runtime)
	if err != nil {
		return nil, err
	}
	return append(Check(st, want), CheckTrainJobs(tj)...), nil
}
