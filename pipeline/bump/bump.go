// Package bump is the release pipeline's one step: pin a published
// installer/daemon pair in bom/bom.yaml by digest, re-extract the facts from
// the new images, regenerate the constants, goldens and generated docs with
// the same library functions `go generate ./...` runs, run bom-check, and
// summarize the change for the pull request (internal/releasediff). It owns
// the order of those steps and their all-or-nothing write, not any of them:
// the pin rule is the bom package's, sources are extract's and imagesource's,
// the goldens are internal/goldens', the checks internal/coupling's.
package bump

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/imagefs"
	"github.com/tcpxogen/tcpxogen/internal/imagesource"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/pipeline"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
	"github.com/tcpxogen/tcpxogen/pipeline/releasediff"
	"github.com/tcpxogen/tcpxogen/validators/bomcheck"
)

// Config is one bump.
type Config struct {
	Root string // the checkout to bump
	// Installer is the installer tag to pin; its pair comes from
	// bom/releases.yaml.
	Installer string
	// Source is where both digests are resolved and the installer read:
	// registry, testdata or oci-layout:DIR. A substitute reference cannot
	// say what the published tag's digest is, and is refused.
	Source extract.SourceSpec
	// DaemonSource is where the daemon's digest is resolved and its image
	// read; zero means testdata for a testdata bump, else the registry.
	DaemonSource extract.SourceSpec
	DryRun       bool
	// Rollback allows pinning a pair older than the pinned one. Without it
	// an older tag is refused: a mistyped tag must not quietly take the
	// fleet back to a release Google has superseded.
	Rollback bool
	CacheDir string
	// Transport and Keychain reach the registry; nil means the default
	// transport and the default and Google keychains.
	Transport http.RoundTripper
	Keychain  authn.Keychain
	// Title heads the summary; empty means one built from the flags.
	Title string
	// Fabric is the fabric whose installer is pinned: tcpxo (default) or
	// gib (Installer is then a gIB release, pinned with its diagnostic
	// image).
	Fabric string
}

// Result is a bump that ran to its summary.
type Result struct {
	Summary string
	// Missing are the differences from the published list still to decide.
	Missing []releasediff.Decision
	// Check is bom-check on the bumped tree; nil for a dry run.
	Check *bomcheck.Report
	// Files are the repo-relative files written (or, for a dry run, that
	// would be).
	Files []string
}

// Complete reports whether the bump needs nothing more: every decision
// recorded and bom-check passing.
func (r *Result) Complete() bool {
	return len(r.Missing) == 0 && (r.Check == nil || !r.Check.Failed())
}

// InputError is a bump refused before anything was written: the user's to
// fix (exit 2).
type InputError struct{ Err error }

func (e *InputError) Error() string  { return e.Err.Error() }
func (e *InputError) Unwrap() error  { return e.Err }
func (e *InputError) BadInput() bool { return true }

func bad(format string, a ...any) error { return &InputError{fmt.Errorf(format, a...)} }

