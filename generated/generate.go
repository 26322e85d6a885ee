// Package generated orders tcpxogen's generators. Everything else under
// generated/ is emitted code; do not edit it by hand.
//
// The directives live here, in data-flow order, because `go generate ./...`
// walks packages in import-path order, not in the order data flows:
//
//  0. copycrds copies the CRDs of every supported trainer version (go.mod's
//     and each validators/realize/trainer-*.mod's) from the module cache into
//     validators/linkedtrainer/crds, which the binary embeds; the schema
//     proof behind the goldens and docs validates against them.
//  1. extract writes generated/tcpxo from the pinned installer image, reusing
//     the source recorded in the committed provenance. It runs from a binary
//     that links nothing compiled against generated/, so it works even when
//     the generated file is missing or broken.
//  2. render goldens is compiled after step 1, against the fresh constants,
//     and rewrites the committed manifests.
package generated

//go:generate go run ../validators/linkedtrainer/internal/copycrds
//go:generate go run ../tools/tcpxogen/internal/extractgen extract --out generated/tcpxo
//go:generate go run ../tools/tcpxogen render goldens
