// Package sbomcmd implements `tcpxogen sbom`: the CycloneDX 1.6 SBOM of what
// the tree at --root ships, on stdout or written atomically to a file.
package sbomcmd

import (
	"context"
	"fmt"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/pipeline/sbom"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// Commands returns the sbom command set.
func Commands() cli.Commands {
	return cli.Commands{"sbom": {Summary: "write the CycloneDX 1.6 SBOM of what ships (make sbom)", Run: run}}
}

func run(_ context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("sbom", "sbom [--root DIR] [-o FILE]", s)
	root := fs.String("root", "", "repository root (default: found upwards from the working directory)")
	out := fs.StringP("output", "o", "", "write the SBOM to FILE (atomically) instead of stdout")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	r, err := bom.ResolveRoot(*root)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	// A tree whose reviewed files or generated code do not load is bad input
	// (exit 2), as for render; a tree that loads but cannot be described
	// truthfully, such as stale facts, is a failure the tree must fix (exit 1).
	in, err := sbom.LoadInputs(r)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	doc, err := sbom.Build(in)
	if err != nil {
		return err
	}
	data, err := sbom.Encode(doc)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err := s.Out.Write(data)
		return err
	}
	// Atomic, so a Makefile target or a concurrent reader never sees half a
	// document where the last complete one was.
	if err := atomicfile.Write(*out, data, 0o644); err != nil {
		return fmt.Errorf("write the SBOM: %w", err)
	}
	fmt.Fprintf(s.Err, "sbom: %d components, serial %s, written to %s\n", len(*doc.Components), doc.SerialNumber, *out)
	return nil
}
