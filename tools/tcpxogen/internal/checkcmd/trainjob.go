package checkcmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/linkedtrainer"
	"github.com/tcpxogen/tcpxogen/validators/lint"
)

// lintTrainJob is `check trainjob [--trainer V|all] FILE`: exit 1 when any
// document loses the fabric or launches wrong on a selected trainer version,
// or the binary that links one is not installed; exit 2 when the file is not
// TrainJobs of the shipped runtime or the version is not supported.
func lintTrainJob(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("check trainjob", "check trainjob [--trainer VERSION|all] FILE", s)
	version := fs.String("trainer", "", fmt.Sprintf("the trainer version to realize on: %s, or %s (default: the one bom/bom.yaml pins); each is realized by the binary that links it, this one or tcpxogen%sVERSION next to it",
		strings.Join(linkedtrainer.Versions(), ", "), lint.AllTrainers, linkedtrainer.SiblingSuffix))
	if err := cli.ParseArgs(fs, args, 1, "one TrainJob file: tcpxogen check trainjob FILE"); err != nil {
		return err
	}
	versions, err := lint.SelectTrainers(*version)
	if err != nil {
		return err
	}
	name := fs.Arg(0)
	data, err := inputfile.Read(name, inputfile.Spec{What: "TrainJob file", Max: inputfile.MaxTrainJob})
	if err != nil {
		return cli.BadInput("%w", err)
	}
	return lint.Trainers(ctx, s.Out, s.Err, versions, name, data)
}
