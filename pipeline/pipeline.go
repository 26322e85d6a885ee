// Package pipeline is tcpxogen's one pipeline run: extract the facts from
// the pinned images, emit them as Go constants, render every golden and
// generated page from them, and hand the artefacts to a Destination (write
// the tree, keep them in memory, or report what differs from the tree).
// `go generate ./...` (tools/generate), `bump`, `demo` and bom-check's
// reproducibility check all call Run, as every controller-tools generator
// runs through one runtime, so "current" means the same thing everywhere.
//
// It owns the order of the stages and the table of artefacts (Render), not
// how any one is built: extraction is pipeline/extract's, the emitter
// internal/emit's, the manifests runtimes' and its subpackages', the pages
// pipeline/docgen's.
//
// It never links the generated constants (it imports runtimes, not
// runtimes/shipped), so it regenerates them even when they are missing or
// hand-broken.
package pipeline

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/internal/imagefs"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// Config is one run. Extract says where the images are read from; Releases
// and Overrides are the reviewed inputs the builders apply (nil: read from
// Extract.Root).
type Config struct {
	Extract   extract.Config
	Releases  *bom.Releases
	Overrides *bom.Overrides
}

// Result is a run's artefacts, keyed by repo-relative path (the emitted
// constants and every golden and page Render declares), with what the
// destination did to them.
type Result struct {
	Files   map[string][]byte
	Extract *extract.Result
	Inputs  *runtimes.Inputs
	// Paths are what the destination reports, repo-relative and sorted:
	// the files it changed (Tree) or that differ from the tree (Diff).
	Paths []string
}

// Destination receives a run's artefacts.
type Destination interface {
	// Put delivers files (repo-relative paths) for the tree at root and
	// returns the repo-relative paths it changed or found different.
	Put(root string, files map[string][]byte) ([]string, error)
}

// Stage names a step of Run, for callers that word its failures their way.
type Stage string

const (
	StageExtract Stage = "extract"
	StageEmit    Stage = "emit"
	StageRender  Stage = "render"
	StageWrite   Stage = "write"
)

// StageError is a failure of one stage; its message is the stage's own.
type StageError struct {
	Stage Stage
	Err   error
}

func (e *StageError) Error() string { return e.Err.Error() }
func (e *StageError) Unwrap() error { return e.Err }

// StageOf returns the stage err failed in, "" when it is not a run's.
func StageOf(err error) Stage {
	var se *StageError
	if errors.As(err, &se) {
		return se.Stage
	}
	return ""
}

// Run extracts, emits and renders, then hands every artefact to dest.
func Run(ctx context.Context, cfg Config, dest Destination) (*Result, error) {
	root := cfg.Extract.Root
	if cfg.Releases == nil || cfg.Overrides == nil {
		r, o, err := reviewed(root)
		if err != nil {
			return nil, err
		}
		cfg.Releases = cmp.Or(cfg.Releases, r)
		cfg.Overrides = cmp.Or(cfg.Overrides, o)
	}
	res, err := extract.Run(ctx, cfg.Extract)
	if err != nil {
		return nil, &StageError{StageExtract, err}
	}
	code, err := emit.Go(generated.FactsPackage, res.Facts)
	if err != nil {
		return nil, &StageError{StageEmit, err}
	}
	gres, err := extract.RunGIB(ctx, cfg.Extract)
	if err != nil {
		return nil, &StageError{StageExtract, err}
	}
	gcode, err := emit.Literal(generated.GIBFactsPackage, gres.Facts)
	if err != nil {
		return nil, &StageError{StageEmit, err}
	}
	in := &runtimes.Inputs{Facts: *res.Facts, GIB: *gres.Facts, BOM: cfg.Extract.BOM, Releases: cfg.Releases, Overrides: cfg.Overrides}
	files, err := Render(root, in)
	if err != nil {
		return nil, &StageError{StageRender, err}
	}
	files[generated.FactsFile] = code
	files[generated.GIBFactsFile] = gcode
	paths, err := dest.Put(root, files)
	if err != nil {
		return nil, &StageError{StageWrite, err}
	}
	return &Result{Files: files, Extract: res, Inputs: in, Paths: paths}, nil
}

