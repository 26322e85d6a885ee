package rendercmd

import (
	"context"

	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/admission"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// renderPolicy prints the admission policies and their bindings.
func renderPolicy(_ context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("render policy", "render policy [--enforce] [--runtime NAME]... [--exempt NAME]... [--profile default|simple] [-o yaml|json]", s)
	root := fs.String("root", "", "repository root whose bom/ to read (default: the checkout around the working directory, else the inputs built into tcpxogen)")
	enforce := fs.Bool("enforce", false, "bind the contract (what loses the fabric or launches wrong) with Deny; the advisory stays Warn, Audit")
	rts := fs.StringArray("runtime", nil, "a runtime carrying the TCPXO wiring, judged by the contract and exempt from the capability advisory (repeatable; default "+names.Runtime+")")
	exempt := fs.StringArray("exempt", nil, "another runtime whose multi-node TrainJobs get no capability advisory (repeatable)")
	profile := fs.String("profile", runtimes.ProfileDefault, "the NCCL profile the runtime was rendered with: default or simple")
	format := fs.StringP("output", "o", "yaml", "output format: yaml or json")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	in, err := inputs(*root)
	if err != nil {
		return err
	}
	// The policies read only the node container's env and GPUs, which the
	// interface mapping does not change: the example mapping stands in.
	rt, err := runtimes.TorchRuntime(in, runtimes.Options{Interfaces: runtimes.ExampleInterfaces(), Profile: *profile})
	if err != nil {
		return cli.BadInput("%w", err)
	}
	set, err := admission.Generate(rt, in.Facts, admission.Options{Enforce: *enforce, Runtimes: *rts, Exempt: *exempt})
	if err != nil {
		return cli.BadInput("%w", err)
	}
	return write(s, runtimes.Format(*format), nil, set.Objects()...)
}
