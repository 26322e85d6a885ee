// Package generated orders tcpxogen's generators and names where the
// emitted facts live. Everything else under generated/ is emitted code; do
// not edit it by hand.
//
// The directives live here, in data-flow order, because `go generate ./...`
// walks packages in import-path order, not in the order data flows:
//
//  0. copycrds copies the CRDs of every supported trainer version (go.mod's
//     and each validators/realize/trainer-*.mod's) from the module cache into
//     validators/linkedtrainer/crds, which the binary embeds; the schema
//     proof behind the goldens and docs validates against them.
//  1. placeholders writes the placeholder libraries of the bundled
//     reconstructions (testdata/installer, testdata/daemon: the ELF shared
//     objects standing in for the plugin .so files) from each tree's
//     needed.json, so the trees the next step may extract from are current.
//  2. generate is the one pipeline run (package pipeline): it extracts the
//     facts from the source the committed provenance records, emits
//     generated/tcpxo, and renders every golden and generated page from the
//     fresh facts, writing them all or nothing. It links nothing compiled
//     against generated/, so it works even when the generated file is
//     missing or broken.
package generated

// The emitted facts package, the one definition of where it lives: the
// pipeline writes it, bom-check, bump, review and the SBOM read it back.
const (
	// FactsDir is the emitted package's directory, repo-relative.
	FactsDir = "generated/tcpxo"
	// FactsFileName is the emitted file inside FactsDir.
	FactsFileName = "zz_generated.go"
	// FactsFile is the emitted file, repo-relative.
	FactsFile = FactsDir + "/" + FactsFileName
	// FactsPackage is the emitted file's Go package name.
	FactsPackage = "tcpxo"
)

//go:generate go run ../tools/copycrds
//go:generate go run ../tools/placeholders ../testdata/installer ../testdata/daemon
//go:generate go run ../tools/generate
