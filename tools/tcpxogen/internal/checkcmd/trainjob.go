package checkcmd

import (
	"context"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/lint"
)

// lintTrainJob is `check trainjob FILE`: exit 1 when any document loses the
// fabric or launches wrong on any trainer version the lint knows; exit 2
// when the file is not TrainJobs of the shipped runtime.
func lintTrainJob(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("check trainjob", "check trainjob FILE", s)
	if err := cli.ParseArgs(fs, args, 1, "one TrainJob file: tcpxogen check trainjob FILE"); err != nil {
		return err
	}
	name := fs.Arg(0)
	data, err := inputfile.Read(name, inputfile.Spec{What: "TrainJob file", Max: inputfile.MaxTrainJob})
	if err != nil {
		return cli.BadInput("%w", err)
	}
	return lint.File(ctx, s.Out, name, data)
}
