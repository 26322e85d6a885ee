package pipeline

import (
	"context"
	"fmt"
	"net/http"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/imagesource"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
)

// Reproduce is bom-check's reproducibility run (validators/bomcheck's
// Reproducer; it is handed in by the commands, since the checks sit below
// the pipeline): Run, in memory, from the sources and library directory the
// committed facts record, with the reviewed inputs. A nil transport refuses
// every request, so only the local cache serves a registry source.
func Reproduce(ctx context.Context, root string, b *bom.BOM, committed *facts.Facts, r *bom.Releases, o *bom.Overrides, cacheDir string, transport http.RoundTripper) (string, map[string][]byte, int64, error) {
	spec, err := extract.ParseSource(committed.Provenance.Source)
	if err != nil {
		return "", nil, 0, fmt.Errorf("recorded source: %w", err)
	}
	dspec, err := extract.ParseSource(committed.DaemonProvenance.Source)
	if err != nil {
		return "", nil, 0, fmt.Errorf("recorded daemon source: %w", err)
	}
	if transport == nil {
		transport = offline{}
	}
	var stats imagesource.Stats
	cfg := Config{
		Extract:   extract.Config{Root: root, BOM: b, Source: spec, DaemonSource: dspec, CacheDir: cacheDir, LibDir: committed.LibDir, Transport: transport, Stats: &stats},
		Releases:  r,
		Overrides: o,
	}
	res, err := Run(ctx, cfg, Memory{})
	switch StageOf(err) {
	case "":
	case StageExtract:
		return "", nil, 0, fmt.Errorf("re-extract from %s: %w", spec.Raw, err)
	case StageRender:
		return "", nil, 0, fmt.Errorf("render goldens: %w", err)
	default:
		return "", nil, 0, err
	}
	return spec.Raw, res.Files, stats.Snapshot().Requests, nil
}

// offline refuses every request: bom-check never touches the network, so
// re-extraction of a registry source works only from the local cache.
type offline struct{}

func (offline) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("bom-check is offline and %s is not in the local cache: run `make generate` once with network access", r.URL.Host)
}
