// Package versioncmd implements `tcpxogen version` (and `--version`): which
// build is running, the installer/daemon pair of each fabric it ships (its
// compiled-in facts, not a checkout's), and the trainer it links, so a
// report or a bug can name exactly what produced it.
package versioncmd

import (
	"context"
	"fmt"

	"github.com/tcpxogen/tcpxogen/internal/buildinfo"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/linkedtrainer"
)

// Commands returns the version command.
func Commands() cli.Commands {
	return cli.Commands{"version": {Summary: "the tool's version, the pinned installer/daemon pair of each fabric, the linked trainer (also --version)", Run: run}}
}

func run(_ context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("version", "version", s)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	f := shipped.Facts()
	v := buildinfo.Version()
	if v == buildinfo.Unknown {
		v += " (this build recorded no module version or VCS revision: build with make build, or go install …@VERSION)"
	}
	fmt.Fprintf(s.Out, "tcpxogen %s\n", v)
	fmt.Fprintf(s.Out, "fabric tcpxo: installer %s (%s), daemon %s (%s)", f.PluginVersion, f.Provenance.Pinned, f.DaemonVersion, f.DaemonProvenance.Pinned)
	if f.Provenance.Substituted || f.DaemonProvenance.Substituted {
		// Data read from a reconstruction or a mirror is not evidence about
		// the pinned image; say so wherever the pin is named.
		fmt.Fprintf(s.Out, "; facts read from a SUBSTITUTE (%s)", f.Provenance.Kind)
	}
	fmt.Fprintf(s.Out, "\ntrainer %s (linked)\n", linkedtrainer.Version())
	return nil
}
