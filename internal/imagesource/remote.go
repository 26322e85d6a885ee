package imagesource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/google"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// fetcher gets raw content by digest from where the image lives. It need
// not verify anything: store verifies whatever a fetcher returns.
type fetcher interface {
	// manifest returns the bytes of the manifest or index with digest h.
	manifest(ctx context.Context, h v1.Hash) ([]byte, error)
	// blob opens the blob with digest h.
	blob(ctx context.Context, h v1.Hash) (io.ReadCloser, error)
	// where names the origin in messages.
	where() string
}

// retryStatusCodes are the responses worth asking again: the registry or
// something in front of it is overloaded or briefly unavailable.
var retryStatusCodes = []int{
	http.StatusRequestTimeout,
	http.StatusTooManyRequests,
	http.StatusInternalServerError,
	http.StatusBadGateway,
	http.StatusServiceUnavailable,
	http.StatusGatewayTimeout,
}

// remoteFetcher reads from a registry through go-containerregistry's remote
// package, which also checks manifest digests and blob digests at end of
// stream; store checks again on its own.
type remoteFetcher struct {
	ref      name.Digest
	opts     *options
	notFound string // how to fix a reference whose manifest does not exist

	// The puller is built on first use so that a fully cached run never
	// resolves credentials, pings the registry or exchanges tokens.
	mu     sync.Mutex
	puller *remote.Puller
}

func newRemoteFetcher(ref name.Digest, o *options, notFound string) *remoteFetcher {
	return &remoteFetcher{ref: ref, opts: o, notFound: notFound}
}

func (f *remoteFetcher) getPuller() (*remote.Puller, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.puller != nil {
		return f.puller, nil
	}
	p, err := newPuller(f.opts, f.ref.Context())
	if err != nil {
		return nil, err
	}
	f.puller = p
	return p, nil
}

// newPuller is the one registry client: every registry read, the image
// sources' and Head's and Config's, goes through a puller built here from
// the same options.
func newPuller(o *options, repo name.Repository) (*remote.Puller, error) {
	rt := o.transport
	if rt == nil {
		rt = remote.DefaultTransport
	}
	if o.stats != nil {
		// Below go-containerregistry's retry wrapper, so every attempt is
		// counted.
		rt = &countingTransport{inner: rt, stats: o.stats}
	}
	kc := o.keychain
	if kc == nil {
		kc = authn.NewMultiKeychain(authn.DefaultKeychain, google.Keychain)
	}
	p, err := remote.NewPuller(
		remote.WithTransport(rt),
		remote.WithAuthFromKeychain(kc),
		remote.WithUserAgent("tcpxogen"),
		remote.WithRetryBackoff(remote.Backoff{Duration: o.retryDelay, Factor: 2, Jitter: 0.1, Steps: o.retries + 1}),
		remote.WithRetryStatusCodes(retryStatusCodes...),
	)
	if err != nil {
		return nil, fmt.Errorf("configure registry client for %s: %w", repo, err)
	}
	return p, nil
}

func (f *remoteFetcher) where() string { return f.ref.Context().String() }

func (f *remoteFetcher) manifest(ctx context.Context, h v1.Hash) ([]byte, error) {
	p, err := f.getPuller()
	if err != nil {
		return nil, err
	}
	desc, err := p.Get(ctx, f.ref.Context().Digest(h.String()))
	if err != nil {
		return nil, f.explain(err, "manifest", h)
	}
	return desc.Manifest, nil
}

func (f *remoteFetcher) blob(ctx context.Context, h v1.Hash) (io.ReadCloser, error) {
	p, err := f.getPuller()
	if err != nil {
		return nil, err
	}
	l, err := p.Layer(ctx, f.ref.Context().Digest(h.String()))
	if err != nil {
		return nil, f.explain(err, "blob", h)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, f.explain(err, "blob", h)
	}
	return rc, nil
}

// explain turns registry failures into errors that say what to do. The
// original error stays wrapped for errors.As.
func (f *remoteFetcher) explain(err error, kind string, h v1.Hash) error {
	root := kind == "manifest" && h.String() == f.ref.DigestStr()
	return explain(err, f.ref, kind, h.String(), root, f.notFound, f.opts.retries)
}

// explain is the one wording of a registry failure reading kind id (a
// manifest or blob, by digest or tag) for ref: a reference that does not
// exist (root: id is ref's own manifest, fixed as notFound says) or an
// incomplete copy, the credentials to provide, a registry that kept
// failing, or the registry's answer. The original error stays wrapped for
// errors.As.
func explain(err error, ref name.Reference, kind, id string, root bool, notFound string, retries int) error {
	host := ref.Context().RegistryStr()
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return fmt.Errorf("fetch %s %s from %s: %w", kind, id, ref.Context(), err)
	}
	switch code := terr.StatusCode; {
	case code == http.StatusNotFound:
		if root {
			return fmt.Errorf("%s %s not found in %s (%s): %w", kind, id, ref.Context(), notFound, err)
		}
		return fmt.Errorf("%s %s referenced by %s not found in %s: the registry holds an incomplete copy of the image; re-push it or %s: %w", kind, id, ref, ref.Context(), notFound, err)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Errorf("authentication to %s failed (%d %s) reading %s: provide credentials that may read the repository: for Artifact Registry or GCR run `gcloud auth configure-docker %s` or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file; for other registries run `docker login %s`: %w",
			host, code, http.StatusText(code), ref, host, host, err)
	case isRetryStatus(code):
		return fmt.Errorf("registry %s kept failing with %d %s for %s %s after %d attempts: it is unavailable or overloaded; try again later or raise the retry count: %w",
			host, code, http.StatusText(code), kind, id, retries+1, err)
	default:
		return fmt.Errorf("fetch %s %s from %s: registry answered %d %s: %w", kind, id, ref.Context(), code, http.StatusText(code), err)
	}
}

func isRetryStatus(code int) bool {
	for _, c := range retryStatusCodes {
		if c == code {
			return true
		}
	}
	return false
}

// countingTransport feeds Stats.
type countingTransport struct {
	inner http.RoundTripper
	stats *Stats
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	atomic.AddInt64(&t.stats.Requests, 1)
	resp, err := t.inner.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, stats: t.stats}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	stats *Stats
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	atomic.AddInt64(&b.stats.Bytes, int64(n))
	return n, err
}
