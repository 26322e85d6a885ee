package checkcmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/lint"
)

// lintTrainJob is `check trainjob [-v] FILE...`: every file is judged, in
// one process (the schema and realization machinery is built once); exit 2
// when any file is not TrainJobs of the shipped runtime, else 1 when any
// document loses the fabric or launches wrong on any trainer version the
// lint knows.
func lintTrainJob(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("check trainjob", "check trainjob [-v] FILE...", s)
	verbose := fs.BoolP("verbose", "v", false, "print every wiring element and launch note, not only what needs acting on")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return cli.BadInput("%w", err)
	}
	if fs.NArg() == 0 {
		return cli.BadInput("no TrainJob file given: tcpxogen check trainjob [-v] FILE...")
	}
	var bad, failed []error
	for _, name := range fs.Args() {
		data, err := inputfile.Read(name, inputfile.Spec{What: "TrainJob file", Max: inputfile.MaxTrainJob})
		if err == nil {
			err = lint.FileWith(ctx, s.Out, name, data, lint.Options{Verbose: *verbose})
		} else {
			err = cli.BadInput("%w", err)
		}
		switch {
		case err == nil:
		case fs.NArg() == 1:
			return err
		case cli.IsBadInput(err):
			bad = append(bad, err)
		default:
			failed = append(failed, err)
		}
	}
	if len(bad) > 0 {
		return cli.BadInput("%w", errors.Join(append(bad, failed...)...))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d TrainJob files fail: %w", len(failed), fs.NArg(), errors.Join(failed...))
	}
	return nil
}