// Run bumps cfg.Root to cfg.Installer's published pair.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	switch cfg.Fabric {
	case "", fabric.TCPXO.Name:
	case fabric.GIB.Name:
		return runGIB(ctx, cfg)
	default:
		_, err := fabric.Lookup(cfg.Fabric)
		return nil, bad("--fabric: %w", err)
	}
	root := cfg.Root
	at := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	oldB, rel, err := bom.LoadAll(at(bom.RepoPath), at(bom.ReleasesRepoPath))
	if err != nil {
		return nil, &InputError{err}
	}
	ov, err := bom.LoadOverrides(at(bom.OverridesRepoPath))
	if err != nil {
		return nil, &InputError{err}
	}
	oldRaw, err := inputfile.Read(at(generated.FactsFile), inputfile.Spec{What: "generated file", Max: inputfile.MaxSource})
	if err != nil {
		return nil, bad("%s: %w (restore it with git checkout, or run go generate ./...)", generated.FactsFile, err)
	}
	oldF, err := emit.Parse(generated.FactsFile, oldRaw)
	if err != nil {
		return nil, bad("%w (restore it with git checkout, or run go generate ./...)", err)
	}

	pair, ok := rel.PairFor(cfg.Installer)
	if !ok {
		return nil, bad("--installer %s is not a published installer in %s: pick one of %s, or add the release notes' pair there first",
			quote(cfg.Installer), bom.ReleasesRepoPath, strings.Join(rel.PublishedInstallers(), ", "))
	}
	if pair.Source != bom.SourceReleaseNotes {
		return nil, bad("--installer %s: %s lists its pair (daemon %s) from %s only, not from the release notes: only a published pair may be pinned; set its source: to %s once the GKE release notes list it",
			cfg.Installer, bom.ReleasesRepoPath, pair.Daemon, pair.Source, bom.SourceReleaseNotes)
	}
	cur, _, back := rel.RollBack(oldB.Images.Installer.Version, cfg.Installer)
	if err := cfg.rollback(back, pair.Date, oldB.Images.Installer.Version, cur.Date, "pair"); err != nil {
		return nil, err
	}
	spec, dspec, err := sources(cfg)
	if err != nil {
		return nil, err
	}
	bomPath, genPath := at(bom.RepoPath), at(generated.FactsFile)
	if !cfg.DryRun {
		if err := writable(root, bomPath, genPath); err != nil {
			return nil, err
		}
	}

	inst, err := cfg.pin(ctx, spec, "--source", oldB.Images.Installer.Reference, pair.Installer, extract.TestdataDir, "installer")
	if err != nil {
		return nil, err
	}
	daem, err := cfg.pin(ctx, dspec, "--daemon-source", oldB.Images.Daemon.Reference, pair.Daemon, extract.DaemonTestdataDir, "daemon")
	if err != nil {
		return nil, err
	}

	newB, run, check, err := cfg.regenerate(ctx, rel, ov, []edit{
		{[]string{"images", bom.RoleInstaller, "reference"}, inst.Reference},
		{[]string{"images", bom.RoleInstaller, "version"}, inst.Version},
		{[]string{"images", bom.RoleDaemon, "reference"}, daem.Reference},
		{[]string{"images", bom.RoleDaemon, "version"}, daem.Version},
	}, extract.Config{Root: root, Source: spec, DaemonSource: dspec, CacheDir: cfg.CacheDir, LibDir: oldF.LibDir, Transport: cfg.Transport, Limits: imagefs.DefaultLimits()},
		fmt.Sprintf("%s and daemon %s", pair.Installer, pair.Daemon))
	if err != nil {
		return nil, err
	}
	res := run.Extract

	out := &Result{}
	newSnap := releasediff.Snapshot{Facts: res.Facts, BOM: newB, Releases: rel, Overrides: ov}
	report := releasediff.Report{
		Title: cfg.title(spec, dspec),
		Old:   releasediff.Snapshot{Facts: oldF, BOM: oldB, Releases: rel, Overrides: ov},
		New:   newSnap,
	}
	out.Files = run.Paths
	if cfg.DryRun {
		report.CheckNote = "Not run: --dry-run writes nothing, and bom-check judges the written tree."
	} else {
		out.Check, report.Check = check, check
	}
	report.Files = out.Files
	out.Missing = releasediff.Missing(newSnap)
	out.Summary = releasediff.Markdown(report)
	return out, nil
}

// rollback applies the one rule on going back (back: the new release was
// published before the pinned one, by the notes' dates): refused without
// --rollback, and --rollback refused when it is not one. what names a
// release of the fabric ("pair", "release").
func (cfg Config) rollback(back bool, date, pinned, pinnedDate, what string) error {
	switch {
	case back && !cfg.Rollback:
		return bad("--installer %s (published %s) is older than the pinned %s (published %s): a bump moves to a newer %s; to roll back deliberately, add --rollback",
			cfg.Installer, date, pinned, pinnedDate, what)
	case !back && cfg.Rollback:
		return bad("--rollback: --installer %s is not older than the pinned %s: drop --rollback", cfg.Installer, pinned)
	}
	return nil
}