func reviewed(root string) (*bom.Releases, *bom.Overrides, error) {
	at := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	r, err := bom.LoadReleases(at(bom.ReleasesRepoPath))
	if err != nil {
		return nil, nil, err
	}
	o, err := bom.LoadOverrides(at(bom.OverridesRepoPath))
	if err != nil {
		return nil, nil, err
	}
	return r, o, nil
}

// Tree writes every artefact under root, all or nothing, and reports the
// files it changed. Extra files join the same write (bump's re-pinned BOM),
// so a failed write leaves neither.
type Tree struct {
	Extra map[string][]byte
	// Preflight, when set, sees every absolute path before anything is
	// written and may refuse the write (bump's "is it writable" check).
	Preflight func(paths []string) error
}

// Put implements Destination.
func (d Tree) Put(root string, files map[string][]byte) ([]string, error) {
	set := atomicfile.Set{}
	for rel, data := range all(files, d.Extra) {
		set[filepath.Join(root, filepath.FromSlash(rel))] = data
	}
	if d.Preflight != nil {
		if err := d.Preflight(slices.Sorted(maps.Keys(set))); err != nil {
			return nil, err
		}
	}
	changed, err := set.Commit(0o644)
	if err != nil {
		return nil, err
	}
	return Relative(root, changed), nil
}

// Memory keeps the artefacts in the Result and writes nothing.
type Memory struct{}

// Put implements Destination.
func (Memory) Put(string, map[string][]byte) ([]string, error) { return nil, nil }

// Diff writes nothing and reports the files whose committed bytes differ
// from the run's (a missing file differs): bom-check's reproducibility
// check, and what a dry run would change. Extra files are compared too.
type Diff struct {
	Extra map[string][]byte
}

// Put implements Destination.
func (d Diff) Put(root string, files map[string][]byte) ([]string, error) {
	var differ []string
	for rel, data := range all(files, d.Extra) {
		// A missing, unreadable or oversized file is not the artefact either.
		current, err := inputfile.Read(filepath.Join(root, filepath.FromSlash(rel)), inputfile.Spec{What: "generated file", Max: inputfile.MaxSource})
		if err == nil && bytes.Equal(current, data) {
			continue
		}
		differ = append(differ, rel)
	}
	slices.Sort(differ)
	return differ, nil
}

func all(files, extra map[string][]byte) map[string][]byte {
	out := maps.Clone(files)
	maps.Copy(out, extra)
	return out
}

// Relative makes absolute paths under root repo-relative and sorts them.
func Relative(root string, paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if rel, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(rel, "..") {
			p = filepath.ToSlash(rel)
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Regenerate is `go generate ./...`'s run (and `render goldens`'): Run from
// the sources the committed generated file records, writing the tree all or
// nothing. cacheDir is the blob cache ("" disables it); progress, when set,
// receives the extraction's progress.
func Regenerate(ctx context.Context, root, cacheDir string, progress io.Writer) (*Result, error) {
	b, rel, err := bom.LoadAll(filepath.Join(root, bom.RepoPath), filepath.Join(root, bom.ReleasesRepoPath))
	if err != nil {
		return nil, err
	}
	spec, dspec, err := extract.ResolveSources("", "", filepath.Join(root, filepath.FromSlash(generated.FactsFile)))
	if err != nil {
		return nil, err
	}
	cfg := Config{Extract: extract.Config{Root: root, BOM: b, Source: spec, DaemonSource: dspec, CacheDir: cacheDir, Limits: imagefs.DefaultLimits(), Progress: progress}, Releases: rel}
	return Run(ctx, cfg, Tree{})
}
