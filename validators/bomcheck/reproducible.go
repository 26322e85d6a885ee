package bomcheck

import (
	"bytes"
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

func checkReproducible(ctx context.Context, t *Tree) Result {
	files := []string{generated.FactsFile, runtimes.GoldenRuntime, runtimes.GoldenComponents}
	if r := need(files, t.BOMErr, t.GeneratedErr, t.ReleasesErr, t.OverridesErr); r != nil {
		return *r
	}
	if t.Options.Reproduce == nil {
		return fail(files, "run bom-check through tcpxogen check, which re-runs the pipeline", "cannot run: this bom-check was given no way to re-run the pipeline")
	}
	source, rendered, requests, err := t.Options.Reproduce(ctx, t.Root, t.BOM, t.Generated, t.Releases, t.Overrides, t.Options.CacheDir, t.Options.Transport)
	if err != nil {
		return fail(files, regenerate, "%v", err)
	}
	if !bytes.Equal(rendered[generated.FactsFile], t.GeneratedRaw) {
		return fail([]string{generated.FactsFile}, "never edit generated code: "+regenerate, "%s differs from a fresh extraction of %s (hand-edited or stale)", generated.FactsFile, source)
	}
	var stale []string
	for _, rel := range slices.Sorted(maps.Keys(rendered)) {
		if rel == generated.FactsFile {
			continue
		}
		current, err := readSource(filepath.Join(t.Root, filepath.FromSlash(rel)))
		if err != nil || !bytes.Equal(current, rendered[rel]) {
			stale = append(stale, rel)
		}
	}
	if len(stale) > 0 {
		return fail(stale, "never edit goldens: "+regenerate+" (review the diff first)", "%s differ from a fresh render", strings.Join(stale, ", "))
	}
	return pass("%s and %d goldens and generated pages reproduce byte for byte from %s (%d network requests)", generated.FactsFile, len(rendered)-1, source, requests)
}
