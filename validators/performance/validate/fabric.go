package validate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/validators/cluster"
)

// checkCluster runs check cluster's checks (package cluster) on the GPU
// pool: each node's GPU-NIC topology on its own and against the recipe's
// mapping, the mapped Networks, the installer each node runs against the
// pin, the deployed runtime's daemon against the installer's pair, and the
// GKE floor. A benchmark on a pool they fail would measure a pool that loses
// the fabric (a gVNIC in a GPU NIC's slot still passes every pod-level
// check), so validate refuses it; warnings (a node without GKE's NIC
// annotations) are printed, not refused. The nodes are checkPool's, of the
// recipe's machine type; for gIB, check cluster also holds the deployed
// torch-distributed-rdma-<machine type> to what the mapping renders (as
// check cluster --fabric gib --recipe does). Nothing is judged on a pool
// the machine-type gate refused (checkPool says why).
func (v *validation) checkCluster(ctx context.Context, cl *Clients) error {
	if v.gateFailed {
		v.section("cluster fabric (tcpxogen check cluster): not checked", "  the GPU nodes are not a pool of the recipe's fabric and machine type (see GPU pool)")
		return nil
	}
	cc := &cluster.Clients{Kube: cl.Kube, Dynamic: cl.Dynamic, Guard: cl.Guard, Host: cl.Host}
	want := cluster.ExpectFor(v.in, v.fab)
	want.Mapping, want.RecipeMachine = v.rec.Interfaces(), v.rec.MachineType()
	findings, _, err := cluster.RunCheck(ctx, cc, v.fab, v.poolSelector().String(), names.ComponentsNamespace, want)
	if errors.Is(err, cluster.ErrPool) {
		// The machine type decides the fabric before anything is judged
		// (or created): a pool of another fabric is a refusal, not a read
		// error.
		v.section("cluster fabric (tcpxogen check cluster): FAILED", "  "+indent(err.Error(), "  "))
		v.refuse("cluster fabric", "%s", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the GPU nodes' fabric on %s (as tcpxogen check cluster does): %w", cl.Host, err)
	}
	var fails, warns []string
	for _, f := range findings {
		switch f.Level {
		case cluster.Fail:
			fails = append(fails, f.String())
		case cluster.Warn:
			warns = append(warns, f.String())
		}
	}
	title := "cluster fabric (tcpxogen check cluster): ok"
	if len(fails) > 0 {
		title = "cluster fabric (tcpxogen check cluster): FAILED"
	}
	s := v.section(title, fmt.Sprintf("  %d checks: %d failed, %d warnings", len(findings), len(fails), len(warns)))
	for _, l := range append(fails, warns...) {
		s.lines = append(s.lines, "    "+l)
	}
	if len(fails) > 0 {
		v.refuse("cluster fabric", "the GPU pool fails %d of check cluster's checks, so a benchmark there would not be evidence about the fabric the runtime expects; fix each (tcpxogen check cluster --recipe FILE -v lists them):\n    %s",
			len(fails), strings.Join(fails, "\n    "))
	}
	return nil
}
