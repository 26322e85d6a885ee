package rendercmd

import (
	"context"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/admission"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// renderPolicy prints the admission policies and their bindings.
func renderPolicy(_ context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("render policy", "render policy [--fabric tcpxo|gib] [--enforce] [--runtime NAME]... [--exempt NAME]... [--profile default|simple] [-o yaml|json]\n\n"+
		"Each fabric's policies have their own names (tcpxo-fabric-contract, gib-fabric-contract, ...): apply both sets on a cluster with both fabrics.", s)
	fabricName := fabricFlag(fs)
	root := fs.String("root", "", "repository root whose bom/ to read (default: the checkout around the working directory, else the inputs built into tcpxogen)")
	enforce := fs.Bool("enforce", false, "bind the contract (what loses the fabric or launches wrong) with Deny; the advisory stays Warn, Audit")
	rts := fs.StringArray("runtime", nil, "a runtime carrying the fabric's wiring, judged by the contract and exempt from the capability advisory (repeatable; default the fabric's shipped runtimes: "+names.Runtime+" for tcpxo, "+strings.Join(fabric.GIB.ShippedRuntimes(), " and ")+" for gib)")
	exempt := fs.StringArray("exempt", nil, "another runtime whose multi-node TrainJobs get no capability advisory (repeatable)")
	profile := fs.String("profile", runtimes.ProfileDefault, "the NCCL profile the runtime was rendered with: default or simple")
	format := fs.StringP("output", "o", "yaml", "output format: yaml or json")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	f, err := fabric.Lookup(*fabricName)
	if err != nil {
		return cli.BadInput("--fabric: %w", err)
	}
	in, err := inputs(*root)
	if err != nil {
		return err
	}
	if f.Name == fabric.GIB.Name {
		if fs.Changed("profile") {
			return cli.BadInput("--profile is TCPXO's (the installer's default and simple profiles); the gIB env is the machine type's: drop --profile")
		}
		// The policy reads the node container's env and GPUs; every gIB
		// machine type's differs only in the tuner config, which the rule
		// set judges alike, so the first machine type's runtime stands in.
		rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: runtimes.ExampleRDMAInterfaces(), MachineType: f.MachineTypes[0].Name})
		if err != nil {
			return cli.BadInput("%w", err)
		}
		set, err := admission.Generate(rt, in.GIB, admission.Options{Enforce: *enforce, Fabric: f, Runtimes: *rts, Exempt: *exempt})
		if err != nil {
			return cli.BadInput("%w", err)
		}
		return write(s, runtimes.Format(*format), nil, set.Objects()...)
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
