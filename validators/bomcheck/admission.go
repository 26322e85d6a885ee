package bomcheck

import (
	"bytes"
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/admission"
)

// checkAdmissionPolicy holds the committed admission policies to what the
// tree's rule set generates: the committed guest config facts and the
// shipped env, so a changed guest config with a stale policy fails here by
// name, apart from the byte-for-byte reproduction of every golden.
func checkAdmissionPolicy(_ context.Context, t *Tree) Result {
	files := []string{admission.GoldenPath, admission.GoldenEnforcePath, admission.GoldenGIBPath, admission.GoldenGIBEnforcePath,
		generated.FactsFile, generated.GIBFactsFile, bom.OverridesRepoPath}
	if r := need(files, t.BOMErr, t.GeneratedErr, t.GIBErr, t.ReleasesErr, t.OverridesErr); r != nil {
		return *r
	}
	in := &runtimes.Inputs{Facts: *t.Generated, GIB: *t.GIB, BOM: t.BOM, Releases: t.Releases, Overrides: t.Overrides}
	want, err := admission.Goldens(in)
	if err != nil {
		return fail(files, regenerate, "generate the admission policies: %v", err)
	}
	var stale []string
	for _, rel := range slices.Sorted(maps.Keys(want)) {
		got, err := readSource(filepath.Join(t.Root, filepath.FromSlash(rel)))
		if err != nil || !bytes.Equal(got, want[rel]) {
			stale = append(stale, rel)
		}
	}
	if len(stale) > 0 {
		return fail(stale, regenerate+" (the policies are generated from the rule set; never edit them)",
			"%s %s not what the current rule sets (the guest configs of %s and %s and the shipped env) generate", strings.Join(stale, " and "), map[bool]string{true: "is", false: "are"}[len(stale) == 1], generated.FactsFile, generated.GIBFactsFile)
	}
	return pass("%s are the rule sets'", strings.Join(slices.Sorted(maps.Keys(want)), ", "))
}