// pin is the image of oldPin's repository at tag, by the digest spec
// resolves for it (role names it in errors).
func (cfg Config) pin(ctx context.Context, spec extract.SourceSpec, flag, oldPin, tag, testdataDir, role string) (bom.Image, error) {
	repo, _, _ := bom.SplitReference(oldPin)
	d, err := cfg.digest(ctx, spec, flag, repo, tag, testdataDir, oldPin)
	if err != nil {
		return bom.Image{}, err
	}
	img, err := bom.NewImage(repo+":"+tag+"@"+d, tag)
	if err != nil {
		return bom.Image{}, bad("%s pin: %w", role, err)
	}
	return img, nil
}

// regenerate is what every fabric's bump does once the new pins are known:
// rewrite them into bom/bom.yaml in place (edits), have the project's own
// loader judge the result, run the one pipeline run with the re-pinned BOM
// in the same all-or-nothing write (or, for a dry run, report what would
// differ), then bom-check the written tree. ex is the extraction without
// its BOM; what names the release in failures ("v1.0.17 and daemon
// v1.0.23").
func (cfg Config) regenerate(ctx context.Context, rel *bom.Releases, ov *bom.Overrides, edits []edit, ex extract.Config, what string) (*bom.BOM, *pipeline.Result, *bomcheck.Report, error) {
	bomPath := filepath.Join(cfg.Root, filepath.FromSlash(bom.RepoPath))
	oldBOMRaw, err := inputfile.Read(bomPath, inputfile.Spec{What: "bill of materials", Max: inputfile.MaxSource})
	if err != nil {
		return nil, nil, nil, &InputError{err}
	}
	newBOMRaw, err := repin(bom.RepoPath, oldBOMRaw, edits)
	if err != nil {
		return nil, nil, nil, &InputError{err}
	}
	// The project's own loader judges the result: what bump writes is what
	// every other command will read.
	newB, err := bom.Parse(bomPath, newBOMRaw)
	if err == nil {
		err = bom.CheckPublished(newB, rel)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the rewritten %s does not load (a bug in bump; nothing was written): %w", bom.RepoPath, err)
	}
	ex.BOM = newB
	repinned := map[string][]byte{bom.RepoPath: newBOMRaw}
	var dest pipeline.Destination = pipeline.Diff{Extra: repinned}
	if !cfg.DryRun {
		dest = pipeline.Tree{Extra: repinned, Preflight: func(paths []string) error { return writable(cfg.Root, paths...) }}
	}
	run, err := pipeline.Run(ctx, pipeline.Config{Extract: ex, Releases: rel, Overrides: ov}, dest)
	var input *InputError
	switch stage := pipeline.StageOf(err); {
	case err == nil:
	case errors.As(err, &input):
		return nil, nil, nil, input
	case stage == pipeline.StageExtract:
		return nil, nil, nil, fmt.Errorf("extract %s (nothing was written): %w", what, errors.Unwrap(err))
	case stage == pipeline.StageRender:
		return nil, nil, nil, fmt.Errorf("render the goldens for %s (nothing was written): %w", what, errors.Unwrap(err))
	case stage == pipeline.StageWrite:
		return nil, nil, nil, fmt.Errorf("write the bumped tree: %w", errors.Unwrap(err))
	default:
		return nil, nil, nil, errors.Unwrap(err)
	}
	if cfg.DryRun {
		return newB, run, nil, nil
	}
	rep := bomcheck.Run(ctx, cfg.Root, bomcheck.Options{CacheDir: cfg.CacheDir, Reproduce: pipeline.Reproduce})
	return newB, run, &rep, nil
}

func (cfg Config) title(spec, dspec extract.SourceSpec) string {
	if cfg.Title != "" {
		return cfg.Title
	}
	t := "tcpxogen bump --installer " + cfg.Installer + " --source " + spec.Raw
	if cfg.Rollback {
		t += " --rollback"
	}
	if dspec.Raw != extract.DefaultDaemonSource(spec).Raw {
		t += " --daemon-source " + dspec.Raw
	}
	return t
}

