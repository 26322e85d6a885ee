// Command extractgen is `tcpxogen extract` for `go generate`: it links
// nothing compiled against generated/, so a missing or hand-broken
// generated file can always be regenerated (the full tcpxogen binary would
// fail to compile first).
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/cli"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/extractcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], cli.Streams{Out: os.Stdout, Err: os.Stderr}, extractcmd.Commands())
	stop()
	os.Exit(code)
}
