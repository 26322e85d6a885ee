package bomcheck

import (
	"context"
	"strings"

	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/requirements"
)

// requirementsCheck holds the committed goldens to what the platform
// requires (runtimes/requirements), not to a fresh render of our own
// builders: a builder that drops a required element regenerates goldens
// that reproduce byte for byte, and only this rule still fails.
var requirementsCheck = Check{"goldens-meet-requirements", "the committed runtime, components and benchmark carry every required element, each from its published source, nothing unexplained, and names within the platform's bounds", checkRequirements}

// maxFindings bounds the message; the count says how many were left out.
const maxFindings = 8

func checkRequirements(_ context.Context, t *Tree) Result {
	files := append([]string{generated.FactsFile, generated.GIBFactsFile, "runtimes/requirements/table.go"}, requirements.Artefacts...)
	if r := need(files, t.BOMErr, t.GeneratedErr, t.GIBErr, t.ReleasesErr, t.OverridesErr); r != nil {
		return *r
	}
	rows, err := requirements.Table(&runtimes.Inputs{Facts: *t.Generated, GIB: *t.GIB, BOM: t.BOM, Releases: t.Releases, Overrides: t.Overrides})
	if err != nil {
		return fail(files, regenerate, "requirements table: %v", err)
	}
	var elems []requirements.Element
	var bounds []requirements.Finding
	for _, rel := range requirements.Artefacts {
		m := t.manifest(rel)
		if m == nil {
			return fail([]string{rel}, regenerate, "%s did not load (%v): the requirements it must carry cannot be checked", rel, t.ManifestErrs[rel])
		}
		objs := make([]map[string]any, len(m.Objects))
		for i, o := range m.Objects {
			objs[i] = o.Object
		}
		elems = append(elems, requirements.Elements(rel, objs...)...)
		bounds = append(bounds, requirements.NameBounds(rel, objs...)...)
	}
	findings := append(requirements.Check(rows, elems), bounds...)
	if len(findings) > 0 {
		return fail(append(failedArtefacts(findings), "runtimes/requirements/table.go"),
			"restore each element in the file that ships it, then "+regenerate+"; if the platform no longer requires one, change its row in runtimes/requirements/table.go citing the newer source",
			"%d requirements not met:\n  %s", len(findings), requirements.Summary(findings, maxFindings))
	}
	return pass("%d required elements in %s, each from its source, and nothing unexplained", len(rows), strings.Join(requirements.Artefacts, ", "))
}

func failedArtefacts(findings []requirements.Finding) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range findings {
		rel := ""
		if f.Row != nil {
			rel = f.Row.Artefact
		} else {
			rel = f.Element.Artefact
		}
		if !seen[rel] {
			seen[rel] = true
			out = append(out, rel)
		}
	}
	return out
}