// sources checks --source and --daemon-source: bump pins the published
// images, so it reads them from where their digests can be established.
func sources(cfg Config) (spec, dspec extract.SourceSpec, err error) {
	spec, dspec = cfg.Source, cfg.DaemonSource
	if spec.Kind == "" {
		spec = extract.SourceSpec{Kind: extract.SourceRegistry, Raw: extract.SourceRegistry}
	}
	if dspec.Kind == "" {
		dspec = extract.DefaultDaemonSource(spec)
	}
	for _, s := range []struct {
		flag string
		spec extract.SourceSpec
	}{{"--source", spec}, {"--daemon-source", dspec}} {
		if s.spec.Kind == extract.SourceSubstitute {
			return spec, dspec, bad("%s %s: a substitute image cannot say which digest Google published for the tag; use registry (the published repository), testdata (the offline rehearsal) or oci-layout:DIR (a pulled copy)", s.flag, quote(s.spec.Raw))
		}
	}
	return spec, dspec, nil
}

// digest establishes the manifest digest the pin records for repo:tag from
// spec: the registry's answer for the tag, the layout's single image, or the
// built reconstruction (a substitute, and provenance says so).
func (cfg Config) digest(ctx context.Context, spec extract.SourceSpec, flag, repo, tag, testdataDir, oldPin string) (string, error) {
	switch spec.Kind {
	case extract.SourceTestdata:
		d, err := extract.TestdataDigest(cfg.Root, testdataDir, tag)
		if err != nil {
			return "", bad("%s testdata: %w", flag, err)
		}
		return d, nil
	case extract.SourceOCILayout:
		dir := spec.Arg
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cfg.Root, dir)
		}
		src, err := imagesource.Layout(oldPin, dir, "")
		if err == nil {
			_, err = src.Image(ctx)
		}
		if err != nil {
			return "", bad("%s %s: %w (pull %s:%s into it, e.g. crane pull --format=oci %s:%s DIR)", flag, spec.Raw, err, repo, tag, repo, tag)
		}
		return src.Describe().Digest, nil
	case extract.SourceRegistry:
		ref, err := name.NewTag(repo + ":" + tag)
		if err != nil {
			return "", bad("%s registry: %s:%s is not a reference: %w", flag, repo, tag, err)
		}
		var opts []imagesource.Option
		if cfg.Keychain != nil {
			opts = append(opts, imagesource.WithKeychain(cfg.Keychain))
		}
		if cfg.Transport != nil {
			opts = append(opts, imagesource.WithTransport(cfg.Transport))
		}
		d, err := imagesource.Head(ctx, ref.String(), opts...)
		if err != nil {
			return "", bad("%s registry: cannot resolve the digest of %s:%s: %w (log in with gcloud auth configure-docker us-docker.pkg.dev, or rehearse offline with --source testdata; nothing was written)", flag, repo, tag, err)
		}
		return d.String(), nil
	}
	return "", bad("%s %s: want registry, testdata or oci-layout:DIR", flag, quote(spec.Raw))
}

// writable refuses, before anything is written, a target bump could not
// replace: not a regular file (atomicfile's rule), or a file or directory
// this process cannot write (read-only, immutable).
func writable(root string, paths ...string) error {
	dirs := map[string]bool{}
	for _, p := range paths {
		rel := pipeline.Relative(root, []string{p})[0]
		target, err := atomicfile.Target(p)
		if err != nil {
			return &InputError{fmt.Errorf("%s: %w (nothing was written)", rel, err)}
		}
		if f, err := os.OpenFile(target, os.O_WRONLY, 0); err == nil {
			f.Close()
		} else if !errors.Is(err, os.ErrNotExist) {
			return bad("%s is not writable: %v (make it writable, or bump a checkout you own; nothing was written)", rel, err)
		}
		dirs[filepath.Dir(target)] = true
	}
	for dir := range dirs {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			continue
		}
		f, err := os.CreateTemp(dir, ".bump-probe-*")
		if err != nil {
			return bad("%s is not writable: %v (make it writable, or bump a checkout you own; nothing was written)", pipeline.Relative(root, []string{dir})[0], err)
		}
		f.Close()
		os.Remove(f.Name())
	}
	return nil
}

func quote(s string) string { return excerpt.Quote(s) }
