// Command compat runs the trainer compatibility matrix of package realize
// against the Kubeflow Trainer version it was built with and writes the rows
// as JSON. docs/trainer-compat.md is assembled from one such file per
// trainer version. Because every trainer version shares one module path,
// each version needs its own build:
//
//	go run ./validators/realize/cmd/compat --out compat-v2.2.0.json
//	go run -modfile=validators/realize/trainer-v2.3.0.mod ./validators/realize/cmd/compat --out compat-v2.3.0.json
//
// A case whose realized behaviour contradicts what is recorded for the
// version fails the command and nothing is written, so a report never
// publishes an unreviewed behaviour; --allow-unexpected writes it anyway
// (the rows then carry an "unexpected" list) for investigation.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/tcpxogen/tcpxogen/validators/realize"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := pflag.NewFlagSet("compat", pflag.ContinueOnError)
	out := fs.String("out", "", "file to write the JSON report to (required)")
	allowUnexpected := fs.Bool("allow-unexpected", false, "write the report even when cases contradict the behaviour recorded for this trainer version")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("--out is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rows, err := realize.Matrix(ctx)
	if err != nil {
		return fmt.Errorf("running the matrix: %w", err)
	}
	var unexpected int
	for _, r := range rows {
		for _, u := range r.Unexpected {
			fmt.Fprintf(os.Stderr, "compat: %s on trainer %s: %s\n", r.Case, r.TrainerVersion, u)
			unexpected++
		}
	}
	if unexpected > 0 && !*allowUnexpected {
		return fmt.Errorf("%d expectation failures on trainer %s; nothing written (see --allow-unexpected)", unexpected, realize.TrainerVersion())
	}
	raw, err := realize.MarshalReport(rows)
	if err != nil {
		return err
	}
	if err := writeAtomic(*out, raw); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "compat: wrote %d rows for trainer %s to %s\n", len(rows), realize.TrainerVersion(), *out)
	if unexpected > 0 {
		return fmt.Errorf("%d expectation failures on trainer %s (written because of --allow-unexpected)", unexpected, realize.TrainerVersion())
	}
	return nil
}

// writeAtomic writes through a temporary file in the target directory and
// renames it into place, so a reader never sees half a report.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
