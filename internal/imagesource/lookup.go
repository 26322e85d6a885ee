package imagesource

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Head asks ref's registry which manifest ref names, without reading it:
// the digest a tag points at now or, for a reference pinned by digest, that
// digest, which proves the registry holds it (another answer is an error).
// ref is REGISTRY/REPO[:TAG][@sha256:DIGEST]; a missing registry means
// Docker Hub, as for docker pull. It goes through the client every registry
// read here shares (the keychain, transport, retry and stats options of
// Registry) and its failures are worded the same way: the credentials to
// provide, a reference the registry does not hold. WithCache has no
// effect: the answer is the registry's, now.
func Head(ctx context.Context, ref string, opts ...Option) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("%q is not a valid REGISTRY/REPO[:TAG][@sha256:DIGEST] reference: %w", ref, err)
	}
	o, err := makeOptions(opts)
	if err != nil {
		return v1.Hash{}, err
	}
	p, err := newPuller(o, r.Context())
	if err != nil {
		return v1.Hash{}, err
	}
	desc, err := p.Head(ctx, r)
	if err != nil {
		return v1.Hash{}, explain(err, r, "manifest", r.Identifier(), true, "check the reference's repository and its tag or digest", o.retries)
	}
	if d, pinned := r.(name.Digest); pinned && desc.Digest.String() != d.DigestStr() {
		return v1.Hash{}, fmt.Errorf("registry answered digest %s", desc.Digest)
	}
	return desc.Digest, nil
}

// Config reads the config file of the image ref pins by digest
// (REGISTRY/REPO[:TAG]@sha256:DIGEST; a missing registry means Docker Hub)
// and reads no layer. It is read as Registry reads an image, through the
// same client and checks: the manifest is verified against the digest, the
// config against the manifest, and an index yields its linux/amd64 image's
// config. WithCache keeps what was read.
func Config(ctx context.Context, ref string, opts ...Option) (*v1.ConfigFile, error) {
	if !strings.Contains(ref, "@") {
		return nil, fmt.Errorf("%q has no digest: tags can move, so the image must be pinned as REGISTRY/REPO[:TAG]@sha256:DIGEST", ref)
	}
	d, err := name.NewDigest(ref)
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid REGISTRY/REPO[:TAG]@sha256:DIGEST reference: %w", ref, err)
	}
	root, err := parseDigest(d.DigestStr())
	if err != nil {
		return nil, fmt.Errorf("%q: %w", ref, err)
	}
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	st := newStore(newRemoteFetcher(d, o, "check the reference's digest"), o.cacheDir)
	img, _, err := resolve(ctx, st, root)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ref, err)
	}
	return img.ConfigFile()
}
