package bomcheck

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/imagesource"
)

// ReleaseOptions tune the release gate.
type ReleaseOptions struct {
	Options
	// Resolve checks that a digest exists in its registry; nil means
	// imagesource.Head (a HEAD request with the default and Google
	// keychains).
	Resolve func(ctx context.Context, ref string) error
	// WorkerConfig reads an image's config from its registry; nil means
	// imagesource.Config (the config by digest, verified, with the default
	// and Google keychains; no layer is read).
	WorkerConfig func(ctx context.Context, ref string) (*v1.ConfigFile, error)
	// Timeout bounds each registry round trip.
	Timeout time.Duration
}

// ReleaseChecks are the rules a release must meet on top of bom-check.
func ReleaseChecks(opts ReleaseOptions) []Check {
	return []Check{
		{"no-substitute-provenance", "the generated data was read from the pinned image itself", checkNoSubstitute},
		{"digests-resolve", "every pinned digest resolves in its registry", func(ctx context.Context, t *Tree) Result { return checkDigests(ctx, t, opts) }},
		{"worker-cuda-confirmed", "the worker image's registry config confirms the CUDA major the BOM declares", func(ctx context.Context, t *Tree) Result { return checkWorkerCUDAConfig(ctx, t, opts) }},
	}
}

// RunRelease runs bom-check and the release rules.
func RunRelease(ctx context.Context, root string, opts ReleaseOptions) Report {
	rep := Run(ctx, root, opts.Options)
	t := Load(root, opts.Options)
	for _, c := range ReleaseChecks(opts) {
		res := c.Run(ctx, t)
		res.ID, res.Title = c.ID, c.Title
		rep.Results = append(rep.Results, res)
	}
	return rep
}

// checkNoSubstitute refuses generated data of any fabric read from a
// substitute: the gIB layout and script are a reconstruction's belief until
// read from the published image, as TCPXO's are.
func checkNoSubstitute(_ context.Context, t *Tree) Result {
	files := []string{generated.FactsFile, generated.GIBFactsFile}
	if r := need(files, t.GeneratedErr, t.GIBErr); r != nil {
		return *r
	}
	var bad, read []string
	for _, g := range []struct {
		file string
		p    facts.Provenance
	}{{generated.FactsFile, t.Generated.Provenance}, {generated.GIBFactsFile, t.GIB.Provenance}} {
		if g.p.Substituted {
			bad = append(bad, fmt.Sprintf("%s was read from %s (%s), a substitute for the pinned %s", g.file, g.p.Read, g.p.Kind, g.p.Pinned))
			continue
		}
		read = append(read, g.p.Digest)
	}
	if len(bad) > 0 {
		return fail(files, "extract from the pinned images: `make generate SOURCE=registry` (needs registry access), then commit", "%s", strings.Join(bad, "; "))
	}
	return pass("read from the pinned images %s", strings.Join(read, ", "))
}

func checkDigests(ctx context.Context, t *Tree, opts ReleaseOptions) Result {
	files := []string{bom.RepoPath}
	if r := need(files, t.BOMErr); r != nil {
		return *r
	}
	resolve := opts.Resolve
	if resolve == nil {
		resolve = func(ctx context.Context, ref string) error { return headDigest(ctx, ref) }
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	var problems []string
	roles := t.BOM.ImageRoles()
	for _, role := range roles {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		err := resolve(rctx, role.Image.Reference)
		cancel()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %s: cannot verify: %v", role.Name, role.Image.Reference, err))
		}
	}
	if len(problems) > 0 {
		return fail(files, "run release-check with access to every registry (gcloud auth configure-docker us-docker.pkg.dev; docker login) — a release is never made from unverified pins",
			"%s", strings.Join(problems, "; "))
	}
	return pass("%d pinned digests resolve", len(roles))
}

// headDigest asks the registry whether the pinned digest exists: by digest,
// so a moved tag cannot answer for it.
func headDigest(ctx context.Context, ref string, opts ...imagesource.Option) error {
	if !strings.Contains(ref, "@") {
		return fmt.Errorf("not pinned by digest")
	}
	_, err := imagesource.Head(ctx, ref, opts...)
	return err
}

// cudaTag finds the CUDA version a publisher states in a tag, such as
// 2.11.0-cuda12.8-cudnn9-runtime.
var cudaTag = regexp.MustCompile(`(?:^|[-_.])cuda(\d+)\.\d+`)

// checkWorkerCUDAConfig confirms images.worker.cudaMajor from the worker
// image itself: CUDA_VERSION in its config (set by every nvidia/cuda-based
// image), else the CUDA version its publisher states in the pinned tag.
func checkWorkerCUDAConfig(ctx context.Context, t *Tree, opts ReleaseOptions) Result {
	files := []string{bom.RepoPath}
	if r := need(files, t.BOMErr); r != nil {
		return *r
	}
	fetch := opts.WorkerConfig
	if fetch == nil {
		fetch = func(ctx context.Context, ref string) (*v1.ConfigFile, error) { return imagesource.Config(ctx, ref) }
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	w := t.BOM.Images.Worker
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg, err := fetch(rctx, w.Reference)
	if err != nil {
		return fail(files, "run release-check with access to the worker's registry", "worker %s: cannot read its config: %v", w.Reference, err)
	}
	var version, from string
	for _, kv := range cfg.Config.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == "CUDA_VERSION" {
			version, from = v, "its config's CUDA_VERSION"
		}
	}
	if version == "" {
		if m := cudaTag.FindStringSubmatch(w.Tag()); m != nil {
			version, from = m[1], "the CUDA version its publisher states in the pinned tag (its config sets no CUDA_VERSION)"
		}
	}
	if version == "" {
		return fail(files, "pin a worker image whose config sets CUDA_VERSION or whose tag states cudaX.Y",
			"worker %s: neither its config nor its tag says which CUDA it was built for", w.Reference)
	}
	major, err := facts.CUDAMajor(version)
	if err != nil || major != w.CUDAMajor {
		return fail(files, "set images.worker.cudaMajor to what the image is built for, then pin a worker matching the installer",
			"worker %s is CUDA %s by %s, but %s declares cudaMajor %d", w.Reference, version, from, bom.RepoPath, w.CUDAMajor)
	}
	return pass("worker is CUDA %s by %s", version, from)
}
