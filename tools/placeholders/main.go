// Command placeholders writes the placeholder libraries of the bundled
// reconstructions (the ELF shared objects standing in for the plugin .so
// files) from each tree's needed.json: placeholders DIR... writes every
// tree under each DIR (testdata/installer, testdata/daemon). Run it through
// `go generate ./...` (generated/generate.go), which runs it before the
// pipeline extracts from the trees.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/tcpxogen/tcpxogen/internal/reconstruction"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: placeholders DIR...\n\nWrites the placeholder libraries of every reconstruction tree under each DIR from the tree's "+reconstruction.NeededFile+".")
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	written, err := reconstruction.WritePlaceholders(flag.Args()...)
	for _, p := range written {
		fmt.Fprintln(os.Stderr, "placeholders: wrote", p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "placeholders:", err)
		os.Exit(1)
	}
}
