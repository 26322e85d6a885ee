// Command tcpxogen pins Google's GPUDirect-TCPXO NCCL plugin installer into
// Go constants and Kubernetes manifests, and checks that they stay coupled.
//
// Usage:
//
//	tcpxogen extract [--bom FILE] [--source registry|testdata|oci-layout:DIR|REGISTRY/REPO@sha256:DIGEST] [--out DIR]
//	tcpxogen render runtime (--interfaces eth1=NET,...,eth8=NET | --values FILE) [flags]
//	tcpxogen render components
//	tcpxogen bump --installer TAG [--source registry|testdata|oci-layout:DIR] [--dry-run] [--summary FILE]
//	tcpxogen review [--base REV]
//	tcpxogen discover [--kubeconfig F] [--context C] [--node-selector SEL] [-o interfaces|values|yaml]
//
// Run `tcpxogen help` for every subcommand.
package main

import (
	"context"
	"maps"
	"os"

	"github.com/tcpxogen/tcpxogen/internal/interrupt"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/bumpcmd"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/checkcmd"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/clustercmd"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/democmd"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/extractcmd"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/ncclreportcmd"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/rendercmd"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/sbomcmd"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/validatecmd"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/verifycmd"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/versioncmd"
)

// commands is every subcommand, as main runs them (and the tests drive
// them).
func commands() cli.Commands {
	cmds := extractcmd.Commands()
	maps.Copy(cmds, rendercmd.Commands())
	maps.Copy(cmds, checkcmd.Commands(clustercmd.CheckCommands()))
	maps.Copy(cmds, sbomcmd.Commands())
	maps.Copy(cmds, ncclreportcmd.Commands())
	maps.Copy(cmds, democmd.Commands())
	maps.Copy(cmds, validatecmd.Commands())
	maps.Copy(cmds, verifycmd.Commands())
	maps.Copy(cmds, bumpcmd.Commands())
	maps.Copy(cmds, clustercmd.Commands())
	maps.Copy(cmds, versioncmd.Commands())
	return cmds
}

func main() {
	cmds := commands()
	// SIGINT and SIGTERM cancel the command (its cleanup runs); a second
	// signal exits at once, printing what it leaves on a cluster.
	ctx, stop := interrupt.Notify(context.Background(), os.Stderr, os.Exit)
	code := cli.Main(ctx, os.Args[1:], cli.Streams{Out: os.Stdout, Err: os.Stderr}, cmds)
	stop()
	os.Exit(code)
}
