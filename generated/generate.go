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
//     missing or broken, which is why it runs before anything that links it.
//  2. compat, once per trainer version (go.mod's, then each
//     validators/realize/trainer-*.mod's through -modfile: every version
//     shares one module path, so each needs its own build), writes that
//     version's CRD default schemas (validators/realize/crddefaults, cut
//     from the CRDs step 0 copied) and realizes its compatibility matrix
//     (validators/realize/testdata/compat-<version>.json) from the runtime
//     and benchmark step 1 wrote. It links generated/tcpxo, so it needs
//     step 1 first. When the CRD defaults changed it writes them alone and
//     fails, because the build that ran realizes with the ones it embeds:
//     run go generate ./... again.
//  3. generate again renders docs/trainer-compat.md from the reports step
//     2 wrote; everything else it writes is already current, so it changes
//     nothing else.
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
//go:generate go run ../tools/placeholders ../testdata/installer ../testdata/daemon ../testdata/gib-installer ../testdata/gib-diagnostic
//go:generate go run ../tools/generate
//go:generate go run ../tools/compat --out ../validators/realize/testdata/compat-v2.2.0.json --crd-defaults ../validators/realize/crddefaults/v2.2.0.json
//go:generate go run -modfile=../validators/realize/trainer-v2.3.0.mod ../tools/compat --out ../validators/realize/testdata/compat-v2.3.0.json --crd-defaults ../validators/realize/crddefaults/v2.3.0.json
//go:generate go run ../tools/generate

// The gIB fabric's emitted facts (emit.Literal): one package per fabric,
// named after it, so each fabric's facts live in one place.
const (
	GIBFactsDir     = "generated/gib"
	GIBFactsFile    = GIBFactsDir + "/" + FactsFileName
	GIBFactsPackage = "gib"
)
