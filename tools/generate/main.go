// Command generate is the pipeline for `go generate ./...` (see
// generated/generate.go): one pipeline.Run from the sources the committed
// generated file records, writing the constants, every golden and every
// generated page to the tree, all or nothing. It links nothing compiled
// against generated/, so a missing or hand-broken generated file can always
// be regenerated (the tcpxogen binary would fail to compile first).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/pipeline"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, append([]string{"generate"}, os.Args[1:]...), cli.Streams{Out: os.Stdout, Err: os.Stderr},
		cli.Commands{"generate": {Summary: "regenerate the constants, goldens and generated pages from the recorded sources", Run: run}})
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("generate", "generate [--root DIR] [--cache-dir DIR]", s)
	root := fs.String("root", "", "repository root (default: the directory holding tcpxogen's go.mod, found upwards from the working directory)")
	cacheDir := fs.String("cache-dir", cli.DefaultCacheDir(), "content-addressed blob cache (verified on read); empty disables it")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	r, err := bom.ResolveRoot(*root)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	var progress io.Writer
	if cli.IsTerminal(s.Err) {
		progress = s.Err
	}
	res, err := pipeline.Regenerate(ctx, r, *cacheDir, progress)
	if err != nil {
		return err
	}
	p := res.Extract.Facts.Provenance
	fmt.Fprintf(s.Err, "generate: installer %s read from %s (%s): %d files, %d changed\n", res.Extract.Facts.PluginVersion, p.Read, p.Kind, len(res.Files), len(res.Paths))
	return nil
}
