package bomcheck

import (
	"context"
	"fmt"
	"regexp"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
)

func checkGeneratedMatchesBOM(_ context.Context, t *Tree) Result {
	files := []string{generated.FactsFile, bom.RepoPath}
	if r := need(files, t.BOMErr, t.GeneratedErr); r != nil {
		return *r
	}
	g, inst := t.Generated, t.BOM.Images.Installer
	pairs := []struct{ what, generated, bomValue string }{
		{"pinned installer reference", g.Provenance.Pinned, inst.Reference},
		{"installer image", g.InstallerImage, inst.Reference},
		{"plugin version", g.PluginVersion, inst.Version},
		{"daemon image", g.DaemonImage, t.BOM.Images.Daemon.Reference},
	}
	for _, p := range pairs {
		if p.generated != p.bomValue {
			return fail(files, regenerate+" (the BOM changed but the generated code did not follow)",
				"%s: %s has %q, %s has %q", p.what, generated.FactsFile, p.generated, bom.RepoPath, p.bomValue)
		}
	}
	return pass("installer %s, daemon %s", inst.Version, t.BOM.Images.Daemon.Version)
}

func checkPublishedPair(_ context.Context, t *Tree) Result {
	files := []string{bom.RepoPath, bom.ReleasesRepoPath}
	if r := need(files, t.BOMErr, t.ReleasesErr); r != nil {
		return *r
	}
	if err := bom.CheckPublished(t.BOM, t.Releases); err != nil {
		return fail(files, "pin the daemon the release notes publish with the installer (upgrade the installer first)", "%v", err)
	}
	p, _ := t.Releases.PairFor(t.BOM.Images.Installer.Version)
	return pass("installer %s ↔ daemon %s, published %s", p.Installer, p.Daemon, p.Date)
}

var requireLine = regexp.MustCompile(`(?m)^\s*(?:require\s+)?(\S+)\s+(v\S+)`)

func checkTrainerVersion(_ context.Context, t *Tree) Result {
	files := []string{bom.RepoPath, "go.mod"}
	if r := need(files, t.BOMErr, t.GoModErr); r != nil {
		return *r
	}
	tr := t.BOM.Trainer
	linked := ""
	for _, m := range requireLine.FindAllSubmatch(t.GoMod, -1) {
		if string(m[1]) == tr.Module {
			linked = string(m[2])
		}
	}
	switch {
	case linked == "":
		return fail(files, "add `require "+tr.Module+" "+tr.Version+"` to go.mod", "go.mod does not require %s", tr.Module)
	case linked != tr.Version:
		return fail(files, fmt.Sprintf("make them agree: go get %s@%s, or set trainer.version to %s", tr.Module, tr.Version, linked),
			"%s says trainer %s, go.mod requires %s %s: the proofs would validate against CRDs and a framework that do not ship", bom.RepoPath, tr.Version, tr.Module, linked)
	}
	return pass("%s %s in both", tr.Module, tr.Version)
}
