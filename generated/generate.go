// Package generated orders tcpxogen's generators. Everything else under
// generated/ is emitted code; do not edit it by hand.
//
// The directives live here, in data-flow order, because `go generate ./...`
// walks packages in import-path order, not in the order data flows: first
// extract (writes generated/tcpxo from the pinned installer image, reusing
// the source recorded in the committed provenance), then the steps compiled
// against the fresh constants.
package generated

//go:generate go run ../tools/tcpxogen extract --out generated/tcpxo
