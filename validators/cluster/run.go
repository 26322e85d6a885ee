package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// ErrNetworks is wrapped when the mapped networks' GKE objects are missing,
// of the wrong type or not ready.
var ErrNetworks = errors.New("the GPU-NIC networks are not ready")

// ErrNotJudged is wrapped when a fabric's pool passes CheckPool but what
// follows is not built for that fabric: no verdict, never a pass.
var ErrNotJudged = errors.New("not judged")

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
	nodes, err := ReadNodes(ctx, c, selector)
	if err != nil {
		return Found{}, err
	}
	if _, err := CheckPool(nodes, f); err != nil {
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
// runtime snapshots. The nodes must first be a pool of fabric f
// (CheckPool): a refusal there is the error, and nothing else is judged.
func RunCheckCluster(ctx context.Context, c *Clients, f fabric.Fabric, selector, namespace string, want Expect) ([]Finding, error) {
	st, err := ReadState(ctx, c, selector, namespace)
	if err != nil {
		return nil, err
	}
	mt, err := CheckPool(st.Nodes, f)
	if err != nil {
		return nil, err
	}
	if f.Name != fabric.TCPXO.Name {
		// Check judges TCPXO's wiring (eth1..eth8, the tcpxo installer and
		// daemon, TCPXO's GKE floor): on any other fabric's pool its
		// verdict would be about the wrong fabric, so none is given.
		return nil, fmt.Errorf("%w: the target nodes are a %s pool (--fabric %s), but check cluster judges only the pool's machine type there so far: the per-node %s checks (RDMA NICs, installer %s, the GKE floor of %s) are not built, so nothing vouches for these nodes; no verdict is given",
			ErrNotJudged, mt.Name, f.Name, f.Title, f.InstallerDaemonSet, mt.Name)
	}
	tj, err := ReadTrainJobs(ctx, c, st.Runtime)
	if err != nil {
		return nil, err
	}
	return append(Check(st, want), CheckTrainJobs(tj)...), nil
}
