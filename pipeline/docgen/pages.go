package docgen

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// Pages renders every generated documentation page, keyed by repo-relative
// path: the trainer compatibility page, and the user guides (TCPXO's and
// gIB's) with their generated sections refreshed.
func Pages(root string, in *runtimes.Inputs) (map[string][]byte, error) {
	compat, err := compatPage(root)
	if err != nil {
		return nil, err
	}
	guide, err := guidePage(root, in)
	if err != nil {
		return nil, err
	}
	gib, err := gibGuidePage(root, in)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{CompatDoc: compat, GuideDoc: guide, GIBGuideDoc: gib}, nil
}

// CompatDoc is the generated trainer compatibility page, repo-relative.
const CompatDoc = "docs/trainer-compat.md"

// compatGlob finds the realization matrices, one per trainer version.
const compatGlob = "validators/realize/testdata/compat-*.json"

// compatDoc renders docs/trainer-compat.md from the committed matrices,
// oldest trainer version first.
func compatPage(root string) ([]byte, error) {
	paths, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(compatGlob)))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no realization matrices match %s: run go generate ./... (tools/compat writes them)", compatGlob)
	}
	var reports []CompatReport
	for _, p := range paths {
		data, err := inputfile.Read(p, inputfile.Spec{Max: inputfile.MaxSource})
		if err != nil {
			return nil, err
		}
		rep, err := ParseCompat(p, data)
		if err != nil {
			return nil, err
		}
		reports = append(reports, rep)
	}
	slices.SortFunc(reports, func(a, b CompatReport) int { return semverCompare(a.TrainerVersion, b.TrainerVersion) })
	return CompatMarkdown(reports), nil
}

// semverCompare orders vMAJOR.MINOR.PATCH strings numerically.
func semverCompare(a, b string) int {
	pa, pb := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := range min(len(pa), len(pb)) {
		na, _ := strconv.Atoi(pa[i])
		nb, _ := strconv.Atoi(pb[i])
		if c := cmp.Compare(na, nb); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(pa), len(pb))
}

// GuideDoc is the user guide; its generated sections are kept current here.
const GuideDoc = "docs/tcpxo-workloads.md"

// guideDoc refreshes the guide's generated sections from the builders: the
// wiring reference table and the namespaced-runtime example.
func guidePage(root string, in *runtimes.Inputs) ([]byte, error) {
	doc, err := inputfile.Read(filepath.Join(root, filepath.FromSlash(GuideDoc)), inputfile.Spec{Max: inputfile.MaxSource})
	if err != nil {
		return nil, err
	}
	rt, err := runtimes.TorchRuntime(in, runtimes.Options{Interfaces: runtimes.ExampleInterfaces()})
	if err != nil {
		return nil, err
	}
	rows, err := runtimes.Reference(rt, in.Overrides, in.Facts.PluginVersion)
	if err != nil {
		return nil, err
	}
	if doc, err = Splice(doc, "wiring-reference", WiringReference(rows)); err != nil {
		return nil, fmt.Errorf("%s: %w", GuideDoc, err)
	}
	env, err := in.WorkerEnv(runtimes.ProfileDefault)
	if err != nil {
		return nil, err
	}
	if doc, err = Splice(doc, "fabric-rules", FabricRules(fabric.TCPXORules, Rows(fabric.Table(env, in.Facts.DefaultGuestRules)))); err != nil {
		return nil, fmt.Errorf("%s: %w", GuideDoc, err)
	}
	custom, err := runtimes.Encode(runtimes.FormatYAML, nil, runtimes.Namespaced(rt, "team-a", "torch-tcpxo-team-a"))
	if err != nil {
		return nil, err
	}
	if doc, err = Splice(doc, "namespaced-runtime", YAMLBlock(custom)); err != nil {
		return nil, fmt.Errorf("%s: %w", GuideDoc, err)
	}
	return doc, nil
}
