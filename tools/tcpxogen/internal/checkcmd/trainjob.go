package checkcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/linkedtrainer"
	"github.com/tcpxogen/tcpxogen/validators/lint"
)

// lintTrainJob is `check trainjob [--trainer V|all] [-v] FILE...`: every
// file is judged in one process per trainer version (the schema and
// realization machinery is built once); exit 2 when any file is not
// TrainJobs of the shipped runtime or the version is not supported, else 1
// when any document loses the fabric or launches wrong on a selected
// trainer version, or the binary that links one is not installed.
func lintTrainJob(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("check trainjob", "check trainjob [--trainer VERSION|all] [-v] FILE...", s)
	version := fs.String("trainer", "", fmt.Sprintf("the trainer version to realize on: %s, or %s (default: the one bom/bom.yaml pins); each is realized by the binary that links it, this one or tcpxogen%sVERSION next to it",
		strings.Join(linkedtrainer.Versions(), ", "), lint.AllTrainers, linkedtrainer.SiblingSuffix))
	verbose := fs.BoolP("verbose", "v", false, "print every wiring element and launch note, not only what needs acting on")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return cli.BadInput("%w", err)
	}
	if fs.NArg() == 0 {
		return cli.BadInput("no TrainJob file given: tcpxogen check trainjob [--trainer VERSION|all] [-v] FILE...")
	}
	versions, err := lint.SelectTrainers(*version)
	if err != nil {
		return err
	}
	var bad, failed []error
	// Over many files every line names its file and each trainer version's
	// realization is named once.
	opts := lint.Options{Verbose: *verbose, FileLabel: fs.NArg() > 1, Announced: map[string]bool{}}
	for _, name := range fs.Args() {
		data, err := inputfile.Read(name, inputfile.Spec{What: "TrainJob file", Max: inputfile.MaxTrainJob})
		if err == nil {
			err = lint.Trainers(ctx, s.Out, s.Err, versions, name, data, opts)
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
