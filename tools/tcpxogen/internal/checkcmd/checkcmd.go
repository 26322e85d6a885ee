// Package checkcmd implements `tcpxogen check`: the coupling check behind
// `make bom-check`, and with --release the gate behind `make release-check`.
package checkcmd

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/coupling"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/cli"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/clustercmd"
)

// Commands returns the check command set.
func Commands() cli.Commands {
	return cli.Commands{"check": {Summary: "coupling check (make bom-check); --release adds the release gate (make release-check); `check trainjob [-v] FILE...` lints every TrainJob in the files: wiring and launch; `check cluster` checks the GPU pool's NIC topology, installer and GKE version", Run: run}}
}

// errFailed carries the exit status of a check that ran and found problems;
// the report itself was already printed.
var errFailed = errors.New("checks failed")

func run(ctx context.Context, args []string, s cli.Streams) error {
	if len(args) > 0 && args[0] == "trainjob" {
		return lintTrainJob(ctx, args[1:], s)
	}
	if len(args) > 0 && args[0] == "cluster" {
		return clustercmd.CheckCluster(ctx, args[1:], s)
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
	opts := coupling.Options{CacheDir: *cacheDir}
	var rep coupling.Report
	name := "bom-check"
	if *release {
		name = "release-check"
		rep = coupling.RunRelease(ctx, r, coupling.ReleaseOptions{Options: opts})
	} else {
		rep = coupling.Run(ctx, r, opts)
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
