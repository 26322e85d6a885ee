// Package validatecmd is `tcpxogen validate`: the flags and exit codes of
// the performance validator, which is package validate.
//
// Exit status: 0 the plan is sound (dry run) or the benchmark passed; 1 the
// plan was refused, or the benchmark ran and failed; 2 bad input (the recipe,
// a flag, the trainer manifests, the kubeconfig).
package validatecmd

import (
	"context"
	"errors"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/performance/validate"
)

// Commands returns the validate command.
func Commands() cli.Commands { return commands(validate.Connect) }

func commands(connect validate.ConnectFunc) cli.Commands {
	return cli.Commands{"validate": {
		Summary: "validate NCCL bus bandwidth on a live cluster as a recipe declares it (--dry-run prints the plan only)",
		Run: func(ctx context.Context, args []string, s cli.Streams) error {
			fs := cli.NewFlags("validate", "validate --recipe FILE [--benchmark-image REF] [--kubeconfig F] [--context C] [--namespace NS] [--nodes N] [--trainer-manifests FILE] [--timeout D] [--out DIR] [--sign-key FILE [--allow-mutable-tags]] [--dry-run]\n"+
				"       validate --fabric gib --recipe FILE [same flags]\n\n"+
				"--fabric gib (a recipe with fabric: gib) validates the recipe's A3 Ultra or A4 pool the same way: the pool of its machine type, check cluster's gIB checks, the deployed torch-distributed-rdma-<machine type> against the recipe's render, the benchmark derived from it on the collective its floor names (from the pinned diagnostic image), judged by gIB's rules; --dry-run also prints the derived benchmark and TrainJob.\n\nRBAC: "+validate.RBACHint+"; SIGINT or SIGTERM stops the run and deletes what it created, a second signal exits at once and prints what is left and how to remove it", s)
			var o validate.Options
			o.AddFlags(fs)
			if err := cli.Parse(fs, args); err != nil {
				return err
			}
			err := validate.Run(ctx, o, connect, s.Out, s.Err)
			if ie := (*validate.InputError)(nil); errors.As(err, &ie) {
				return cli.BadInput("%w", err)
			}
			return err
		},
	}}
}
