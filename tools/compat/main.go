// Command compat writes the two files package realize generates for the
// Kubeflow Trainer version it was built with: the compatibility matrix's
// report (--out, validators/realize/testdata/compat-<version>.json, from
// which docs/trainer-compat.md is rendered) and the CRD default schemas
// Realize embeds (--crd-defaults, validators/realize/crddefaults/<version>.json).
// Because every trainer version shares one module path, each version needs
// its own build; `go generate ./...` runs it once per version
// (generated/generate.go), as, from the checkout:
//
//	go run ./tools/compat --out validators/realize/testdata/compat-v2.2.0.json --crd-defaults validators/realize/crddefaults/v2.2.0.json
//	go run -modfile=validators/realize/trainer-v2.3.0.mod ./tools/compat --out validators/realize/testdata/compat-v2.3.0.json --crd-defaults validators/realize/crddefaults/v2.3.0.json
//
// The files are written together or not at all, each atomically, and a file
// whose content is unchanged is left untouched.
//
// The matrix realizes with the CRD defaults embedded when the command was
// built. When the defaults it renders differ from those, a report written
// in the same run would describe the old defaults, so only the defaults are
// written, the report is left as it was, and the command fails: run it (or
// go generate ./...) again, and the new build realizes with the new
// defaults.
//
// A case whose realized behaviour contradicts what is recorded for the
// version fails the command and nothing is written, so a report never
// publishes an unreviewed behaviour; --allow-unexpected writes it anyway
// (the rows then carry an "unexpected" list) for investigation.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/pflag"

	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
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
	out := fs.String("out", "", "file to write the JSON report to")
	crdDefaults := fs.String("crd-defaults", "", "file to write the linked trainer's CRD default schemas to (validators/realize/crddefaults/<version>.json)")
	allowUnexpected := fs.Bool("allow-unexpected", false, "write the report even when cases contradict the behaviour recorded for this trainer version")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" && *crdDefaults == "" {
		return errors.New("nothing to write: give --out, --crd-defaults or both")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	version := realize.TrainerVersion()
	files := atomicfile.Set{}

	if *crdDefaults != "" {
		fresh, err := realize.RenderCRDDefaults()
		if err != nil {
			return fmt.Errorf("rendering the CRD defaults: %w", err)
		}
		files[*crdDefaults] = fresh
		if embedded, ok := realize.EmbeddedCRDDefaults(); *out != "" && (!ok || !bytes.Equal(embedded, fresh)) {
			if err := commit(files); err != nil {
				return err
			}
			return fmt.Errorf("the trainer %s CRD defaults changed, and this build realizes with the ones it embeds: %s is left as it was; run again (go generate ./...) to write it with the new defaults", version, *out)
		}
	}

	var unexpected int
	if *out != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		rows, err := realize.Matrix(ctx)
		if err != nil {
			return fmt.Errorf("running the matrix: %w", err)
		}
		for _, r := range rows {
			for _, u := range r.Unexpected {
				fmt.Fprintf(os.Stderr, "compat: %s on trainer %s: %s\n", r.Case, r.TrainerVersion, u)
				unexpected++
			}
		}
		if unexpected > 0 && !*allowUnexpected {
			return fmt.Errorf("%d expectation failures on trainer %s; nothing written (see --allow-unexpected)", unexpected, version)
		}
		raw, err := realize.MarshalReport(rows)
		if err != nil {
			return err
		}
		files[*out] = raw
	}
	if err := commit(files); err != nil {
		return err
	}
	if unexpected > 0 {
		return fmt.Errorf("%d expectation failures on trainer %s (written because of --allow-unexpected)", unexpected, version)
	}
	return nil
}

// commit writes the files all or nothing and says, per file, whether it
// changed; go generate runs this on every regeneration, and most runs
// change nothing.
func commit(files atomicfile.Set) error {
	changed, err := files.Commit(0o644)
	if err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	for _, p := range changed {
		fmt.Fprintf(os.Stderr, "compat: wrote %s for trainer %s\n", p, realize.TrainerVersion())
	}
	return nil
}
