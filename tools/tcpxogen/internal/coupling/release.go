package coupling

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/google"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/tcpxogen/tcpxogen/bom"
)

// ReleaseOptions tune the release gate.
type ReleaseOptions struct {
	Options
	// Resolve checks that a digest exists in its registry; nil means a
	// HEAD request with the default and Google keychains.
	Resolve func(ctx context.Context, ref string) error
	// Timeout bounds each registry round trip.
	Timeout time.Duration
}

// ReleaseChecks are the rules a release must meet on top of bom-check.
func ReleaseChecks(opts ReleaseOptions) []Check {
	return []Check{
		{"no-substitute-provenance", "the generated data was read from the pinned image itself", checkNoSubstitute},
		{"digests-resolve", "every pinned digest resolves in its registry", func(ctx context.Context, t *Tree) Result { return checkDigests(ctx, t, opts) }},
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

func checkNoSubstitute(_ context.Context, t *Tree) Result {
	files := []string{GeneratedFile}
	if r := need(files, t.GeneratedErr); r != nil {
		return *r
	}
	p := t.Generated.Provenance
	if p.Substituted {
		return fail(files, "extract from the pinned image: `make generate SOURCE=registry` (needs registry access), then commit",
			"the generated data was read from %s (%s), a substitute for the pinned %s", p.Read, p.Kind, p.Pinned)
	}
	return pass("read from the pinned image %s", p.Digest)
}

func checkDigests(ctx context.Context, t *Tree, opts ReleaseOptions) Result {
	files := []string{bom.RepoPath}
	if r := need(files, t.BOMErr); r != nil {
		return *r
	}
	resolve := opts.Resolve
	if resolve == nil {
		resolve = headDigest
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
func headDigest(ctx context.Context, ref string) error {
	return headDigestVia(ctx, ref, http.DefaultTransport)
}

func headDigestVia(ctx context.Context, ref string, rt http.RoundTripper) error {
	_, dig, ok := strings.Cut(ref, "@")
	if !ok {
		return fmt.Errorf("not pinned by digest")
	}
	d, err := name.NewDigest(repository(ref) + "@" + dig)
	if err != nil {
		return err
	}
	kc := authn.NewMultiKeychain(authn.DefaultKeychain, google.Keychain)
	desc, err := remote.Head(d, remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(rt))
	if err != nil {
		return err
	}
	if desc.Digest.String() != dig {
		return fmt.Errorf("registry answered digest %s", desc.Digest)
	}
	return nil
}
