// Package bumpcmd implements `tcpxogen bump` (pin a published
// installer/daemon pair and regenerate everything downstream, internal/bump)
// and `tcpxogen review` (the same summary between a git revision and the
// working tree, internal/review). Both print the one Markdown summary of
// internal/releasediff.
package bumpcmd

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/pipeline/bump"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
	"github.com/tcpxogen/tcpxogen/pipeline/releasediff"
	"github.com/tcpxogen/tcpxogen/pipeline/review"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// Commands returns bump and review.
func Commands() cli.Commands {
	return cli.Commands{
		"bump":   {Summary: "pin a published installer/daemon pair by digest, regenerate constants, goldens and docs, run bom-check and print the pull request's summary", Run: runBump},
		"review": {Summary: "the bump summary between the goldens and generated facts at a git revision (default HEAD) and the working tree; needs git", Run: runReview},
	}
}

func runBump(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("bump", "bump [--fabric tcpxo|gib] --installer TAG [--source registry|testdata|oci-layout:DIR] [--daemon-source …] [--rollback] [--dry-run] [--summary FILE]\n\n"+
		"--fabric gib pins a release of Google's NCCL/gIB release notes (bom/releases.yaml gibReleases): its installer and diagnostic\n"+
		"image by digest, re-extracting generated/gib; TCPXO's pins and facts stay as they are.\n\n"+
		"Pins TAG and the daemon bom/releases.yaml publishes with it (a release-notes pair only) in bom/bom.yaml, by the digests the\n"+
		"source resolves (never by tag alone), re-extracts the facts, regenerates generated/tcpxo, the goldens and the generated docs,\n"+
		"runs bom-check and prints a Markdown summary for the pull request. --source testdata rehearses offline on the bundled\n"+
		"reconstruction (recorded as a SUBSTITUTE). Exit 0: complete; 1: decisions to record (listed; the tree stays changed) or\n"+
		"bom-check failed; 2: bad input (unknown tag, unpublished pair, an older pair without --rollback, unresolvable digest,\n"+
		"unwritable tree: nothing written).", s)
	root := fs.String("root", "", "repository root (default: found upwards from the working directory)")
	fabricName := fs.String("fabric", fabric.Default, "the fabric whose installer to pin: "+strings.Join(fabric.Names(), " or "))
	installer := fs.String("installer", "", "installer tag to pin, one of bom/releases.yaml's release-notes pairs (required)")
	source := fs.String("source", extract.SourceRegistry, "where both digests are resolved and the images read: registry (the published repositories of bom/bom.yaml), testdata (the bundled reconstructions, a SUBSTITUTE) or oci-layout:DIR (the installer pulled into DIR)")
	daemonSource := fs.String("daemon-source", "", "where the daemon's digest is resolved, same forms (default: testdata with --source testdata, else registry)")
	rollback := fs.Bool("rollback", false, "allow a pair older than the pinned one (a deliberate roll back; without it an older tag is refused)")
	dryRun := fs.Bool("dry-run", false, "print the summary and write nothing (bom-check is not run: it judges the written tree)")
	summary := fs.String("summary", "", "also write the summary to FILE (not with --dry-run)")
	cacheDir := fs.String("cache-dir", cli.DefaultCacheDir(), "content-addressed blob cache (verified on read); bom-check re-extracts a registry bump from it")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *installer == "" {
		return cli.BadInput("--installer is required: name the installer tag to pin, e.g. --installer v1.0.17 (bom/releases.yaml lists the published pairs)")
	}
	if *dryRun && *summary != "" {
		return cli.BadInput("--dry-run writes nothing, --summary FILE writes a file: drop one (the summary is printed either way)")
	}
	r, err := bom.ResolveRoot(*root)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	if _, err := fabric.Lookup(*fabricName); err != nil {
		return cli.BadInput("--fabric: %w", err)
	}
	cfg := bump.Config{Root: r, Fabric: *fabricName, Installer: *installer, DryRun: *dryRun, Rollback: *rollback, CacheDir: *cacheDir}
	if cfg.Source, err = extract.ParseSource(*source); err != nil {
		return cli.BadInput("%w", err)
	}
	if *daemonSource != "" {
		if cfg.DaemonSource, err = extract.ParseSource(*daemonSource); err != nil {
			return cli.BadInput("--daemon-source: %w", err)
		}
	}
	summaryPath := ""
	if *summary != "" {
		if summaryPath, err = filepath.Abs(*summary); err != nil {
			return cli.BadInput("--summary: %w", err)
		}
		// Refused before the bump, so a bad --summary leaves the tree as it was.
		if _, err := atomicfile.Target(summaryPath); err != nil {
			return cli.BadInput("--summary: %w", err)
		}
	}
	res, err := bump.Run(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprint(s.Out, res.Summary)
	if summaryPath != "" {
		if err := atomicfile.Write(summaryPath, []byte(res.Summary), 0o644); err != nil {
			return fmt.Errorf("--summary: %w (the bump itself is written)", err)
		}
	}
	return outcome(res.Missing, res.Check != nil && res.Check.Failed())
}

func runReview(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("review", "review [--base REV] [--root DIR]\n\n"+
		"Prints the bump summary between the reviewed inputs, generated facts and goldens committed at REV and the working tree,\n"+
		"for golden review in pull requests. It reads REV from git objects (git show REV:PATH): git must be on PATH, which no\n"+
		"other command needs. Exit 0: summary printed; 1: the working tree has decisions to record; 2: bad input.", s)
	root := fs.String("root", "", "repository root (default: found upwards from the working directory)")
	base := fs.String("base", "HEAD", "git revision to compare the working tree with")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	r, err := bom.ResolveRoot(*root)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	res, err := review.Run(ctx, r, *base)
	if err != nil {
		return err
	}
	fmt.Fprint(s.Out, res.Summary)
	return outcome(res.Missing, false)
}

// outcome is exit 1 when decisions are missing or bom-check failed; the
// summary printed above lists them.
func outcome(missing []releasediff.Decision, checkFailed bool) error {
	if len(missing) > 0 {
		names := make([]string, len(missing))
		for i, d := range missing {
			names[i] = d.Name
		}
		what := "decisions"
		if len(missing) == 1 {
			what = "decision"
		}
		return fmt.Errorf("%d %s to record in %s (%s): see the summary's \"Decisions to record\"", len(missing), what, bom.OverridesRepoPath, strings.Join(names, ", "))
	}
	if checkFailed {
		return fmt.Errorf("bom-check failed on the bumped tree: see the summary's bom-check section")
	}
	return nil
}
