package bump

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/imagefs"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
	"github.com/tcpxogen/tcpxogen/validators/bomcheck"
)

// runGIB is bump for the gIB fabric: pin a release of Google's NCCL/gIB
// release notes (installer and diagnostic image, one tag) by the digests
// the source resolves, and regenerate with the same pipeline run. The
// TCPXO facts are re-extracted from the source their committed file
// records, so a gIB bump never moves TCPXO's.
func runGIB(ctx context.Context, cfg Config) (*Result, error) {
	root := cfg.Root
	at := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	oldB, rel, err := bom.LoadAll(at(bom.RepoPath), at(bom.ReleasesRepoPath))
	if err != nil {
		return nil, &InputError{err}
	}
	ov, err := bom.LoadOverrides(at(bom.OverridesRepoPath))
	if err != nil {
		return nil, &InputError{err}
	}
	if cfg.DaemonSource.Kind != "" {
		return nil, bad("--daemon-source is TCPXO's (the tcpxo-daemon); the gIB fabric has no daemon: drop it")
	}
	oldRaw, err := inputfile.Read(at(generated.GIBFactsFile), inputfile.Spec{What: "generated file", Max: inputfile.MaxSource})
	if err != nil {
		return nil, bad("%s: %w (restore it with git checkout, or run go generate ./...)", generated.GIBFactsFile, err)
	}
	oldF, err := emit.ParseLiteral(generated.GIBFactsFile, oldRaw)
	if err != nil {
		return nil, bad("%w", err)
	}
	r, ok := rel.GIBReleaseFor(cfg.Installer)
	if !ok {
		var listed []string
		for _, g := range rel.GIBReleases {
			listed = append(listed, g.Installer)
		}
		return nil, bad("--installer %s is not a gIB release in %s: pick one of %s, or add the release notes' release to gibReleases there first",
			quote(cfg.Installer), bom.ReleasesRepoPath, strings.Join(listed, ", "))
	}
	if r.Source != bom.SourceReleaseNotes {
		return nil, bad("--installer %s: %s lists it from %s only: Google's NCCL/gIB release notes publish no digest for it; only a release-notes release may be pinned",
			cfg.Installer, bom.ReleasesRepoPath, r.Source)
	}
	cur, _, back := rel.GIBRollBack(oldB.Images.GIBInstaller.Version, cfg.Installer)
	if err := cfg.rollback(back, r.Date, oldB.Images.GIBInstaller.Version, cur.Date, "release"); err != nil {
		return nil, err
	}
	spec, _, err := sources(Config{Source: cfg.Source, DaemonSource: cfg.Source})
	if err != nil {
		return nil, err
	}
	bomPath, genPath := at(bom.RepoPath), at(generated.GIBFactsFile)
	if !cfg.DryRun {
		if err := writable(root, bomPath, genPath); err != nil {
			return nil, err
		}
	}
	inst, err := cfg.pin(ctx, spec, "--source", oldB.Images.GIBInstaller.Reference, r.Installer, extract.GIBTestdataDir, "gIB installer")
	if err != nil {
		return nil, err
	}
	diag, err := cfg.pin(ctx, spec, "--source", oldB.Images.GIBDiagnostic.Reference, r.Diagnostic, extract.GIBDiagnosticTestdataDir, "gIB diagnostic")
	if err != nil {
		return nil, err
	}
	// TCPXO is re-read from where its committed facts were read.
	tspec, tdspec, err := extract.ResolveSources("", "", at(generated.FactsFile))
	if err != nil {
		return nil, bad("%w (restore %s with git checkout)", err, generated.FactsFile)
	}
	newB, run, check, err := cfg.regenerate(ctx, rel, ov, []edit{
		{[]string{"images", bom.RoleGIBInstaller, "reference"}, inst.Reference},
		{[]string{"images", bom.RoleGIBInstaller, "version"}, inst.Version},
		{[]string{"images", bom.RoleGIBDiagnostic, "reference"}, diag.Reference},
		{[]string{"images", bom.RoleGIBDiagnostic, "version"}, diag.Version},
	}, extract.Config{Root: root, Source: tspec, DaemonSource: tdspec, GIBSource: spec, GIBDiagnosticSource: spec, CacheDir: cfg.CacheDir, Transport: cfg.Transport, Limits: imagefs.DefaultLimits()},
		"gIB "+r.Installer)
	if err != nil {
		return nil, err
	}
	out := &Result{Files: run.Paths, Check: check}
	title := cfg.Title
	if title == "" {
		title = "tcpxogen bump --fabric gib --installer " + cfg.Installer + " --source " + spec.Raw
		if cfg.Rollback {
			title += " --rollback"
		}
	}
	out.Summary = gibSummary(title, oldB, newB, oldF, &run.Inputs.GIB, out.Files, check, cfg.DryRun)
	return out, nil
}

// gibSummary is the pull request's summary of a gIB bump: the pins, the
// facts read from the images, the env each machine type ships, the files
// and bom-check.
func gibSummary(title string, oldB, newB *bom.BOM, was, now *facts.Facts, files []string, check *bomcheck.Report, dryRun bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", title)
	b.WriteString("| | was | now |\n|---|---|---|\n")
	row := func(what, a, c string) { fmt.Fprintf(&b, "| %s | `%s` | `%s` |\n", what, a, c) }
	row("installer", oldB.Images.GIBInstaller.Reference, newB.Images.GIBInstaller.Reference)
	row("diagnostic", oldB.Images.GIBDiagnostic.Reference, newB.Images.GIBDiagnostic.Reference)
	row("NCCL", was.NCCLVersion, now.NCCLVersion)
	row("read from", was.Provenance.Read, now.Provenance.Read)
	if now.Provenance.Substituted {
		b.WriteString("\n**SUBSTITUTE**: the facts were read from " + now.Provenance.Read + ", not the pinned image; release-check refuses them.\n")
	}
	b.WriteString("\n## The env each machine type ships (set_nccl_env.sh, read from the image)\n\n")
	for _, mt := range now.ProfileNames() {
		old, _ := was.Profile(mt)
		env, _ := now.Profile(mt)
		var changes []string
		for _, v := range env {
			switch i := slices.IndexFunc(old, func(o facts.EnvVar) bool { return o.Name == v.Name }); {
			case i < 0:
				changes = append(changes, fmt.Sprintf("added `%s=%s`", v.Name, v.Value))
			case old[i].Value != v.Value:
				changes = append(changes, fmt.Sprintf("changed `%s` `%s` → `%s`", v.Name, old[i].Value, v.Value))
			}
		}
		for _, o := range old {
			if !slices.ContainsFunc(env, func(v facts.EnvVar) bool { return v.Name == o.Name }) {
				changes = append(changes, fmt.Sprintf("removed `%s`", o.Name))
			}
		}
		if len(changes) == 0 {
			changes = []string{"unchanged"}
		}
		fmt.Fprintf(&b, "- %s (%d variables): %s\n", mt, len(env), strings.Join(changes, "; "))
	}
	b.WriteString("\n## Files\n\n")
	for _, f := range files {
		fmt.Fprintf(&b, "- `%s`\n", f)
	}
	if len(files) == 0 {
		b.WriteString("none\n")
	}
	b.WriteString("\n## bom-check\n\n")
	switch {
	case dryRun:
		b.WriteString("Not run: --dry-run writes nothing, and bom-check judges the written tree.\n")
	case check != nil:
		var out bytes.Buffer
		check.Write(&out, "bom-check")
		b.WriteString("```\n" + out.String() + "```\n")
	}
	return b.String()
}
