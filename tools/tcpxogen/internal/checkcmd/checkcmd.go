// Package checkcmd implements `tcpxogen check`: the coupling check behind
// `make bom-check`, and with --release the gate behind `make release-check`.
package checkcmd

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/pipeline"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/bomcheck"
)

// Commands returns the check command set.
// subcommands are the `check X` commands other packages own (check cluster),
// which main hands over.
func Commands(subcommands cli.Commands) cli.Commands {
	run := func(ctx context.Context, args []string, s cli.Streams) error {
		if len(args) > 0 {
			if sub, ok := subcommands[args[0]]; ok {
				return sub.Run(ctx, args[1:], s)
			}
		}
		return check(ctx, args, s)
	}
	return cli.Commands{"check": {Summary: "coupling check (make bom-check); --release adds the release gate (make release-check); `check trainjob [-v] FILE...` lints every TrainJob in the files: wiring and launch; `check cluster` checks the GPU pool's NIC topology, installer and GKE version, and lists the TrainJobs still on other wiring than the deployed runtime", Run: run}}
}

// errFailed carries the exit status of a check that ran and found problems;
// the report itself was already printed.
var errFailed = errors.New("checks failed")

func check(ctx context.Context, args []string, s cli.Streams) error {
	if len(args) > 0 && args[0] == "trainjob" {
		return lintTrainJob(ctx, args[1:], s)
	}
	fs := cli.NewFlags("check", "check [--root DIR] [--release]  |  check trainjob [-v] FILE...  |  check cluster [--recipe FILE] [--kubeconfig F]", s)
	root := fs.String("root", "", "repository root (default: found upwards from the working directory)")
	release := fs.Bool("release", false, "also require provenance from the pinned image and every pinned digest to resolve in its registry")
	cacheDir := fs.String("cache-dir", cli.DefaultCacheDir(), "blob cache re-extraction may read (the check never uses the network for it)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	r, err := bom.ResolveRoot(*root)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	opts := bomcheck.Options{CacheDir: *cacheDir, Reproduce: pipeline.Reproduce}
	var rep bomcheck.Report
	name := "bom-check"
	if *release {
		name = "release-check"
		rep = bomcheck.RunRelease(ctx, r, bomcheck.ReleaseOptions{Options: opts})
	} else {
		rep = bomcheck.Run(ctx, r, opts)
	}
	rep.Write(s.Out, name)
	if err := dataFilesLoad(r); err != nil {
		// The checks that could run are reported above; a data file that
		// does not parse is the user's input to fix, as extract says (exit 2).
		return cli.BadInput("%w", err)
	}
	if rep.Failed() {
		return errFailed
	}
	return nil
}

// dataFilesLoad loads the three data files every check reads, reporting the
// first problem of each that does not.
func dataFilesLoad(root string) error {
	at := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	_, berr := bom.Load(at(bom.RepoPath))
	_, rerr := bom.LoadReleases(at(bom.ReleasesRepoPath))
	_, oerr := bom.LoadOverrides(at(bom.OverridesRepoPath))
	return errors.Join(berr, rerr, oerr)
}
