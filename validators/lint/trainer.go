package lint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/validators/linkedtrainer"
)

// Which trainer realizes a TrainJob is chosen with --trainer: a binary
// links exactly one trainer version (they share a module path), so every
// verdict is realized by the binary that links its version, this one or a
// sibling next to it (linkedtrainer.Sibling). Nothing is extrapolated from
// another version's recorded matrix.

// AllTrainers selects every supported trainer version.
const AllTrainers = "all"

// dispatchedEnv marks a process started to realize one trainer version: a
// sibling that turns out to link another version fails instead of looking
// for a sibling of its own.
const dispatchedEnv = "TCPXOGEN_TRAINER_DISPATCHED"

// FileLabelEnv tells a sibling to name the file on every line (the run
// covers many files); quietEnv, that the run already named the version's
// realization, so the sibling does not repeat it per file.
const (
	FileLabelEnv = "TCPXOGEN_TRAINJOB_FILE_LABELS"
	quietEnv     = "TCPXOGEN_TRAINER_ANNOUNCED"
)

// PinnedTrainer is the trainer version the BOM pins, the default of
// --trainer.
func PinnedTrainer() (string, error) {
	b, _, _, err := bom.LoadEmbedded()
	if err != nil {
		return "", err
	}
	return b.Trainer.Version, nil
}

// SelectTrainers resolves a --trainer value: "" is the pinned version,
// "all" every supported one, anything else must be one of them.
func SelectTrainers(flag string) ([]string, error) {
	supported := linkedtrainer.Versions()
	switch flag {
	case "":
		v, err := PinnedTrainer()
		if err != nil {
			return nil, err
		}
		return []string{v}, nil
	case AllTrainers:
		return supported, nil
	}
	if !slices.Contains(supported, flag) {
		return nil, badInput("--trainer %s: not a supported trainer version; use one of %s, or %s", excerpt.Quote(flag), strings.Join(supported, ", "), AllTrainers)
	}
	return []string{flag}, nil
}

// Trainers judges the TrainJob file name (data is its content) on every
// trainer version of versions: the linked one in this process, each other
// by running its sibling binary, whose report goes to w and errw as it is
// written. It returns an *InputError when any run found bad input, else an
// error when any failed (a TrainJob that loses the fabric or launches
// wrong, or a sibling that is not installed).
func Trainers(ctx context.Context, w, errw io.Writer, versions []string, name string, data []byte, o Options) error {
	pinned, err := PinnedTrainer()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary, to find the ones that link other trainer versions: %w", err)
	}
	linked := linkedtrainer.Version()
	var failed, bad []error
	for _, v := range versions {
		var err error
		announced := o.Announced[v] || os.Getenv(quietEnv) != ""
		if v == linked {
			if !announced {
				fmt.Fprintf(w, "trainer %s: realized in-process by %s (it links %s %s)\n", v, self, linkedtrainer.Module, linked)
			}
			err = FileWith(ctx, w, name, data, o)
		} else {
			err = runSibling(ctx, w, errw, self, linked, v, pinned, name, o, announced)
		}
		if o.Announced != nil {
			o.Announced[v] = true
		}
		var ie *InputError
		switch {
		case err == nil:
		case errors.As(err, &ie):
			bad = append(bad, fmt.Errorf("trainer %s: %w", v, err))
		default:
			failed = append(failed, fmt.Errorf("trainer %s: %w", v, err))
		}
	}
	if len(bad) > 0 {
		return &InputError{errors.Join(append(bad, failed...)...)}
	}
	return errors.Join(failed...)
}

// runSibling realizes the file on trainer version by the binary that
// links it. Its exit status keeps the contract: 2 is bad input here too.
func runSibling(ctx context.Context, w, errw io.Writer, self, linked, version, pinned, name string, o Options, announced bool) error {
	if d := os.Getenv(dispatchedEnv); d != "" {
		return fmt.Errorf("%s was started to realize trainer %s but links %s: the binaries next to it are mismatched; rebuild them with `make build`", self, d, linked)
	}
	path, err := linkedtrainer.Sibling(self, linked, version, pinned)
	if err != nil {
		return err
	}
	args := []string{"check", "trainjob", "--trainer", version}
	if o.Verbose {
		args = append(args, "-v")
	}
	cmd := exec.CommandContext(ctx, path, append(args, "--", name)...)
	cmd.Stdout, cmd.Stderr = w, errw
	cmd.Env = append(os.Environ(), dispatchedEnv+"="+version)
	if announced {
		cmd.Env = append(cmd.Env, quietEnv+"=1")
	}
	if o.FileLabel {
		cmd.Env = append(cmd.Env, FileLabelEnv+"=1")
	}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.ExitCode() == 2:
		return &InputError{fmt.Errorf("%s (trainer %s) refused the input: see its report above", path, version)}
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return fmt.Errorf("%s (trainer %s) found failures: see its report above", path, version)
	}
	return fmt.Errorf("running %s for trainer %s: %w", path, version, err)
}
